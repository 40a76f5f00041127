"""The loop on python-statemachine's own engine: a `StateChart` per run, one ``send`` per step.

Three states (``thinking``, ``acting``, ``answered``) and two events: ``model_replied``
(to ``acting`` when the reply has calls, else to ``answered``) and ``tools_finished``
(back to ``thinking``). Guards and actions are wired explicitly (``cond=``, ``on=``); the
tool round runs in the action of ``tools_finished``; the listener is a python-statemachine
listener told after every transition. The driver asks the model while ``thinking``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from statemachine import State, StateChart

from benchmarks.loops.hand import Message, script
from benchmarks.loops.workload import PROMPT, Listener, run_tool


class AgentLoop(StateChart):  # type: ignore[misc]  # python-statemachine is untyped
    """One run's loop; the conversation lives on the chart."""

    thinking = State(initial=True)
    acting = State()
    answered = State(final=True)

    model_replied = thinking.to(acting, cond="has_calls", on="record") | thinking.to(
        answered, on="record"
    )
    tools_finished = acting.to(thinking, on="run_round")

    def __init__(self, listener: _TransitionListener) -> None:
        self.messages: list[Message] = [{"role": "user", "content": PROMPT}]
        super().__init__(listeners=[listener])

    def has_calls(self, reply: Message) -> bool:
        """Whether the reply asks for tool calls."""
        return bool(reply["tool_calls"])

    def record(self, reply: Message) -> None:
        """Append the reply to the conversation."""
        self.messages.append(reply)

    def run_round(self) -> None:
        """Answer every call of the last reply with a tool message."""
        for call in self.messages[-1]["tool_calls"]:
            function = call["function"]
            output = run_tool(function["name"], json.loads(function["arguments"]))
            self.messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})


class _TransitionListener:
    def __init__(self, listener: Listener) -> None:
        self._listener = listener

    def after_transition(self, event: Any, source: Any, target: Any) -> None:
        self._listener((event, source.id, target.id))


def make_sync(listener: Listener) -> Callable[[int], str]:
    """A runner: one chart per run, driven until it is answered."""
    adapter = _TransitionListener(listener)

    def run(n: int) -> str:
        chart = AgentLoop(adapter)
        for reply in script(n):
            chart.send("model_replied", reply=reply)
            if chart.answered.is_active:
                return str(reply["content"])
            chart.send("tools_finished")
        raise AssertionError("the script ended without a final text")

    return run
