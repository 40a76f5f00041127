"""Snapshot: every RunData field, a lossless JSON round trip, a checked schema version."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import ValidationError

from agentfsm.fsm.data import RunData
from agentfsm.fsm.trace import LLMCallTrace, UserInputTrace
from agentfsm.states import InputPolicy, Message, ToolCall
from agentfsm.stores import SNAPSHOT_SCHEMA_VERSION, Snapshot

DATA = RunData(
    run_id="r1",
    state="requires_action",
    loop_state="acting",
    turn=3,
    iteration=2,
    max_iterations=7,
    max_turns=5,
    input_policy=InputPolicy.QUEUE,
    at_boundary=False,
    pending=("c1", "c2"),
    question="which city?",
    deadline=1_700_000_123.25,
    paused_from="busy",
    reason="answered",
    queued=("later",),
    cancel_requested=True,
)
MESSAGES = (
    Message.system("be brief"),
    Message.user("weather?"),
    Message.assistant(tool_calls=(ToolCall(id="c1", name="forecast", arguments="{}"),)),
)
TRACE = (
    UserInputTrace(turn=3, text="weather?", at=1.5),
    LLMCallTrace(
        model="m",
        turn=3,
        iteration=1,
        duration=0.25,
        tool_call_count=1,
        finish_reason="tool_calls",
        at=2.0,
    ),
)


def test_a_snapshot_has_every_run_data_field() -> None:
    fields = {field.name for field in dataclasses.fields(RunData)}
    assert fields <= set(Snapshot.model_fields)


def test_from_data_then_to_data_gives_equal_data() -> None:
    snapshot = Snapshot.from_data(DATA, MESSAGES, TRACE, seq=12, version=4)
    assert snapshot.to_data() == DATA
    assert snapshot.to_data() is not DATA
    assert (snapshot.seq, snapshot.version, snapshot.schema_version) == (12, 4, 1)
    assert SNAPSHOT_SCHEMA_VERSION == 1


def test_the_json_round_trip_is_lossless() -> None:
    snapshot = Snapshot.from_data(DATA, MESSAGES, TRACE, seq=12, version=4)
    again = Snapshot.model_validate_json(snapshot.model_dump_json())
    assert again == snapshot
    assert type(again.trace[1]) is LLMCallTrace


def test_a_snapshot_is_frozen_and_refuses_unknown_fields() -> None:
    snapshot = Snapshot.from_data(DATA, (), (), seq=0, version=1)
    with pytest.raises(ValidationError):
        snapshot.turn = 9  # type: ignore[misc]
    with pytest.raises(ValidationError, match="extra"):
        Snapshot.model_validate({**snapshot.model_dump(), "colour": "blue"})


def test_an_unknown_schema_version_does_not_validate() -> None:
    fields = Snapshot.from_data(DATA, (), (), seq=0, version=1).model_dump()
    with pytest.raises(ValidationError, match="schema version 2"):
        Snapshot.model_validate({**fields, "schema_version": 2})


def test_an_infinite_deadline_is_refused_as_it_would_not_round_trip() -> None:
    with pytest.raises(ValueError, match="deadline must be a finite time"):
        dataclasses.replace(DATA, deadline=float("inf"))  # refused by RunData at the door
    data = dataclasses.replace(DATA)
    data.deadline = float("inf")  # set later, as a machine's effect would: not checked there
    with pytest.raises(ValidationError):
        Snapshot.from_data(data, (), (), 0, 1)


@pytest.mark.parametrize("field", ["max_iterations", "max_turns"])
def test_a_cap_below_one_is_no_snapshot(field: str) -> None:
    """No run has such a cap (RunData and the Agent refuse it): a stored one is corrupt."""
    fields = Snapshot.from_data(DATA, (), (), 0, 1).model_dump()
    with pytest.raises(ValidationError, match=field):
        Snapshot.model_validate({**fields, field: 0})


def test_a_trusted_snapshot_is_the_validated_one_unchecked() -> None:
    args = (DATA, MESSAGES, TRACE)
    checked = Snapshot.from_data(*args, seq=12, version=4, decisions={}, inputs={})
    trusted = Snapshot.from_data(*args, seq=12, version=4, decisions={}, inputs={}, trusted=True)
    assert trusted == checked
    assert trusted.model_dump_json() == checked.model_dump_json()
    assert trusted.model_fields_set == checked.model_fields_set
    assert list(vars(trusted)) == list(Snapshot.model_fields)
    assert Snapshot.model_validate_json(trusted.model_dump_json()) == checked


def test_trusted_snapshots_share_their_fields_set_but_a_copy_does_not_change_it() -> None:
    args = (DATA, MESSAGES, TRACE)
    one = Snapshot.from_data(*args, seq=12, version=4, trusted=True)
    two = Snapshot.from_data(*args, seq=13, version=5, trusted=True)
    given = set(one.model_fields_set)
    assert "schema_version" not in given

    copied = one.model_copy(update={"seq": 14, "schema_version": 1})
    checked = Snapshot.model_validate(copied.model_dump())

    assert copied.model_fields_set == given | {"schema_version"}
    assert one.model_fields_set == two.model_fields_set == given
    assert checked == copied


def test_a_model_call_entry_keeps_its_response_id_and_an_older_one_without_loads() -> None:
    called = TRACE[1].model_copy(update={"response_id": "chatcmpl-1"})
    snapshot = Snapshot.from_data(DATA, MESSAGES, (TRACE[0], called), seq=12, version=4)
    again = Snapshot.model_validate_json(snapshot.model_dump_json())
    assert again.trace[1] == called
    assert isinstance(again.trace[1], LLMCallTrace)
    assert again.trace[1].response_id == "chatcmpl-1"
    older = snapshot.model_dump(mode="json")
    del older["trace"][1]["response_id"]  # as a snapshot stored before the field was
    loaded = Snapshot.model_validate(older)
    assert loaded.trace[1] == TRACE[1]
    assert isinstance(loaded.trace[1], LLMCallTrace)
    assert loaded.trace[1].response_id is None
