"""An Agent's run is the same whether its usual tool calls take the straight path or not.

The `ToolSystem` answers the usual call (a registered, allowed tool with a plain body) in one
straight-line function, and the Agent records its text result without the generic dumps;
both are pinned here, end to end through the public API: each generated run goes twice,
once as it is and once with every call on the general path, and everything a listener, the
trace and the conversation show is compared (durations too, from a timer that counts), and
each ``tool_result`` record is pinned to pydantic's own dump of the result and the message.
"""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from agentfsm import Agent, ScriptedModel, Tool
from agentfsm.llm.base import FinishReason, ModelResponse
from agentfsm.states.events import Event
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import ToolCall
from agentfsm.states.names import RecordKind
from agentfsm.tools import HookContext, HookKind, Hooks, ToolPolicy, ToolSystem

SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"text": {"type": "string", "minLength": 1}},
    "required": ["text"],
    "additionalProperties": False,
}


def say(text: str) -> str:
    """Say it back."""
    return text


def shape(text: str) -> object:
    """Say it back as an object."""
    return {"said": text, "length": len(text)}


def fail(text: str) -> str:
    """Fail."""
    raise ValueError(f"cannot {text}")


async def later(text: str) -> str:
    """Say it back, awaited."""
    return text.upper()


class Loud(str):
    """A text that is not exactly a `str` (its result's output is JSON's copy of it)."""


def loud(text: str) -> str:
    """Say it back as a `str` subclass."""
    return Loud(text)


def tools() -> list[Tool[..., object]]:
    """Every kind of tool a run may call: the usual ones and some that are not."""
    return [
        Tool(say, parameters=SCHEMA),
        Tool(shape, parameters=SCHEMA),
        Tool(fail, parameters=SCHEMA),
        Tool(later, parameters=SCHEMA),
        Tool(loud, parameters=SCHEMA),
        Tool(say, name="generated"),  # (an arguments model: `parse` converts)
        Tool(say, name="gated", parameters=SCHEMA, policy=ToolPolicy.DENY),
        Tool(say, name="timed", parameters=SCHEMA, timeout=5.0),
    ]


NAMES = ("say", "shape", "fail", "later", "loud", "generated", "gated", "timed", "ghost")
TEXTS = st.one_of(
    st.text(min_size=1, max_size=5).map(lambda text: json.dumps({"text": text})),
    st.sampled_from(['{"text": ""}', '{"text": 1}', "{", "[]", "", '{"text": "a", "x": 1}']),
)
ROUNDS = st.lists(
    st.lists(st.tuples(st.sampled_from(NAMES), TEXTS), min_size=1, max_size=3),
    max_size=3,
)


def script(rounds: list[list[tuple[str, str]]]) -> list[ModelResponse]:
    replies = [
        ModelResponse(
            tool_calls=tuple(
                ToolCall(id=f"c{i}-{k}", name=name, arguments=text)
                for k, (name, text) in enumerate(calls)
            ),
            finish_reason=FinishReason.TOOL_CALLS,
        )
        for i, calls in enumerate(rounds)
    ]
    return [*replies, ModelResponse(content="done")]


def run(rounds: list[list[tuple[str, str]]], hooked: bool, straight: bool) -> list[object]:
    """What a listener, the trace and the conversation show of one run."""
    told: list[object] = []
    ticks = [0.0]

    def timer() -> float:
        ticks[0] += 0.5
        return ticks[0]

    hooks = Hooks()
    if hooked:

        def audit(context: HookContext) -> None:
            call = context.pending_tool
            told.append(("hook", context.kind, None if call is None else call.id))

        hooks.add(HookKind.AFTER_EACH_TOOL, audit)
    saved = ToolSystem._straight
    ToolSystem._straight = straight
    try:
        agent = Agent(
            ScriptedModel(script(rounds)),
            tools(),
            hooks=hooks,
            listeners=[told.append],
            run_id="run-straight",
            clock=lambda: 1_700_000_000.0,
            timer=timer,
            max_iterations=10,
            ask_user=False,
        )
        agent.start()
        outcome = agent.submit("go")
    finally:
        ToolSystem._straight = saved
    return [
        outcome.reply,
        [item.model_dump() if hasattr(item, "model_dump") else item for item in told],
        [entry.model_dump() for entry in agent.trace],
        [message.model_dump() for message in agent.messages],
    ]


@given(ROUNDS, st.booleans())
def test_a_run_is_the_same_on_the_straight_path_and_the_general_one(
    rounds: list[list[tuple[str, str]]], hooked: bool
) -> None:
    assert run(rounds, hooked, straight=True) == run(rounds, hooked, straight=False)


@given(ROUNDS, st.booleans())
def test_each_tool_result_record_is_the_json_of_its_result_and_its_message(
    rounds: list[list[tuple[str, str]]], hooked: bool
) -> None:
    # (the record of a text result is made from the result's fields alone: its message is
    # pinned here to be the one the conversation holds, on either path of a round)
    told: list[object] = []
    hooks = Hooks()
    if hooked:  # (a round with a per-call hook takes the general path)
        hooks.add(HookKind.AFTER_EACH_TOOL, lambda context: None)
    agent = Agent(
        ScriptedModel(script(rounds)),
        tools(),
        hooks=hooks,
        listeners=[told.append],
        max_iterations=10,
        ask_user=False,
    )
    agent.start()
    agent.submit("go")
    records = [
        item.data
        for item in told
        if isinstance(item, Event) and item.event == RecordKind.TOOL_RESULT
    ]
    results = [entry.result for entry in agent.trace if entry.kind == "tool_execution"]
    answers = [message for message in agent.messages if message.role == "tool"]

    assert records == [
        {"result": result.model_dump(mode="json"), "message": message.model_dump(mode="json")}
        for result, message in zip(results, answers, strict=True)
    ]
