"""SQLiteStore writes only the messages and trace entries a run gained since its last save."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agentfsm.errors import SnapshotConflictError
from agentfsm.states import Message
from agentfsm.stores import Snapshot, SQLiteStore
from agentfsm.testing.store_conformance import make_events, make_snapshot


def grown(snapshot: Snapshot, *messages: Message) -> Snapshot:
    """The next version of ``snapshot`` with ``messages`` appended (the same objects kept)."""
    return snapshot.model_copy(
        update={
            "messages": (*snapshot.messages, *messages),
            "seq": snapshot.seq + 1,
            "version": snapshot.version + 1,
        }
    )


def item_rows(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM items").fetchone()[0])


def test_a_save_writes_only_the_new_messages(tmp_path: Path) -> None:
    inserted: list[int] = []

    def connect(path: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.set_trace_callback(
            lambda sql: inserted.append(1) if sql.startswith("INSERT INTO items") else None
        )
        return conn

    with SQLiteStore(tmp_path / "runs.db", connect=connect) as store:
        first = make_snapshot("r", 1, 1, messages=50)
        store.save(first, make_events("r", 1, 1), expected_version=None)
        inserted.clear()
        second = grown(first, Message.user("one more"))
        store.save(second, make_events("r", 2, 1), expected_version=1)

        assert len(inserted) == 1  # the one new message, not the 51
        assert store.load("r") == second
    assert item_rows(tmp_path / "runs.db") == 51 + len(first.trace)


def test_a_shrunk_conversation_is_rewritten(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "runs.db") as store:
        first = make_snapshot("r", 1, 1, messages=6)
        store.save(first, make_events("r", 1, 1), expected_version=None)
        reset = first.model_copy(update={"messages": first.messages[:1], "seq": 2, "version": 2})
        store.save(reset, make_events("r", 2, 1), expected_version=1)
        again = grown(reset, Message.user("new start"), Message.assistant("ok"))
        store.save(again, make_events("r", 3, 1), expected_version=2)

        assert store.load("r") == again
    with SQLiteStore(tmp_path / "runs.db") as other:
        assert other.load("r") == again


def test_two_stores_writing_one_run_in_turn_keep_it_whole(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as one, SQLiteStore(path) as two:
        v1 = make_snapshot("r", 1, 1, messages=3)
        one.save(v1, make_events("r", 1, 1), expected_version=None)
        loaded = two.load("r")
        assert loaded == v1
        v2 = grown(loaded, Message.user("from two"))
        two.save(v2, make_events("r", 2, 1), expected_version=1)
        # one's memory of the run is stale: its save conflicts and writes nothing
        with pytest.raises(SnapshotConflictError):
            one.save(grown(v1, Message.user("from one")), [], expected_version=1)
        v3 = grown(one.load("r"), Message.user("one again"))  # type: ignore[arg-type]
        one.save(v3, make_events("r", 3, 1), expected_version=2)

        assert two.load("r") == v3
        assert [m.content for m in v3.messages[-2:]] == ["from two", "one again"]


def test_messages_equal_but_not_the_same_objects_are_rewritten(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "runs.db") as store:
        first = make_snapshot("r", 1, 1, messages=3)
        store.save(first, make_events("r", 1, 1), expected_version=None)
        copied = Snapshot.model_validate_json(first.model_dump_json())  # new objects
        edited = copied.model_copy(
            update={
                "messages": (*copied.messages[:2], Message.user("edited")),
                "seq": 2,
                "version": 2,
            }
        )
        store.save(edited, make_events("r", 2, 1), expected_version=1)

        assert store.load("r") == edited
