"""SQLiteStore beyond the conformance suite: the file, damage, durability settings, faults."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Literal

import pytest

from agentfsm.errors import (
    SchemaVersionError,
    SnapshotConflictError,
    StoreCorruptError,
    StoreError,
    StoreWriteError,
)
from agentfsm.states import Message
from agentfsm.stores import SQLiteStore
from agentfsm.stores.sqlite import FILE_FORMAT
from agentfsm.testing.store_conformance import make_events, make_snapshot


@contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        yield conn


def stored_run(path: Path, messages: int = 2) -> None:
    with SQLiteStore(path) as store:
        snapshot = make_snapshot("r1", 2, 1, messages)
        store.save(snapshot, make_events("r1", 1, 2), expected_version=None)


def read_everything(path: Path) -> None:
    with SQLiteStore(path) as store:
        store.load("r1")
        store.events("r1")


def test_the_default_file_is_under_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with SQLiteStore() as store:
        assert store.path == tmp_path / ".agentfsm" / "runs.db"
    assert (tmp_path / ".agentfsm" / "runs.db").is_file()


@pytest.mark.parametrize(
    ("synchronous", "level"), [("FULL", 2), ("NORMAL", 1)], ids=["full", "normal"]
)
def test_the_file_is_in_wal_mode_with_the_chosen_synchronous_level(
    tmp_path: Path, synchronous: Literal["FULL", "NORMAL"], level: int
) -> None:
    opened: list[sqlite3.Connection] = []

    def connect(path: Path) -> sqlite3.Connection:
        opened.append(sqlite3.connect(path, check_same_thread=False))
        return opened[0]

    with SQLiteStore(tmp_path / "runs.db", synchronous=synchronous, connect=connect):
        assert opened[0].execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert opened[0].execute("PRAGMA synchronous").fetchone() == (level,)


def test_a_file_that_is_not_a_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    content = b"these are not the runs you are looking for\n" * 200
    path.write_bytes(content)
    with pytest.raises(StoreCorruptError, match="not a readable SQLite database") as caught:
        SQLiteStore(path)
    assert caught.value.path == str(path)
    assert str(path) in str(caught.value)
    assert path.read_bytes() == content


def test_a_truncated_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    stored_run(path, messages=400)
    content = path.read_bytes()[: path.stat().st_size // 2]
    path.write_bytes(content)
    # SQLite may notice at open or at the first read of a missing page: either is refused.
    with pytest.raises(StoreCorruptError, match=r"damaged|not a readable"):
        read_everything(path)
    assert path.read_bytes() == content


def test_a_database_of_something_else_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with raw(path) as conn:
        conn.execute("CREATE TABLE users (name TEXT)")
    with pytest.raises(StoreCorruptError, match="something else"):
        SQLiteStore(path)
    with raw(path) as conn:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [("users",)]


def test_a_file_of_a_newer_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    stored_run(path)
    with raw(path) as conn:
        conn.execute("PRAGMA user_version = 7")
    with pytest.raises(SchemaVersionError, match=r"the file format .* schema version 7") as caught:
        SQLiteStore(path)
    assert (caught.value.found, caught.value.expected, caught.value.run_id) == (
        7,
        (2, 3, FILE_FORMAT),
        None,
    )


def test_a_snapshot_of_an_unknown_schema_version_is_refused_and_left_alone(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    stored_run(path)
    with raw(path) as conn:
        (text,) = conn.execute("SELECT snapshot FROM runs").fetchone()
        newer = json.dumps({**json.loads(text), "schema_version": 2, "new_field": 1})
        conn.execute("UPDATE runs SET schema_version = 2, snapshot = ?", (newer,))
    with SQLiteStore(path) as store:
        with pytest.raises(SchemaVersionError, match=r"run 'r1'.* version 2.* reads only 1"):
            store.load("r1")
        with pytest.raises(SnapshotConflictError):
            store.save(make_snapshot("r1", 2, 1), [], expected_version=None)
    with raw(path) as conn:
        assert conn.execute("SELECT snapshot FROM runs").fetchone() == (newer,)


def test_an_unreadable_snapshot_names_its_run(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    stored_run(path)
    with raw(path) as conn:
        conn.execute("UPDATE runs SET snapshot = '{\"run_id\": 3}'")
    with SQLiteStore(path) as store, pytest.raises(StoreCorruptError, match="run 'r1'"):
        store.load("r1")


def test_the_event_log_cannot_be_updated(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    stored_run(path)
    with raw(path) as conn, pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE events SET event = '{}'")


def test_a_full_disk_fails_the_save_and_keeps_the_previous_snapshot(tmp_path: Path) -> None:
    opened: list[sqlite3.Connection] = []

    def connect(path: Path) -> sqlite3.Connection:
        opened.append(sqlite3.connect(path, isolation_level=None, check_same_thread=False))
        return opened[0]

    with SQLiteStore(tmp_path / "runs.db", connect=connect) as store:
        first = make_snapshot("r1", 2, 1)
        store.save(first, make_events("r1", 1, 2), expected_version=None)
        (pages,) = opened[0].execute("PRAGMA page_count").fetchone()
        opened[0].execute(f"PRAGMA max_page_count = {pages}")  # the disk is now full
        big = make_snapshot("r1", 3, 2).model_copy(
            update={"messages": tuple(Message.user("x" * 10_000) for _ in range(50))}
        )
        with pytest.raises(StoreWriteError, match="full") as caught:
            store.save(big, make_events("r1", 3, 1), expected_version=1)
        assert caught.value.run_id == "r1"
        assert isinstance(caught.value.__cause__, sqlite3.Error)
        assert store.load("r1") == first
        assert store.events("r1") == make_events("r1", 1, 2)
    with SQLiteStore(tmp_path / "runs.db") as again:
        assert again.load("r1") == first


def test_another_process_sees_every_committed_save(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as store:
        store.save(make_snapshot("r1", 2, 1), make_events("r1", 1, 2), expected_version=None)
        script = (
            "import sys\n"
            "from agentfsm.stores import SQLiteStore\n"
            "with SQLiteStore(sys.argv[1]) as store:\n"
            "    print(store.load('r1').model_dump_json())\n"
            "    print(len(store.events('r1')))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", script, str(path)],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        text, count = done.stdout.splitlines()
        assert text == make_snapshot("r1", 2, 1).model_dump_json()
        assert count == "2"


def test_two_stores_on_one_file_exactly_one_writer_wins(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    stored_run(path)
    stores = [SQLiteStore(path) for _ in range(4)]
    barrier = threading.Barrier(len(stores))
    won: list[int] = []
    lost: list[int] = []

    def write(number: int) -> None:
        barrier.wait()
        try:
            stores[number].save(
                make_snapshot("r1", 3, 2, messages=2 + number),
                make_events("r1", 3, 1),
                expected_version=1,
            )
            won.append(number)
        except SnapshotConflictError:
            lost.append(number)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(len(stores))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(won) == 1
        assert len(lost) == len(stores) - 1
        assert stores[0].load("r1") == make_snapshot("r1", 3, 2, messages=2 + won[0])
        assert stores[0].events("r1") == make_events("r1", 1, 3)
    finally:
        for store in stores:
            store.close()


def test_the_file_format_is_three_since_rows_are_keyed_by_the_run_number(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    stored_run(path)
    with raw(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (FILE_FORMAT,) == (4,)


def test_a_file_of_the_older_layout_is_refused_naming_both_versions(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with raw(path) as conn:  # format 1: each snapshot whole in runs, no items table
        conn.execute("CREATE TABLE runs (run_id TEXT PRIMARY KEY, snapshot TEXT)")
        conn.execute("CREATE TABLE events (run_id TEXT, seq INTEGER, event TEXT)")
        conn.execute("PRAGMA user_version = 1")
    before = path.read_bytes()

    with pytest.raises(SchemaVersionError) as caught:
        SQLiteStore(path)

    message = str(caught.value)
    assert "schema version 1" in message
    assert "reads only 2, 3, 4" in message
    assert "older agentfsm" in message
    assert (caught.value.found, caught.value.expected) == (1, (2, 3, 4))
    assert path.read_bytes() == before


@pytest.mark.parametrize("user_version", [0, FILE_FORMAT, 5])
def test_a_foreign_file_is_refused_without_touching_it(tmp_path: Path, user_version: int) -> None:
    path = tmp_path / "app.db"
    with raw(path) as conn:
        conn.execute("CREATE TABLE users (name TEXT)")
        conn.execute(f"PRAGMA user_version = {user_version}")
    before = path.read_bytes()

    with pytest.raises(StoreCorruptError, match="something else"):
        SQLiteStore(path)

    assert path.read_bytes() == before
    with raw(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [("users",)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]


def test_a_directory_or_an_unopenable_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"path must name a SQLite file .* it is a directory"):
        SQLiteStore(tmp_path)
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="cannot create the run store"):
        SQLiteStore(tmp_path / "file" / "runs.db")
