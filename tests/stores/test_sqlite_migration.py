"""SQLiteStore's file format 3, and the migration of format-2 files to it."""

from __future__ import annotations

import sqlite3
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfsm.errors import StoreCorruptError, StoreError, StoreWriteError
from agentfsm.serve.stores import open_read_only
from agentfsm.states import Message
from agentfsm.states.events import Event
from agentfsm.stores import Snapshot, SQLiteStore
from agentfsm.stores._items import core_json, event_json, model_json
from agentfsm.stores._sqlite_layout import FILE_FORMAT
from agentfsm.testing.store_conformance import make_events, make_snapshot

FORMAT_2 = (
    """CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        schema_version INTEGER NOT NULL,
        version INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        state TEXT NOT NULL,
        turn INTEGER NOT NULL,
        snapshot TEXT NOT NULL
    )""",
    """CREATE TABLE events (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        event TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
    ) WITHOUT ROWID""",
    """CREATE TABLE items (
        run_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        idx INTEGER NOT NULL,
        item TEXT NOT NULL,
        PRIMARY KEY (run_id, kind, idx)
    ) WITHOUT ROWID""",
    """CREATE TRIGGER events_append_only BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END""",
)
"""The layout agentfsm wrote before format 3 (rows keyed by the run's id)."""

Run = tuple[Snapshot, list[Event]]


@contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        yield conn


def format_2_file(path: Path, runs: Sequence[Run]) -> None:
    """A file as a format-2 SQLiteStore left it after saving ``runs`` (WAL, rows by run id)."""
    with raw(path) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("BEGIN")
        for statement in FORMAT_2:
            conn.execute(statement)
        for snapshot, events in runs:
            run_id = snapshot.run_id
            conn.execute(
                "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    snapshot.schema_version,
                    snapshot.version,
                    snapshot.seq,
                    snapshot.state,
                    snapshot.turn,
                    core_json(snapshot),
                ),
            )
            conn.executemany(
                "INSERT INTO events VALUES (?, ?, ?)",
                [(run_id, event.seq, event_json(event)) for event in events],
            )
            for kind, items in (("m", snapshot.messages), ("t", snapshot.trace)):
                conn.executemany(
                    "INSERT INTO items VALUES (?, ?, ?, ?)",
                    [(run_id, kind, n, model_json(item)) for n, item in enumerate(items)],
                )
        conn.execute("PRAGMA user_version = 2")
        conn.execute("COMMIT")


def a_run(run_id: str, events: int, messages: int, texts: Sequence[str] = ()) -> Run:
    snapshot = make_snapshot(run_id, events, 1, messages)
    extra = tuple(Message.user(text) for text in texts)
    snapshot = snapshot.model_copy(update={"messages": (*snapshot.messages, *extra)})
    return snapshot, make_events(run_id, 1, events)


def schema(path: Path) -> list[tuple[str, str, str | None]]:
    with raw(path) as conn:
        return sorted(conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall())


def assert_holds(store: SQLiteStore, runs: Sequence[Run]) -> None:
    """``store`` holds each of ``runs`` whole: snapshot, events, and its row in the listing."""
    for snapshot, events in runs:
        assert store.load(snapshot.run_id) == snapshot
        assert store.events(snapshot.run_id) == events
        assert store.events(snapshot.run_id, after_seq=1) == events[1:]
    listed = [(s.run_id, s.seq, s.version) for s in store.list_runs()]
    assert listed == sorted((s.run_id, s.seq, s.version) for s, _ in runs)


RUNS = [a_run("b-second", 3, 4), a_run("a-first", 5, 2, ["hé", "x" * 5000]), a_run("c", 0, 1)]


