"""The full states-by-events matrix of both machines, on both engines.

Every pair that has a row goes exactly where the table says and emits exactly one event;
every other pair raises `IllegalTransitionError` and changes nothing; a pair whose guards
all fail raises `GuardFailedError` and changes nothing.
"""

from __future__ import annotations

import dataclasses

import pytest

from agentfsm.errors import GuardFailedError, IllegalTransitionError
from agentfsm.fsm import Engine
from agentfsm.states import LOOP_TABLE, RUN_TABLE, Event, MachineTable, TransitionRow
from tests.fsm.scenarios import DEFEAT, ENABLE, machine_at, row_id

TABLES = (RUN_TABLE, LOOP_TABLE)
ROWS = [(table, row) for table in TABLES for row in table.rows]
PAIRS = [
    (table, state, event) for table in TABLES for state in table.states for event in table.events
]
ILLEGAL = [p for p in PAIRS if p[2] not in p[0].allowed(p[1])]
GUARDED = [p for p in PAIRS if (p[1], p[2]) in DEFEAT]


@pytest.mark.parametrize(("table", "row"), ROWS, ids=[f"{t.name}:{row_id(r)}" for t, r in ROWS])
def test_allowed_pair_goes_where_the_table_says(
    table: MachineTable, row: TransitionRow, engine: Engine
) -> None:
    events: list[Event] = []
    machine, data = machine_at(table.name, row.source, engine, events)
    args = ENABLE[row.guard](data)

    emitted = machine.send(row.event, **args)

    assert machine.state == row.target
    assert events == [emitted]
    assert (emitted.seq, emitted.run_id, emitted.machine) == (1, "run-1", table.name)
    assert (emitted.event, emitted.source, emitted.target) == (row.event, row.source, row.target)
    assert emitted.data == args
    assert emitted.at == 1_700_000_000.0


@pytest.mark.parametrize(
    ("table", "state", "event"), ILLEGAL, ids=[f"{t.name}:{s}-{e}" for t, s, e in ILLEGAL]
)
def test_illegal_pair_raises_and_changes_nothing(
    table: MachineTable, state: str, event: str, engine: Engine
) -> None:
    events: list[Event] = []
    machine, data = machine_at(table.name, state, engine, events)
    before = dataclasses.replace(data)

    with pytest.raises(IllegalTransitionError) as caught:
        machine.send(event, text="hello", calls=["c1"], decisions={"c1": "approve"})

    assert type(caught.value) is IllegalTransitionError
    assert (caught.value.state, caught.value.event) == (state, event)
    assert caught.value.allowed == table.allowed(state)
    assert f"event {str(event)!r} is not allowed" in str(caught.value)  # by value, not enum
    assert f"in state {str(state)!r}" in str(caught.value)
    assert data == before
    assert events == []
    assert machine.emitter.seq == 0


@pytest.mark.parametrize(
    ("table", "state", "event"), GUARDED, ids=[f"{t.name}:{s}-{e}" for t, s, e in GUARDED]
)
def test_failed_guards_raise_and_change_nothing(
    table: MachineTable, state: str, event: str, engine: Engine
) -> None:
    events: list[Event] = []
    machine, data = machine_at(table.name, state, engine, events)
    args = DEFEAT[(state, event)](data)
    before = dataclasses.replace(data)

    with pytest.raises(GuardFailedError) as caught:
        machine.send(event, **args)

    guards = [r.guard for r in table.rows if (r.source, r.event) == (state, event)]
    assert [text.split(":")[0] for text in caught.value.failed_guards] == guards
    assert caught.value.allowed == table.allowed(state)
    assert data == before
    assert events == []


def test_every_guarded_pair_has_a_defeating_setup() -> None:
    guarded = {(r.source, r.event) for t in TABLES for r in t.rows if r.guard is not None}
    covering = {
        ("thinking", "model_replied"),
        ("acting", "tools_finished"),
        ("validating", "output_invalid"),
    }
    assert guarded - covering == set(DEFEAT)


def test_illegal_error_lists_allowed_events_in_its_message(engine: Engine) -> None:
    machine, _ = machine_at(RUN_TABLE.name, "shutdown", engine, [])

    with pytest.raises(IllegalTransitionError, match="none \\(the state is final\\)"):
        machine.send("start")


def test_event_arguments_may_not_shadow_injected_names(engine: Engine) -> None:
    machine, data = machine_at(RUN_TABLE.name, "ready", engine, [])

    with pytest.raises(TypeError, match="'source'"):
        machine.send("submit", text="hi", source="elsewhere")
    assert data.state == "ready"
