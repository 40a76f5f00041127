"""An event's arguments are JSON values, and a wait's deadline is a time or none.

Both refusals change nothing (I4): not the state, not the run's data, not the event count,
and no listener hears of the event. Every test runs on both engines.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfsm.errors import EventArgumentsError, GuardFailedError
from agentfsm.fsm import Emitter, Engine, RunData, run_machine
from agentfsm.fsm.compiled import arguments_problem
from agentfsm.states import Event
from agentfsm.states.json import json_problem

NAN, INF = float("nan"), float("inf")


def busy(engine: Engine) -> tuple[Any, RunData, list[Event]]:
    """A run machine in busy, its data, and the events its listener heard."""
    heard: list[Event] = []
    data = RunData("run-1")
    machine = run_machine(data, Emitter("run-1", [heard.append], clock=lambda: 1.0), engine)
    machine.send("start")
    machine.send("submit", text="hello")
    return machine, data, heard


def refused_unchanged(
    machine: Any, data: RunData, heard: list[Event], event: str, **args: Any
) -> Exception:
    """Send ``event`` expecting a refusal; assert nothing changed; return the error."""
    before, count, seq = copy.deepcopy(data), len(heard), machine.emitter.seq
    with pytest.raises((EventArgumentsError, GuardFailedError)) as caught:
        machine.send(event, **args)
    assert data == before
    assert (len(heard), machine.emitter.seq) == (count, seq)
    assert not machine.can_send(event, **args)
    return caught.value


# -- arguments that are not JSON values ----------------------------------------------------


@pytest.mark.parametrize(
    ("value", "place", "why"),
    [
        (NAN, "argument 'note'", "a JSON number is finite"),
        (INF, "argument 'note'", "a JSON number is finite"),
        ({1, 2}, "argument 'note'", "{1, 2} (set)"),
        (b"x", "argument 'note'", "b'x' (bytes)"),
        (object(), "argument 'note'", "(object)"),
        ({1: "one"}, "argument 'note' has the key 1", "keys are strings"),
        ([1, {"a": [NAN]}], "argument 'note'[1]['a'][0]", "a JSON number is finite"),
    ],
    ids=["nan", "inf", "set", "bytes", "object", "int-key", "nested-nan"],
)
def test_an_argument_that_is_no_json_value_is_refused_and_named(
    engine: Engine, value: object, place: str, why: str
) -> None:
    machine, data, heard = busy(engine)

    error = refused_unchanged(machine, data, heard, "need_action", calls=["c1"], note=value)

    assert isinstance(error, EventArgumentsError)
    assert error.problem.startswith(place)
    assert why in error.problem
    assert (error.state, error.event) == ("busy", "need_action")
    assert "allowed events in 'busy'" in str(error)
    machine.send("need_action", calls=["c1"], note=[1, {"a": "ok"}])  # the same, JSON
    assert data.state == "requires_action"
    assert heard[-1].data["note"] == [1, {"a": "ok"}]


def test_an_argument_nested_past_the_recursion_limit_is_refused(engine: Engine) -> None:
    machine, data, heard = busy(engine)
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]

    error = refused_unchanged(machine, data, heard, "fail", detail=deep)

    assert isinstance(error, EventArgumentsError)
    assert "nested too deeply" in error.problem


def test_the_refusal_comes_before_the_guards_and_the_state(engine: Engine) -> None:
    machine, data, heard = busy(engine)

    # resolve_action is not allowed in busy at all: the arguments are still the error.
    error = refused_unchanged(machine, data, heard, "resolve_action", decisions={"c1": NAN})

    assert isinstance(error, EventArgumentsError)


_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5)
)
_BAD = st.sampled_from([NAN, INF, -INF, frozenset(), b"", complex(1, 2), object()])
_KEYS = st.text(max_size=3) | st.integers(0, 3) | st.none()


def _nested(
    leaves: st.SearchStrategy[Any], keys: st.SearchStrategy[Any] = _KEYS
) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
        max_leaves=12,
    )


def _round_trips(value: object) -> bool:
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return bool(json.loads(text) == value)


@given(_nested(_LEAVES | _BAD))
def test_a_value_is_refused_exactly_when_json_would_not_give_it_back(value: object) -> None:
    # The reference: the standard library writes it without NaN, and reads back an equal
    # value (a non-string key comes back a string; a set or NaN is not written at all).
    assert (json_problem(value, "v") is None) == _round_trips(value)
    assert (arguments_problem({"v": value}) is None) == _round_trips(value)


ENGINES: st.SearchStrategy[Engine] = st.sampled_from(["compiled", "reference"])


@given(ENGINES, _nested(_LEAVES, st.text(max_size=3)))
def test_a_json_argument_is_taken_as_it_is(engine: Engine, value: object) -> None:
    machine, run, heard = busy(engine)
    assert machine.can_send("fail", detail=value)

    machine.send("fail", detail=value)  # (fail has no guard: any JSON detail is taken)

    assert run.state == "failed"
    assert heard[-1].data == {"detail": value}
    assert json.loads(heard[-1].model_dump_json())["data"] == {"detail": value}


# -- the wait's deadline ---------------------------------------------------------------------


def wait_arguments(event: str, deadline: object) -> dict[str, Any]:
    """The arguments of a ``need_action`` or ``need_input`` for one call, with ``deadline``."""
    args: dict[str, Any] = {"calls": ["c1"], "deadline": deadline}
    if event == "need_input":
        args["question"] = "Which city?"
    return args


@pytest.mark.parametrize("deadline", ["soon", True, False, [], {"at": 1.0}])
@pytest.mark.parametrize("event", ["need_action", "need_input"])
def test_a_deadline_that_is_no_time_is_refused(
    engine: Engine, event: str, deadline: object
) -> None:
    machine, data, heard = busy(engine)

    error = refused_unchanged(machine, data, heard, event, **wait_arguments(event, deadline))

    assert isinstance(error, GuardFailedError)
    guard = "has_calls" if event == "need_action" else "asks_question"
    assert error.failed_guards == (
        f"{guard}: "
        + (
            "≥ 1 tool call awaits approval or a client-side result"
            if guard == "has_calls"
            else "the agent asked the user a question"
        )
        + "; the deadline is a time or none",
    )


@given(
    ENGINES,
    st.none()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.booleans()
    | st.text(max_size=3)
    | st.lists(st.integers(), max_size=2),
    st.sampled_from(["need_action", "need_input"]),
)
def test_a_wait_is_taken_exactly_with_a_number_or_no_deadline(
    engine: Engine, deadline: object, event: str
) -> None:
    machine, data, _ = busy(engine)
    args = wait_arguments(event, deadline)
    is_time = deadline is None or (
        isinstance(deadline, int | float) and not isinstance(deadline, bool)
    )

    assert machine.can_send(event, **args) == is_time
    if is_time:
        machine.send(event, **args)
        assert data.deadline == (None if deadline is None else float(deadline))  # type: ignore[arg-type]
        assert data.pending == ("c1",)
    else:
        with pytest.raises(GuardFailedError):
            machine.send(event, **args)
        assert (data.state, data.deadline, data.pending) == ("busy", None, ())


def test_a_recorded_deadline_expires_the_wait(engine: Engine) -> None:
    machine, data, _ = busy(engine)
    machine.send("need_action", calls=["c1"], deadline=100)

    assert not machine.can_send("expire", now=99.0)
    machine.send("expire", now=100.0)

    assert data.state == "failed"
