"""What the hot path builds or calls in a faster form equals the reference form.

The emitter builds every event unchecked (each equals the validated `Event`); the compiled
machine calls each guard as its check (each decides as the declared guard does).
"""

from __future__ import annotations

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfsm._redact import redact
from agentfsm.fsm import Emitter, RunData
from agentfsm.fsm.compiled import compile_machine
from agentfsm.fsm.guards import GUARD_FUNCTIONS, check_of
from agentfsm.fsm.lifecycle import RunLifecycle
from agentfsm.fsm.turnloop import TurnLoop
from agentfsm.states import Event, MachineName
from tests.states.test_models import json_values

events = st.builds(
    Event,
    seq=st.integers(min_value=1),
    run_id=st.text(),
    machine=st.sampled_from(MachineName),
    event=st.text() | st.sampled_from(["fail", "model_failed", "submit"]),
    source=st.text(),
    target=st.text(),
    at=st.floats(allow_nan=False, allow_infinity=False),
    data=st.dictionaries(st.text(), json_values, max_size=4)
    | st.builds(lambda text: {"message": text}, st.text()),
)


def _expected(event: Event) -> Event:
    """``event`` as the emitter must record it: an error's message has its secrets masked."""
    message = event.data.get("message")
    if event.event in {"fail", "model_failed"} and isinstance(message, str):
        return Event(**{**dict(event), "data": {**event.data, "message": redact(message)}})
    return event


def _emitter(event: Event, told: list[Event]) -> Emitter:
    return Emitter(event.run_id, [told.append], clock=lambda: event.at, seq=event.seq - 1)


@given(events, st.booleans())
def test_an_emitted_event_is_the_validated_event(event: Event, deliver: bool) -> None:
    told: list[Event] = []
    emitter = _emitter(event, told)
    make = emitter.emit if deliver else emitter.number

    fast = make(event.machine, event.event, event.source, event.target, event.data)

    expected = _expected(event)
    assert fast == expected
    assert fast.model_fields_set == expected.model_fields_set
    assert fast.model_dump_json() == expected.model_dump_json()
    assert emitter.seq == event.seq
    assert told == ([fast] if deliver else [])
    with pytest.raises(pydantic.ValidationError):
        fast.seq = 2  # type: ignore[misc]  # frozen like any Event


def test_number_numbers_without_telling_and_emit_tells_in_order() -> None:
    told: list[Event] = []
    emitter = Emitter("r", [told.append], clock=lambda: 5.0)

    quiet = emitter.number(MachineName.CONVERSATION, "message", "busy", "busy", {})
    loud = emitter.emit(MachineName.RUN, "complete", "busy", "ready", {})

    assert (quiet.seq, loud.seq) == (1, 2)
    assert told == [loud]


ARGUMENT_NAMES = (
    *("text", "calls", "decisions", "question", "now"),
    *("tool_calls", "needing_action", "asking_user", "message"),
)
arguments = st.dictionaries(
    st.sampled_from(ARGUMENT_NAMES),
    st.none() | st.integers(-2, 3) | st.booleans() | st.text(max_size=3) | st.lists(st.text()),
    max_size=4,
)


@given(st.sampled_from(sorted(GUARD_FUNCTIONS)), arguments, st.integers(0, 3), st.integers(0, 3))
def test_the_compiled_check_of_every_guard_is_the_guard(
    name: str, args: dict[str, object], iteration: int, turn: int
) -> None:
    declared = GUARD_FUNCTIONS[name]
    check = check_of(declared)
    data = RunData("r", iteration=iteration, turn=turn, max_turns=2)

    assert check is not None
    assert check(data, args) == declared(data, **args)
    assert compiled_checks_agree(name, data, args)


def compiled_checks_agree(name: str, data: RunData, args: dict[str, object]) -> bool:
    """Every compiled transition guarded by ``name`` decides as the declared guard does."""
    for machine in (
        compile_machine(RunLifecycle, MachineName.RUN, "state"),
        compile_machine(TurnLoop, MachineName.LOOP, "loop_state"),
    ):
        for row_transition in (
            t for by_event in machine.dispatch.values() for ts in by_event.values() for t in ts
        ):
            for check, guard_name in zip(
                row_transition.checks, row_transition.guard_names, strict=True
            ):
                bare = guard_name.removeprefix("not ")
                if bare == name:
                    expected = GUARD_FUNCTIONS[name](data, **args)
                    if check(data, args) != (expected if bare == guard_name else not expected):
                        return False
    return True


def _counted(value: object) -> int:
    """A count as the guards read it: a positive int, else 0 (a bool is no count)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


COUNT_GUARDS = {
    "no_tool_calls": lambda c, n, a, retries: c == 0 and retries is None,
    "answer_to_validate": lambda c, n, a, retries: c == 0 and retries is not None,
    "needs_action": lambda c, n, a, retries: c > 0 and n > 0,
    "asks_user_only": lambda c, n, a, retries: c > 0 and n == 0 and a > 0,
    "may_run_now": lambda c, n, a, retries: c > 0 and n == 0 and a == 0,
}
"""The guards of ``replied``, each stated on the counts (which their checks read inline)."""


@given(st.sampled_from(sorted(COUNT_GUARDS)), arguments, st.sampled_from([None, 0, 2]))
def test_the_count_guards_read_their_counts_as_stated(
    name: str, args: dict[str, object], retries: int | None
) -> None:
    data = RunData("r", output_retries=retries)
    counts = (_counted(args.get(key, 0)) for key in ARGUMENT_NAMES[-4:-1])
    check = check_of(GUARD_FUNCTIONS[name])

    assert check is not None
    assert check(data, args) == COUNT_GUARDS[name](*counts, retries)