def test_a_new_file_numbers_runs_and_keys_their_rows_by_number(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as store:
        for snapshot, events in RUNS:
            store.save(snapshot, events, expected_version=None)
    with raw(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (FILE_FORMAT,) == (4,)
        numbers = conn.execute("SELECT run_no, run_id FROM runs ORDER BY run_no").fetchall()
        assert numbers == [(1, "b-second"), (2, "a-first"), (3, "c")]  # in order of first save
        assert conn.execute("SELECT DISTINCT run_no FROM events ORDER BY 1").fetchall() == [
            (1,),
            (2,),
        ]
        assert conn.execute("SELECT COUNT(*) FROM items WHERE run_no = 2").fetchone() == (
            len(RUNS[1][0].messages) + len(RUNS[1][0].trace),
        )


def test_a_row_s_key_must_be_its_run_number_and_seq(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as store:
        store.save(*RUNS[0], expected_version=None)
    with raw(path) as conn:
        assert conn.execute("SELECT id, run_no, seq FROM events WHERE seq = 2").fetchone() == (
            (1 << 32) + 2,
            1,
            2,
        )
        assert conn.execute("SELECT id, kind, idx FROM items WHERE idx = 1").fetchall() == [
            ((1 << 32) + 1, "m", 1)
        ]
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            conn.execute("INSERT INTO events VALUES (99, 1, 5, '{}')")  # not 2**32 + 5
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            conn.execute("INSERT INTO events VALUES ((2 << 32) + 0, 2, 0, '{}')")  # no seq 0
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            conn.execute("INSERT INTO items VALUES ((1 << 32) + 9, 1, 't', 9, '{}')")


def test_a_run_s_events_and_items_never_include_a_neighbour_s(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "runs.db") as store:
        for snapshot, events in RUNS:
            store.save(snapshot, events, expected_version=None)
        _, events = RUNS[1]
        assert store.events("a-first", after_seq=-5) == events
        assert store.events("a-first", after_seq=2**40) == []
        assert store.events("b-second", after_seq=3) == []
        assert store.events("nobody") == []
        store.delete("a-first")
        assert store.load("a-first") is None
        assert store.events("a-first") == []
        assert_holds(store, [RUNS[0], RUNS[2]])


def test_a_format_2_file_is_migrated_whole_by_a_writable_store(tmp_path: Path) -> None:
    old, fresh = tmp_path / "old.db", tmp_path / "fresh.db"
    format_2_file(old, RUNS)
    SQLiteStore(fresh).close()

    with SQLiteStore(old) as store:
        assert_holds(store, RUNS)
        snapshot, _ = RUNS[0]  # the run goes on after the migration
        more = snapshot.model_copy(update={"seq": 4, "version": 2})
        store.save(more, make_events("b-second", 4, 1), expected_version=1)
        assert store.load("b-second") == more

    assert schema(old) == schema(fresh)  # word for word a file of format 4
    with raw(old) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (FILE_FORMAT,)
        assert conn.execute("SELECT run_id FROM runs ORDER BY run_no").fetchall() == [
            ("b-second",),
            ("a-first",),
            ("c",),
        ]  # numbered in the order the format-2 file had first saved them
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("UPDATE events SET event = '{}'")


runs_strategy = st.lists(
    st.tuples(
        st.integers(0, 4),
        st.integers(1, 4),
        st.lists(st.text(max_size=30), max_size=3),
    ),
    min_size=1,
    max_size=4,
)


@given(runs_strategy)
def test_migration_keeps_every_run_as_it_was(shapes: list[tuple[int, int, list[str]]]) -> None:
    runs = [a_run(f"run-{n}", *shape) for n, shape in enumerate(shapes)]
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "runs.db"
        format_2_file(path, runs)
        with SQLiteStore(path) as store:
            assert_holds(store, runs)
        with SQLiteStore(path) as store:  # once migrated, it opens as format 3
            assert_holds(store, runs)


def test_a_read_only_store_reads_a_format_2_file_without_migrating_it(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    format_2_file(path, RUNS)
    with raw(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = path.read_bytes()

    with SQLiteStore(path, read_only=True) as store:
        assert_holds(store, RUNS)
        with pytest.raises(StoreWriteError, match="read_only"):
            store.save(*RUNS[0], expected_version=None)

    assert path.read_bytes() == before
    with raw(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (2,)


def test_the_web_view_s_read_only_connection_reads_a_format_2_file_as_it_is(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    format_2_file(path, RUNS)
    with raw(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = path.read_bytes()

    with open_read_only(path) as store:  # a mode=ro connection, not read_only=True
        assert_holds(store, RUNS)

    assert path.read_bytes() == before
    with SQLiteStore(path) as store:  # a writable store migrates it then
        assert_holds(store, RUNS)
    with open_read_only(path) as store:
        assert_holds(store, RUNS)


def test_stores_opening_a_format_2_file_together_migrate_it_once(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    format_2_file(path, RUNS)
    migrations: list[str] = []
    start = threading.Barrier(4)
    stores: list[SQLiteStore] = []
    failures: list[BaseException] = []

    def connect(where: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(where, timeout=30.0, isolation_level=None, check_same_thread=False)
        conn.set_trace_callback(
            lambda sql: migrations.append(sql) if sql.startswith("ALTER TABLE runs") else None
        )
        return conn

    def open_one() -> None:
        start.wait()
        try:
            stores.append(SQLiteStore(path, connect=connect))
        except BaseException as exc:  # pragma: no cover - what the assertion below reports
            failures.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert failures == []
        assert len(migrations) == 1
        for store in stores:
            assert_holds(store, RUNS)
    finally:
        for store in stores:
            store.close()


def test_a_failed_migration_leaves_the_format_2_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    format_2_file(path, RUNS)
    layout = schema(path)

    def no_drops(where: Path) -> sqlite3.Connection:  # the disk fails at the migration's end
        conn = sqlite3.connect(where, isolation_level=None, check_same_thread=False)
        conn.set_authorizer(
            lambda action, *_: (
                sqlite3.SQLITE_DENY if action == sqlite3.SQLITE_DROP_TABLE else sqlite3.SQLITE_OK
            )
        )
        return conn

    with pytest.raises(StoreError, match=r"cannot use the run store .*not authorized"):
        SQLiteStore(path, connect=no_drops)

    with raw(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (2,)
    assert schema(path) == layout
    with SQLiteStore(path, read_only=True) as store:
        assert_holds(store, RUNS)
    with SQLiteStore(path) as store:  # and a later open migrates it
        assert_holds(store, RUNS)


def test_a_format_2_file_with_rows_of_no_run_is_refused_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    format_2_file(path, RUNS)
    with raw(path) as conn:
        conn.execute("INSERT INTO events VALUES ('gone', 1, '{}')")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = path.read_bytes()

    with pytest.raises(StoreCorruptError, match=r"1 events or items belong to no stored run"):
        SQLiteStore(path)

    assert path.read_bytes() == before
    with raw(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (2,)


def format_3_file(path: Path, runs: Sequence[Run]) -> None:
    """A file as a format-3 SQLiteStore left it: today's file less the lease columns."""
    with SQLiteStore(path) as store:
        for snapshot, events in runs:
            store.save(snapshot, events, expected_version=None)
    with raw(path) as conn:
        conn.execute("ALTER TABLE runs DROP COLUMN lease_owner")
        conn.execute("ALTER TABLE runs DROP COLUMN lease_expires")
        conn.execute("PRAGMA user_version = 3")


def test_a_format_3_file_gets_the_lease_columns_and_keeps_every_run(tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    format_3_file(old, RUNS)
    with SQLiteStore(old, read_only=True) as reader:  # read as it is: no run has a lease
        assert_holds(reader, RUNS)
        assert reader.lease("a-first") is None
    with raw(old) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (3,)

    with SQLiteStore(old) as store:
        assert_holds(store, RUNS)
        assert [store.lease(s.run_id) for s, _ in RUNS] == [None] * len(RUNS)
        snapshot, _ = RUNS[0]  # the run goes on after the migration, and keeps leases
        more = snapshot.model_copy(update={"seq": 4, "version": 2})
        store.save(more, make_events("b-second", 4, 1), expected_version=1)
        assert store.load("b-second") == more
    with raw(old) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (FILE_FORMAT,) == (4,)
        columns = [row[1] for row in conn.execute("PRAGMA table_info(runs)")]
        assert columns[-2:] == ["lease_owner", "lease_expires"]
