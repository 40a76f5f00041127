"""A real uvicorn server on 127.0.0.1 (ephemeral port) serving agentfsm agents over A2A."""

from __future__ import annotations

import asyncio
import base64
import socket
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import uvicorn
from a2a.client import Client, ClientConfig, create_client
from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.types import Message, Part, Role, SendMessageRequest, StreamResponse

from agentfsm import Agent, ScriptedModel, SQLiteStore, tool
from agentfsm.serve.a2a import a2a_app
from agentfsm.stores.base import RunStore
from agentfsm.tools.content import ContentPart, ToolContent

T = TypeVar("T")

SCRIPTS: dict[str, ScriptedModel] = {}
"""Each run's scripted model, by run id (a run's Agent is rebuilt after a restart)."""
BLOCK = threading.Event()
"""Cleared by a test that wants the ``slow`` tool to wait until it is set."""
BLOCK.set()


@tool
def weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


@tool(policy="require_approval")
def transfer(amount: int) -> str:
    """Move money between accounts."""
    return f"moved {amount}"


@tool
async def slow() -> str:
    """Takes its time."""
    while not BLOCK.is_set():
        await asyncio.sleep(0.01)
    return "done"


PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cf000000030101005f1a8c5d0000000049454e44ae426082"
    )
).decode()
"""A 1x1 PNG, base64."""


@tool
def chart(city: str) -> ToolContent:
    """Draw the weather of a city (the drawing is for the user, the summary for the model)."""
    return ToolContent(
        f"drew {city}",
        for_user=(
            ContentPart.of_text(f"Weather in {city}"),
            ContentPart.media("image", "image/png", PNG),
        ),
    )


def script_for(run_id: str) -> ScriptedModel:
    return SCRIPTS.setdefault(run_id, ScriptedModel())


def broken_hook(context: object) -> None:
    raise RuntimeError("the hook broke")


def factory(run_id: str, store: RunStore) -> Agent:
    """The served agent: its model is the run's script (a run ``hooked-…`` has a bad hook)."""
    hooks = {"before_llm": broken_hook} if run_id.startswith("hooked-") else None
    return Agent(
        script_for(run_id),
        [weather, transfer, slow, chart],
        run_id=run_id,
        store=store,
        hooks=hooks,
        ask_user=True,
    )


class Served:
    """One uvicorn server (in a thread) over one SQLite store file."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.store = SQLiteStore(path)
        config = uvicorn.Config(
            a2a_app(factory, self.store, self.url), log_level="warning", lifespan="on"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]})

    def __enter__(self) -> Served:
        self.thread.start()
        while not self.server.started:
            self.thread.join(0.01)
            assert self.thread.is_alive(), "the server did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()
        self.store.close()


@contextmanager
def serving(path: Path) -> Iterator[Served]:
    with Served(path) as served:
        yield served


OPEN: list[Client] = []
"""The clients opened by the coroutine `run` runs; it closes them."""


async def client(url: str, *, streaming: bool = False, rest: bool = False) -> Client:
    """The SDK's client for the agent at ``url`` (JSON-RPC, or REST); `run` closes it."""
    config = ClientConfig(
        streaming=streaming,
        supported_protocol_bindings=["HTTP+JSON"] if rest else ["JSONRPC"],
    )
    a2a = await create_client(url, client_config=config)
    OPEN.append(a2a)
    return a2a


def run(talk: Coroutine[object, object, T]) -> T:
    """``asyncio.run(talk)``, closing the clients it opened (and their HTTP connections)."""

    async def main() -> T:
        try:
            return await talk
        finally:
            while OPEN:
                await OPEN.pop().close()

    return asyncio.run(main())


def text_message(
    text: str, *, context_id: str = "", task_id: str = "", data: object = None
) -> SendMessageRequest:
    parts: list[Part] = [new_text_part(text)] if text else []
    if data is not None:
        parts.append(new_data_part(data))
    message = Message(
        message_id=f"m-{text}-{id(parts)}",
        role=Role.ROLE_USER,
        parts=parts,
        context_id=context_id,
        task_id=task_id,
    )
    return SendMessageRequest(message=message)


async def collect(client: Client, request: SendMessageRequest) -> list[StreamResponse]:
    return [response async for response in client.send_message(request)]
