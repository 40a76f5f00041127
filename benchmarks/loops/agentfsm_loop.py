"""The loop in agentfsm, idiomatically: one `Agent` per run, its async core or its sync facade.

The tools are declared once with the workload's explicit schema (so agentfsm validates the
same schema as the others, with no pydantic conversion); the model is a minimal `Model`
replaying prebuilt `ModelResponse` objects. ``ask_user=False`` keeps the offered tools to the
workload's three. ``engine="reference"`` runs the same Agent on python-statemachine's own
engine instead of the compiled tables.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Sequence
from functools import cache

from agentfsm import Agent, Message, ModelResponse, Tool, ToolCall
from agentfsm.fsm import Engine
from agentfsm.llm.base import FinishReason, RetryListener
from agentfsm.states.json import JSONObject
from benchmarks.loops.workload import (
    FINAL,
    PROMPT,
    ROUND_TEXT,
    SCHEMA,
    TOOL_BODIES,
    Listener,
    call_id,
)


def make_tools(*, fast: bool, idempotent: bool = False) -> list[Tool[..., object]]:
    """The three tools, validated by jsonschema alone, or accelerated by jsonschema-rs.

    Every row compared with another builds its tools here, so that both validate alike
    (a `Tool` made elsewhere takes jsonschema-rs whenever the fast extra is installed).
    """
    saved = os.environ.get("AGENTFSM_FAST")
    os.environ["AGENTFSM_FAST"] = "1" if fast else "0"
    try:
        tools = [
            Tool(body, name=name, parameters=SCHEMA, idempotent=idempotent)
            for name, body in TOOL_BODIES.items()
        ]
    finally:
        if saved is None:
            del os.environ["AGENTFSM_FAST"]
        else:
            os.environ["AGENTFSM_FAST"] = saved
    engine = tools[0].arguments.validator.engine
    if engine != ("jsonschema-rs" if fast else "jsonschema"):
        raise RuntimeError(f"the tools are validated by {engine} (is the fast extra installed?)")
    return tools


TOOLS = make_tools(fast=False)
"""The three tools, built once and shared by every Agent: the same validator as the others."""
FAST_TOOLS = make_tools(fast=True)
"""The same tools with the ``fast`` extra's accelerator (jsonschema-rs)."""


@cache
def script(n: int) -> tuple[ModelResponse, ...]:
    """The model's ``n`` responses for a run of ``n`` iterations."""
    rounds = tuple(
        ModelResponse(
            tool_calls=tuple(
                ToolCall(id=call_id(i, k), name=name, arguments=text)
                for k, (name, text) in enumerate(ROUND_TEXT)
            ),
            finish_reason=FinishReason.TOOL_CALLS,
            model="bench",
        )
        for i in range(n - 1)
    )
    return (*rounds, ModelResponse(content=FINAL, model="bench"))


class BenchModel:
    """A `Model` that answers with the next prebuilt response, after ``latency`` seconds."""

    __slots__ = ("_calls", "_latency", "_replies")

    def __init__(self, n: int, latency: float = 0.0) -> None:
        self._replies = script(n)
        self._calls = 0
        self._latency = latency

    @property
    def name(self) -> str:
        """The model's name."""
        return "bench"

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[JSONObject],
        *,
        on_retry: RetryListener | None = None,
    ) -> ModelResponse:
        """The next response of the script."""
        if self._latency:
            await asyncio.sleep(self._latency)
        reply = self._replies[self._calls]
        self._calls += 1
        return reply


def new_agent(
    n: int,
    listener: Listener,
    latency: float = 0.0,
    engine: Engine = "compiled",
    fast: bool = False,
) -> Agent:
    """An Agent for one run of ``n`` iterations (with the accelerator if ``fast``)."""
    return Agent(
        BenchModel(n, latency),
        FAST_TOOLS if fast else TOOLS,
        listeners=[listener],
        max_iterations=n,
        ask_user=False,
        engine=engine,
    )


def make_sync(
    listener: Listener, engine: Engine = "compiled", fast: bool = False
) -> Callable[[int], str | None]:
    """A runner through the synchronous facade (``start(text)``, ``close``)."""

    def run(n: int) -> str | None:
        agent = new_agent(n, listener, engine=engine, fast=fast)
        outcome = agent.start(PROMPT)  # (the run started with its input: one call)
        agent.close()
        return outcome.reply

    return run


def make_async(
    listener: Listener, latency: float = 0.0, engine: Engine = "compiled", fast: bool = False
) -> Callable[[int], Awaitable[str | None]]:
    """A runner through the async core (``astart(text)``)."""

    async def run(n: int) -> str | None:
        agent = new_agent(n, listener, latency, engine, fast)
        outcome = await agent.astart(PROMPT)  # (the run started with its input: one call)
        return outcome.reply

    return run
