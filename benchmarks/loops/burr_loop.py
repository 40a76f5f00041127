"""The loop in Apache Burr, idiomatically: two actions, one `Application` built per run.

``model`` appends the scripted reply to the state's messages; ``tools`` parses and validates
each call's arguments with the shared validator, calls the body and appends the tool
messages. Transitions: ``model → tools`` while the last reply has calls, ``model → answer``
otherwise, ``tools → model``; the run halts after ``answer``. The listener is a
`PostRunStepHook`, told of every step. Tracking is off (Burr's default).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from burr.core import Application, ApplicationBuilder, State, action, default, expr
from burr.lifecycle import PostRunStepHook

from benchmarks.loops.hand import script
from benchmarks.loops.workload import PROMPT, Listener, run_tool


@action(reads=["messages", "iterations", "calls"], writes=["messages", "calls", "pending"])
def model(state: State) -> State:
    """Append the model's next reply."""
    reply = script(state["iterations"])[state["calls"]]
    return state.append(messages=reply).update(
        calls=state["calls"] + 1, pending=bool(reply["tool_calls"])
    )


@action(reads=["messages"], writes=["messages"])
def tools(state: State) -> State:
    """Append a tool message answering each call of the last reply."""
    answers = []
    for call in state["messages"][-1]["tool_calls"]:
        function = call["function"]
        output = run_tool(function["name"], json.loads(function["arguments"]))
        answers.append({"role": "tool", "tool_call_id": call["id"], "content": output})
    return state.extend(messages=answers)


@action(reads=["messages"], writes=["answer"])
def answer(state: State) -> State:
    """Take the final reply's text as the answer."""
    return state.update(answer=state["messages"][-1]["content"])


class ListenerHook(PostRunStepHook):
    """Tells the listener of every step the application ran."""

    def __init__(self, listener: Listener) -> None:
        self._listener = listener

    def post_run_step(self, *, action: Any, result: Any, **future_kwargs: Any) -> None:
        """Be told of one step."""
        self._listener((action.name, result))


def build(n: int, hook: ListenerHook) -> Application[Any]:
    """The application of one run of ``n`` iterations."""
    return (
        ApplicationBuilder()
        .with_actions(model=model, tools=tools, answer=answer)
        .with_transitions(
            ("model", "tools", expr("pending")),
            ("model", "answer", default),
            ("tools", "model", default),
        )
        .with_state(messages=[{"role": "user", "content": PROMPT}], iterations=n, calls=0)
        .with_entrypoint("model")
        .with_hooks(hook)
        .build()
    )


def make_sync(listener: Listener) -> Callable[[int], str]:
    """A runner: build the run's application and ``run`` it until ``answer``."""
    hook = ListenerHook(listener)

    def run(n: int) -> str:
        _, _, state = build(n, hook).run(halt_after=["answer"])
        return str(state["answer"])

    return run


def _async_model(latency: float) -> Any:
    """The ``model`` action as a coroutine, awaiting ``latency`` seconds per call."""

    @action(reads=["messages", "iterations", "calls"], writes=["messages", "calls", "pending"])
    async def model(state: State) -> State:
        """Await the model, then append its next reply."""
        if latency:
            await asyncio.sleep(latency)
        reply = script(state["iterations"])[state["calls"]]
        return state.append(messages=reply).update(
            calls=state["calls"] + 1, pending=bool(reply["tool_calls"])
        )

    return model


def make_async(listener: Listener, latency: float = 0.0) -> Callable[[int], Awaitable[str]]:
    """A runner: the same application with an async ``model`` action, run with ``arun``."""
    hook = ListenerHook(listener)
    model_action = _async_model(latency)

    async def run(n: int) -> str:
        app = (
            ApplicationBuilder()
            .with_actions(model=model_action, tools=tools, answer=answer)
            .with_transitions(
                ("model", "tools", expr("pending")),
                ("model", "answer", default),
                ("tools", "model", default),
            )
            .with_state(messages=[{"role": "user", "content": PROMPT}], iterations=n, calls=0)
            .with_entrypoint("model")
            .with_hooks(hook)
            .build()
        )
        _, _, state = await app.arun(halt_after=["answer"])
        return str(state["answer"])

    return run
