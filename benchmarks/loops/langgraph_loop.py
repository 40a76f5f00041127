"""The loop in LangGraph, idiomatically: a `StateGraph` over `MessagesState`, compiled once.

Two nodes, ``model`` and ``tools``, and the usual conditional edge (to ``tools`` while the last
AI message has tool calls, else to the end). The model node replays prebuilt `AIMessage`
objects; the tools node validates each call's arguments with the shared validator, calls the
body and answers with a `ToolMessage`. The listener is told of every update the graph
streams (``stream_mode="updates"``). With a checkpointer (`InMemorySaver`), each run is its
own thread.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from functools import cache
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from benchmarks.loops.workload import FINAL, PROMPT, ROUND, Listener, call_id, run_tool


@cache
def script(n: int) -> tuple[AIMessage, ...]:
    """The model's ``n`` replies for a run of ``n`` iterations."""
    rounds = tuple(
        AIMessage(
            content="",
            id=f"ai_{n}_{i}",
            tool_calls=[
                {"name": name, "args": arguments, "id": call_id(i, k), "type": "tool_call"}
                for k, (name, arguments) in enumerate(ROUND)
            ],
        )
        for i in range(n - 1)
    )
    return (*rounds, AIMessage(content=FINAL, id=f"ai_{n}_final"))


class _Run(MessagesState):
    iterations: int


def _model(state: _Run) -> dict[str, Any]:
    replies = script(state["iterations"])
    answered = sum(1 for message in state["messages"] if isinstance(message, AIMessage))
    return {"messages": [replies[answered]]}


def _tools(state: _Run) -> dict[str, Any]:
    last = state["messages"][-1]
    assert isinstance(last, AIMessage)
    return {
        "messages": [
            ToolMessage(run_tool(call["name"], call["args"]), tool_call_id=call["id"])
            for call in last.tool_calls
        ]
    }


def _route(state: _Run) -> str:
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else END


def build(checkpointer: Any = None) -> Any:
    """The compiled graph (built once, invoked per run)."""
    graph = StateGraph(_Run)
    graph.add_node("model", _model)
    graph.add_node("tools", _tools)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", _route, ["tools", END])
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=checkpointer)


def make_sync(
    listener: Listener,
    *,
    checkpointer: bool = False,
    saver: Any = None,
    durability: str | None = None,
    prefix: str = "run",
) -> Callable[[int], str]:
    """A runner: one ``stream`` of the graph; with a checkpointer, on a thread of its own.

    ``saver`` is the checkpointer to use (an `InMemorySaver` if ``checkpointer`` and none is
    given); ``durability`` LangGraph's (``"sync"``: each checkpoint written before the next
    step; its default ``"async"`` writes it while the next step runs).
    """
    if saver is None and checkpointer:
        saver = InMemorySaver()
    graph = build(saver)
    threads = itertools.count()
    options = {} if durability is None else {"durability": durability}

    def run(n: int) -> str:
        config: dict[str, Any] = {"recursion_limit": 2 * n + 5}
        if saver is not None:
            config["configurable"] = {"thread_id": f"{prefix}-{next(threads)}"}
        start = {"messages": [HumanMessage(PROMPT)], "iterations": n}
        for update in graph.stream(start, config, stream_mode="updates", **options):
            listener(update)
            last = update.get("model")
        assert last is not None
        return str(last["messages"][-1].content)

    return run


def make_async(listener: Listener, latency: float = 0.0) -> Callable[[int], Awaitable[str]]:
    """A runner: the same graph, streamed with ``astream``; no checkpointer.

    Its ``model`` node is a coroutine awaiting ``latency`` seconds per call.
    """

    async def model(state: _Run) -> dict[str, Any]:
        if latency:
            await asyncio.sleep(latency)
        return _model(state)

    graph = StateGraph(_Run)
    graph.add_node("model", model)
    graph.add_node("tools", _tools)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", _route, ["tools", END])
    graph.add_edge("tools", "model")
    compiled = graph.compile()

    async def run(n: int) -> str:
        config: dict[str, Any] = {"recursion_limit": 2 * n + 5}
        start = {"messages": [HumanMessage(PROMPT)], "iterations": n}
        last = None
        async for update in compiled.astream(start, config, stream_mode="updates"):
            listener(update)
            last = update.get("model", last)
        assert last is not None
        return str(last["messages"][-1].content)

    return run
