"""MCP tools over real transports: a stdio subprocess and Streamable HTTP on 127.0.0.1.

Also the failures a transport brings: a server that dies in the middle of a call, and one
that does not answer before the deadline. Each ends the call with an error result; the round
returns, nothing hangs.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from agentfsm import Agent, ScriptedModel
from agentfsm.errors import MCPConnectionError
from agentfsm.states.messages import ToolCall
from agentfsm.stores import SQLiteStore, replay
from agentfsm.tools import ToolContext, ToolStatus, ToolSystem
from agentfsm.tools.mcp import MCPServer, load_tools_sync
from agentfsm.verify import check_log
from tests.mcp.servers import toolbox

SERVER_SCRIPT = str(Path(__file__).with_name("servers.py"))
STDIO = [sys.executable, SERVER_SCRIPT]
CONTEXT = ToolContext(run_id="run-1", turn=1, iteration=1)


def call(call_id: str, name: str, **arguments: object) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=json.dumps(arguments))


class NoSleep:
    """The waits between an idempotent call's tries, recorded instead of slept."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@contextlib.contextmanager
def serving(served: Any = None) -> Iterator[str]:
    """The toolbox (or ``served``) over Streamable HTTP by uvicorn on 127.0.0.1, any port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = (toolbox() if served is None else served).streamable_http_app()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():  # pragma: no cover - only when the server fails to start
                raise RuntimeError("the MCP HTTP server did not start")
            threading.Event().wait(0.01)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture
def http_url() -> Iterator[str]:
    """`serving`, for one test."""
    with serving() as url:
        yield url


def test_a_stdio_server_lists_and_answers_from_its_own_process() -> None:
    server = MCPServer("tb", STDIO, trusted=True, timeout=20)
    system = ToolSystem(load_tools_sync(server))

    added, pid = system.run_round_sync(
        [call("c1", "tb__add", a=2, b=3), call("c2", "tb__pid")], CONTEXT
    ).results

    assert (added.status, added.output) == (ToolStatus.SUCCESS, {"result": 5})
    assert pid.status is ToolStatus.SUCCESS
    assert pid.output["result"] != os.getpid()  # it ran in the subprocess


def test_a_streamable_http_server_lists_and_answers(http_url: str) -> None:
    server = MCPServer("web", http_url, trusted=True, timeout=20)
    tools = load_tools_sync(server)
    system = ToolSystem(tools)

    added, failed = system.run_round_sync(
        [call("c1", "web__add", a=40, b=2), call("c2", "web__fail")], CONTEXT
    ).results

    assert "web__fetch" in {t.name for t in tools}
    assert (added.status, added.output) == (ToolStatus.SUCCESS, {"result": 42})
    assert (failed.status, failed.error.type) == (ToolStatus.ERROR, "MCPToolError")


def test_a_server_that_dies_mid_call_is_an_error_result_retried_only_if_idempotent() -> None:
    sleep = NoSleep()
    server = MCPServer("tb", STDIO, trusted=True, timeout=20, policies={"write": "allow"})
    system = ToolSystem(load_tools_sync(server), sleep=sleep, max_attempts=2)

    (died,) = system.run_round_sync([call("c1", "tb__die")], CONTEXT).results

    assert (died.status, died.error.type) == (ToolStatus.ERROR, "MCPConnectionError")
    assert "went away" in died.error.message
    # read-only, so idempotent: tried again once, after one (recorded, not slept) wait
    assert (died.attempts, len(sleep.waits)) == (2, 1)


def test_a_server_that_does_not_answer_in_time_is_a_timeout_result() -> None:
    server = MCPServer("tb", STDIO, trusted=True, timeout=3)
    system = ToolSystem(load_tools_sync(MCPServer("tb", STDIO, trusted=True, timeout=20)))
    slow = ToolSystem(load_tools_sync(server))

    (result,) = slow.run_round_sync([call("c1", "tb__sleep", seconds=60)], CONTEXT).results
    (after,) = system.run_round_sync([call("c2", "tb__add", a=1, b=1)], CONTEXT).results

    assert (result.status, result.error.type) == (ToolStatus.TIMEOUT, "ToolTimeoutError")
    assert result.duration < 30
    assert after.status is ToolStatus.SUCCESS


def test_with_the_http_server_gone_replay_and_a_restored_run_need_it_for_nothing(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    model = (
        ScriptedModel().tool_call("web__add", a=1, b=2).tool_call("web__write", path="p", text="t")
    )
    with serving() as url:
        server = MCPServer("web", url, trusted=True, timeout=20)
        agent = Agent(model, store=store, mcp_servers=[server], run_id="r")
        agent.start()
        waiting = agent.submit("add, then write")
        agent.close()
    # the server is gone (its port closed): replay and a restored run use the record
    events = list(store.events("r"))
    stored = store.load("r")
    restored = Agent(
        ScriptedModel().text("never"),
        store=store,
        mcp_servers=[MCPServer("web", url, trusted=True, timeout=2)],
        run_id="r",
    )
    restored.start()

    assert waiting.state == "requires_action"
    assert replay(events, stored) == replay(events)
    assert check_log(events).ok
    assert stored is not None
    assert [t["name"] for t in stored.tool_lists["web"]][:2] == ["add", "write"]
    assert [c.name for c in restored.pending] == ["web__write"]
    assert "web__add" in restored.tools.registry.names
    restored.cancel()
    with pytest.raises(MCPConnectionError):  # the next turn would have to list it again
        restored.submit("again")
    assert restored.turn == 1
    restored.close()
