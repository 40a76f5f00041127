"""The effect postconditions (states/effects.py) say what the machines' effect functions do.

For every edge of both machines, on any data its guard accepts (not only the verifier's
small domains: long queues, a submit from the queue, any turn and deadline), running the
edge's effects and enter actions leaves exactly the fields the table names at the values
it gives, and every other field as it was.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agentfsm.fsm import LOOP_MACHINE, RUN_MACHINE, CompiledTransition, RunData
from agentfsm.states import PAUSABLE, TABLES, InputPolicy, LoopState, MachineName, RunState
from agentfsm.verify.steps import effect_mismatch, expected

EDGES = [
    (compiled, t)
    for compiled in (RUN_MACHINE, LOOP_MACHINE)
    for by_event in compiled.dispatch.values()
    for transitions in by_event.values()
    for t in transitions
]
IDS = ["a", "b", "c"]
texts = st.sampled_from(["", "  ", "hello", "Paris"])
maybe_float = st.none() | st.floats(min_value=0, max_value=200, allow_nan=False)


@st.composite
def situations(draw: st.DrawFn, source: str, state_field: str) -> tuple[RunData, dict[str, Any]]:
    data = RunData(
        "r",
        turn=draw(st.integers(0, 4)),
        iteration=draw(st.integers(0, 4)),
        max_iterations=draw(st.integers(1, 4)),
        max_turns=draw(st.none() | st.integers(1, 4)),
        input_policy=draw(st.sampled_from(list(InputPolicy))),
        at_boundary=draw(st.booleans()),
        pending=tuple(draw(st.lists(st.sampled_from(IDS), unique=True, max_size=3))),
        question=draw(st.none() | texts),
        deadline=draw(maybe_float),
        paused_from=draw(st.none() | st.sampled_from([str(s) for s in PAUSABLE])),
        reason=draw(st.none() | st.sampled_from(["answered", "error"])),
        queued=tuple(draw(st.lists(texts, max_size=3))),
        cancel_requested=draw(st.booleans()),
        state=draw(st.sampled_from([str(s) for s in RunState])),
        loop_state=draw(st.none() | st.sampled_from([str(s) for s in LoopState])),
    )
    setattr(data, state_field, source)
    decided = st.just(dict.fromkeys(data.pending, "approve"))
    args = {
        "text": draw(texts),
        "calls": draw(st.lists(st.sampled_from(IDS), unique=True, max_size=3)),
        "deadline": draw(maybe_float),
        "question": draw(texts),
        "now": draw(st.floats(min_value=0, max_value=200, allow_nan=False)),
        "decisions": draw(decided | st.dictionaries(st.sampled_from(IDS), st.just("deny"))),
        "from_queue": draw(st.booleans()),
        "tool_calls": draw(st.integers(0, 2)),
        "needing_action": draw(st.integers(0, 1)),
        "asking_user": draw(st.integers(0, 1)),
    }
    return data, args


def _apply(t: CompiledTransition, data: RunData, state_field: str, args: dict[str, Any]) -> None:
    for effect in t.effects:
        effect(data, t.source, **args)
    setattr(data, state_field, t.target)
    for enter in t.enters:
        enter(data, **args)


@settings(
    max_examples=300,  # over 48 edges whose guards are simple
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)
@given(data=st.data())
def test_each_edge_does_what_the_effect_table_says(data: st.DataObject) -> None:
    compiled, transition = data.draw(st.sampled_from(EDGES), label="edge")
    field = compiled.state_field
    before, args = data.draw(situations(transition.source, field))
    assume(all(guard(before, **args) for guard in transition.guards))
    after = RunData("r")
    for name in RunData.__dataclass_fields__:
        setattr(after, name, getattr(before, name))

    _apply(transition, after, field, args)

    table = TABLES[compiled.name]
    wanted = expected(
        table.effects, transition.event, transition.source, transition.target, before, args
    )
    fields = [f for f in RunData.__dataclass_fields__ if f != field]
    assert effect_mismatch(fields, before, after, wanted) is None


def test_the_property_can_fail_on_an_effect_the_table_does_not_allow() -> None:
    before = RunData("r", state="requires_action", pending=("a",), deadline=1.0)
    after = RunData("r", state="failed", reason="cancelled")

    wanted = expected(
        TABLES[MachineName.RUN].effects, "expire", "requires_action", "failed", before, {}
    )

    assert wanted["reason"] == "expired"
    assert effect_mismatch(["reason", "pending"], before, after, wanted) == (
        "reason='cancelled' (the effect table says 'expired')"
    )
