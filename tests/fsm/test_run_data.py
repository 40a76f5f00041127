"""RunData and Emitter refuse bad values at construction, naming the field and what it may be.

A machine's data is read by its guards; a count given as a string or a policy given as a
misspelt name would make them decide wrongly, silently. Construction refuses such values and
normalises the two that have an obvious meaning (a policy's name, a list of ids).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfsm.fsm import Emitter, RunData, run_machine
from agentfsm.states import InputPolicy, RunState

# (field, bad value, the error, words the message must hold)
BAD_FIELDS: list[tuple[str, object, type[Exception], str]] = [
    ("run_id", None, TypeError, "run_id must be a string"),
    ("run_id", 7, TypeError, "run_id must be a string"),
    ("state", 3, TypeError, "state must be a string or None"),
    ("loop_state", b"thinking", TypeError, "loop_state must be a string or None"),
    ("question", ["why?"], TypeError, "question must be a string or None"),
    ("reason", 0, TypeError, "reason must be a string or None"),
    ("paused_from", 1.5, TypeError, "paused_from must be a string or None"),
    ("turn", "1", TypeError, "turn must be a whole number >= 0"),
    ("turn", True, TypeError, "turn must be a whole number >= 0"),
    ("turn", -1, ValueError, "turn must be a whole number >= 0"),
    ("iteration", 1.0, TypeError, "iteration must be a whole number >= 0"),
    ("invalid_outputs", -2, ValueError, "invalid_outputs must be a whole number >= 0"),
    ("max_iterations", 0, ValueError, "max_iterations must be a whole number >= 1"),
    ("max_iterations", "10", TypeError, "max_iterations must be a whole number >= 1"),
    ("max_turns", 0, ValueError, "max_turns must be a whole number >= 1 or None"),
    ("output_retries", -1, ValueError, "output_retries must be a whole number >= 0 or None"),
    ("input_policy", "queued", ValueError, "input_policy must be one of 'reject', 'queue'"),
    ("input_policy", 1, TypeError, "input_policy must be an InputPolicy or its name"),
    ("at_boundary", 1, TypeError, "at_boundary must be True or False"),
    ("cancel_requested", "no", TypeError, "cancel_requested must be True or False"),
    ("pending", "call-1", TypeError, "pending must be a tuple (or list) of str"),
    ("pending", ("a", 2), TypeError, "pending must be a tuple (or list) of str; it holds 2"),
    ("queued", ["hi", None], TypeError, "queued must be a tuple (or list) of str; it holds None"),
    ("queued", {"hi"}, TypeError, "queued must be a tuple (or list) of str"),
    ("deadline", "soon", TypeError, "deadline must be a time (seconds since the epoch) or None"),
    ("deadline", True, TypeError, "deadline must be a time"),
    ("deadline", float("inf"), ValueError, "deadline must be a finite time or None"),
    ("deadline", float("nan"), ValueError, "deadline must be a finite time or None"),
]


@pytest.mark.parametrize(("field", "value", "error", "words"), BAD_FIELDS)
def test_run_data_refuses_a_bad_field_naming_it(
    field: str, value: object, error: type[Exception], words: str
) -> None:
    fields: dict[str, Any] = {"run_id": "r", field: value}
    with pytest.raises(error) as raised:
        RunData(**fields)
    assert words in str(raised.value)
    if "it holds" not in words:  # and says what was given
        assert repr(value)[:20] in str(raised.value)


def test_a_policy_given_by_name_queues_as_the_policy_does() -> None:
    """A policy's name works as the policy: the guards compare the policy by identity.

    Before this check, ``input_policy="queue"`` was kept as a str, and the run refused a
    submit while busy instead of queueing it.
    """
    data = RunData("r", input_policy="queue")  # type: ignore[arg-type]
    assert data.input_policy is InputPolicy.QUEUE
    machine = run_machine(data, Emitter("r"))
    machine.send("start")
    machine.send("submit", text="first")
    assert data.state == RunState.BUSY
    machine.send("submit", text="second")  # queued, not refused
    assert data.queued == ("second",)
    assert data.state == RunState.BUSY


def test_ids_given_as_a_list_become_a_tuple() -> None:
    data = RunData("r", state="requires_action", pending=["a", "b"], queued=["x"])  # type: ignore[arg-type]
    assert data.pending == ("a", "b")
    assert data.queued == ("x",)


def test_fields_set_later_are_not_checked() -> None:
    """The check is at the door: the machines set fields on the hot path unchecked."""
    data = RunData("r")
    data.turn = -5
    assert data.turn == -5


texts = st.text(max_size=8)
valid_data = st.builds(
    RunData,
    run_id=texts,
    state=st.sampled_from(RunState) | texts,
    loop_state=st.none() | texts,
    turn=st.integers(min_value=0),
    iteration=st.integers(min_value=0),
    max_iterations=st.integers(min_value=1),
    max_turns=st.none() | st.integers(min_value=1),
    input_policy=st.sampled_from(InputPolicy),
    at_boundary=st.booleans(),
    pending=st.tuples(texts) | st.just(()),
    question=st.none() | texts,
    deadline=st.none() | st.floats(allow_nan=False, allow_infinity=False) | st.integers(),
    paused_from=st.none() | texts,
    reason=st.none() | texts,
    queued=st.tuples(texts, texts) | st.just(()),
    cancel_requested=st.booleans(),
    output_retries=st.none() | st.integers(min_value=0),
    invalid_outputs=st.integers(min_value=0),
)


@given(valid_data)
def test_every_valid_run_data_is_accepted_as_given(data: RunData) -> None:
    """The fast check and the full one agree: a valid value passes either, unchanged."""
    fields = {field.name: getattr(data, field.name) for field in dataclasses.fields(RunData)}
    again = RunData(**fields)
    assert again == data
    for name, value in fields.items():
        assert getattr(again, name) is value  # kept, not copied
    data._check()  # the full check accepts what the fast one let through
    assert dataclasses.asdict(data) == dataclasses.asdict(again)


@pytest.mark.parametrize(
    ("fields", "error", "words"),
    [
        ({"run_id": None}, TypeError, "run_id must be a str, not None"),
        ({"listeners": (print,)}, TypeError, "listeners must be a list of callables"),
        ({"listeners": [print, "log"]}, TypeError, "listeners must be a list of callables"),
        ({"clock": 5.0}, TypeError, "clock must be a callable"),
        ({"seq": -1}, ValueError, "seq must be a whole number >= 0"),
        ({"seq": "3"}, TypeError, "seq must be a whole number >= 0"),
    ],
)
def test_emitter_refuses_bad_arguments_naming_them(
    fields: dict[str, Any], error: type[Exception], words: str
) -> None:
    arguments: dict[str, Any] = {"run_id": "r", **fields}
    with pytest.raises(error, match="^" + words.replace("(", r"\(")):
        Emitter(**arguments)


def test_emitter_keeps_its_listener_list() -> None:
    """A listener appended to the list given later hears the events: the list is not copied."""
    heard: list[str] = []
    listeners: list[Any] = []
    emitter = Emitter("r", listeners)
    machine = run_machine(RunData("r"), emitter)
    listeners.append(lambda event: heard.append(event.event))
    machine.send("start")
    assert heard == ["start"]
