"""A deterministic agent for the durability tests, shared with the crash child process.

Its model answers from the conversation alone (not from a position in a script), so a run
resumed in a fresh process gets the same answers an uninterrupted run gets. Every tool body
appends a line to a side-effect log with an unbuffered write, which survives a SIGKILL: the
tests count how often each call really ran.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from agentfsm import Agent, ScriptedModel, tool
from agentfsm.llm.base import FinishReason, ModelResponse
from agentfsm.states import Message, ToolCall
from agentfsm.states.json import JSONObject
from agentfsm.stores.base import RunStore
from agentfsm.tools.spec import Tool

ROUND = (
    ("c1", "weather", {"city": "Paris"}),
    ("c2", "book", {"city": "Rome"}),
    ("c3", "weather", {"city": "Nice"}),
)
"""The turn's one round: three calls, the second to a non-idempotent tool."""


def respond(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
    """Three tool calls after a user message; a summary of the tool messages after a round."""
    last = messages[-1]
    if last.role == "user":
        calls = tuple(
            ToolCall(id=f"{call_id}-t{sum(m.role == 'user' for m in messages)}", name=name,
                     arguments=json.dumps(arguments))
            for call_id, name, arguments in ROUND
        )  # fmt: skip
        return ModelResponse(tool_calls=calls, finish_reason=FinishReason.TOOL_CALLS)
    tool_text = [m.content for m in messages if m.role == "tool"][-len(ROUND) :]
    return ModelResponse(content="Done: " + "; ".join(str(t) for t in tool_text))


def model() -> ScriptedModel:
    """The model every process of a test uses."""
    return ScriptedModel(fallback=respond)


def side_effects(
    path: Path | None, on_run: Callable[[str], None] | None = None
) -> tuple[Tool[..., str], Tool[..., str]]:
    """Weather (idempotent) and book (not), logging each body run to ``path``.

    ``on_run(line)`` is called in the body after its side effect (the crash tests die there).
    """

    def note(line: str) -> None:
        if path is not None:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, (line + "\n").encode())
            finally:
                os.close(fd)
        if on_run is not None:
            on_run(line)

    @tool(idempotent=True)
    def weather(city: str) -> str:
        """The weather in a city."""
        note(f"weather:{city}")
        return f"sunny in {city}"

    @tool
    def book(city: str) -> str:
        """Book a hotel (not idempotent: booking twice books two rooms)."""
        note(f"book:{city}")
        return f"booked {city}"

    return weather, book


def agent(
    store: RunStore,
    run_id: str,
    log: Path | None = None,
    on_run: Callable[[str], None] | None = None,
    **options: object,
) -> Agent:
    """The test agent, on ``store``, restored if the store holds ``run_id``."""
    weather, book = side_effects(log, on_run)
    return Agent(model(), [weather, book], store=store, run_id=run_id, **options)  # type: ignore[arg-type]
