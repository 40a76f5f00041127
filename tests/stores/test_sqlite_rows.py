"""How the SQL stores write a save's rows: one serializer call each, a few statements each."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from agentfsm import Event
from agentfsm.fsm.data import RunData
from agentfsm.fsm.trace import UserInputTrace
from agentfsm.states.events import unchecked_event
from agentfsm.states.json import JSONValue
from agentfsm.states.messages import Message
from agentfsm.states.names import MachineName, RecordKind, RunState
from agentfsm.stores import SQLiteStore
from agentfsm.stores._items import RECENT_RUNS, RecentWrites, Written, event_json, model_json
from agentfsm.stores.snapshot import Snapshot
from agentfsm.testing.store_conformance import (
    _event_fields,
    _messages,
    _trace,
    make_events,
    make_snapshot,
)

_events = _event_fields.map(
    lambda fields: Event(
        seq=1,
        run_id="r1",
        machine=fields[0],
        event=fields[1],
        source=fields[2],
        target=fields[3],
        at=fields[4],
        data=fields[5],
    )
)


@given(st.one_of(_events, _messages, _trace))
def test_model_json_is_model_dump_json(model: BaseModel) -> None:
    assert model_json(model) == model.model_dump_json()


_names = st.one_of(st.sampled_from([*RecordKind, *RunState]), st.text())


@given(_event_fields, _names, _names, _names)
def test_event_json_is_model_dump_json(
    fields: tuple[MachineName, str, str, str, float, dict[str, JSONValue]],
    event: str,
    source: str,
    target: str,
) -> None:
    # as validated, and as the emitter builds them (str enum members where strings go)
    machine, _, _, _, at, data = fields
    checked = Event(
        seq=3,
        run_id="r",
        machine=machine,
        event=event,
        source=source,
        target=target,
        at=at,
        data=data,
    )
    unchecked = unchecked_event(3, "r", machine, event, source, target, at, data)
    assert event_json(checked) == checked.model_dump_json()
    assert event_json(unchecked) == unchecked.model_dump_json() == checked.model_dump_json()


@given(st.integers(0, 150), st.integers(0, 150))
def test_a_save_of_any_number_of_events_and_messages_stores_them_all_in_order(
    events: int, messages: int
) -> None:
    with (
        tempfile.TemporaryDirectory() as directory,
        SQLiteStore(Path(directory) / "r.db") as store,
    ):
        statements: list[str] = []
        store._conn.set_trace_callback(statements.append)
        snapshot = make_snapshot("r1", events, 1, messages)
        store.save(snapshot, make_events("r1", 1, events), expected_version=None)
        inserts = [s for s in statements if s.startswith("INSERT INTO events")]
        assert store.load("r1") == snapshot
        assert store.events("r1") == make_events("r1", 1, events)
    # chunks of 64, 16, 4 and 1 rows, largest first: never one statement per row
    assert len(inserts) == events // 64 + events % 64 // 16 + events % 16 // 4 + events % 4


def test_a_save_of_81_events_is_three_statements(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "r.db") as store:
        statements: list[str] = []
        store._conn.set_trace_callback(statements.append)
        store.save(make_snapshot("r1", 81, 1), make_events("r1", 1, 81), expected_version=None)
    inserts = [s for s in statements if s.startswith("INSERT INTO events")]
    assert [s.count("),(") + 1 for s in inserts] == [64, 16, 1]
    with sqlite3.connect(tmp_path / "r.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 81


def _chunks(rows: int) -> int:
    """The INSERT statements ``rows`` rows take: chunks of 64, 16, 4 and 1, largest first."""
    return rows // 64 + rows % 64 // 16 + rows % 16 // 4 + rows % 4


@given(st.integers(1, 90), st.integers(0, 90), st.integers(0, 20), st.integers(0, 20))
def test_a_saves_new_messages_and_trace_entries_share_their_insert_statements(
    messages: int, entries: int, more_messages: int, more_entries: int
) -> None:
    def busy(version: int, conversation: int, trace: int) -> Snapshot:
        data = RunData(run_id="r1", state=RunState.BUSY, loop_state="thinking", turn=1)
        said = [Message.user(f"question {n}") for n in range(conversation)]
        heard = [UserInputTrace(turn=1, text=f"q {n}", at=1.0 + n) for n in range(trace)]
        return Snapshot.from_data(data, said, heard, seq=version, version=version)

    with (
        tempfile.TemporaryDirectory() as directory,
        SQLiteStore(Path(directory) / "r.db") as store,
    ):
        statements: list[str] = []
        store._conn.set_trace_callback(statements.append)
        first = busy(1, messages, entries)
        store.save(first, make_events("r1", 1, 1), expected_version=None)
        # A later save writes only what is new of either kind (the same objects kept).
        second = Snapshot._trusted(
            {
                **busy(2, messages + more_messages, entries + more_entries).__dict__,
                "messages": first.messages + busy(2, more_messages, 0).messages,
                "trace": first.trace + busy(2, 0, more_entries).trace,
            }
        )
        store.save(second, make_events("r1", 2, 1), expected_version=1)
        inserts = [s for s in statements if s.startswith("INSERT INTO items")]
        assert store.load("r1") == second
    # Both kinds in the same statements: one INSERT per chunk of the save's new rows.
    assert len(inserts) == _chunks(messages + entries) + _chunks(more_messages + more_entries)
    assert not [s for s in statements if s.startswith("DELETE")]


def test_the_first_save_of_a_run_only_inserts_and_a_save_after_a_reopen_rewrites(
    tmp_path: Path,
) -> None:
    with SQLiteStore(tmp_path / "r.db") as store:
        statements: list[str] = []
        store._conn.set_trace_callback(statements.append)
        store.save(make_snapshot("r1", 2, 1, 3), make_events("r1", 1, 2), expected_version=None)
        assert not [s for s in statements if s.startswith("DELETE")]
    with SQLiteStore(tmp_path / "r.db") as store:  # what it wrote is not known: rewritten
        statements = []
        store._conn.set_trace_callback(statements.append)
        grown = make_snapshot("r1", 3, 2, 4)
        store.save(grown, make_events("r1", 3, 1), expected_version=1)
        assert len([s for s in statements if s.startswith("DELETE FROM items")]) == 2
        assert store.load("r1") == grown


def test_a_runs_row_is_inserted_once_then_updated_in_place(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "r.db") as store:
        store.save(make_snapshot("r0", 1, 1), make_events("r0", 1, 1), expected_version=None)
        store.save(make_snapshot("r1", 1, 1), make_events("r1", 1, 1), expected_version=None)
        rowid = store._conn.execute("SELECT rowid FROM runs WHERE run_id = 'r0'").fetchone()
        statements: list[str] = []
        store._conn.set_trace_callback(statements.append)
        second = make_snapshot("r0", 2, 2, 3)
        store.save(second, make_events("r0", 2, 1), expected_version=1)
        assert [s.split()[0] for s in statements if " runs " in s] == ["SELECT", "UPDATE"]
        # (an INSERT OR REPLACE would have deleted the row and added it after r1's)
        assert (
            store._conn.execute("SELECT rowid FROM runs WHERE run_id = 'r0'").fetchone() == rowid
        )
        assert store.load("r0") == second
        assert [run.version for run in store.list_runs()] == [2, 1]


def test_recent_writes_keeps_the_most_recently_set_runs_up_to_its_limit() -> None:
    recent = RecentWrites(limit=2)
    first, second, third = (Written(version, {}) for version in (1, 2, 3))
    recent["a"] = first
    recent["b"] = second
    recent["a"] = third  # set again: now the most recent
    recent["c"] = first
    assert dict(recent) == {"a": third, "c": first}  # b, the least recently set, is gone
    assert RecentWrites().limit == RECENT_RUNS


def _busy(run_id: str, seq: int, version: int, conversation: list[Message]) -> Snapshot:
    data = RunData(run_id=run_id, state=RunState.BUSY, loop_state="thinking", turn=1)
    return Snapshot.from_data(data, conversation, [], seq=seq, version=version)


def test_a_store_remembers_only_its_recent_runs_and_rewrites_a_forgotten_runs_items(
    tmp_path: Path,
) -> None:
    conversation = [Message.system("be brief"), Message.user("question 1")]
    grown = [*conversation, Message.user("question 2")]
    with SQLiteStore(tmp_path / "r.db") as store:
        store._written.limit = 2
        for run in ("r0", "r1"):
            store.save(
                _busy(run, 1, 1, conversation), make_events(run, 1, 1), expected_version=None
            )
        statements: list[str] = []
        store._conn.set_trace_callback(statements.append)
        store.save(_busy("r0", 2, 2, grown), make_events("r0", 2, 1), expected_version=1)
        assert not [s for s in statements if s.startswith("DELETE")]  # remembered: appended
        store.save(_busy("r2", 1, 1, conversation), make_events("r2", 1, 1), expected_version=None)
        assert list(store._written) == ["r0", "r2"]  # r1 was the least recently written
        statements.clear()
        second = _busy("r1", 2, 2, grown)
        store.save(second, make_events("r1", 2, 1), expected_version=1)
        assert [s for s in statements if s.startswith("DELETE FROM items")]  # rewritten
        assert store.load("r1") == second
        assert store.load("r0") == _busy("r0", 2, 2, grown)
        assert len(store._written) == 2
