"""How the SQL stores write a save's rows: one serializer call each, a few statements each."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from agentfsm import Event
from agentfsm.stores import SQLiteStore
from agentfsm.stores._items import model_json
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
