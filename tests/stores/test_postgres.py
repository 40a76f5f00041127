"""PostgresStore beyond the conformance suite: the schema, refusals, faults, many writers."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

from agentfsm.errors import (
    SchemaVersionError,
    SnapshotConflictError,
    StoreCorruptError,
    StoreError,
    StoreWriteError,
)
from agentfsm.stores.postgres import PostgresStore
from agentfsm.testing.postgres_server import TemporaryPostgres
from agentfsm.testing.store_conformance import make_events, make_snapshot


@contextmanager
def raw(url: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    with psycopg.connect(url, autocommit=True) as conn:
        yield conn


def tables(url: str) -> list[str]:
    with raw(url) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
        ).fetchall()
    return [str(row[0]) for row in rows]


def stored_run(url: str) -> None:
    with PostgresStore(url) as store:
        store.save(make_snapshot("r1", 2, 1), make_events("r1", 1, 2), expected_version=None)


def test_an_empty_database_gets_the_schema_of_the_current_version(postgres_url: str) -> None:
    with PostgresStore(postgres_url):
        pass
    assert tables(postgres_url) == [
        "agentfsm_events", "agentfsm_items", "agentfsm_runs", "agentfsm_schema",
    ]  # fmt: skip
    with raw(postgres_url) as conn:
        assert conn.execute("SELECT version FROM agentfsm_schema").fetchall() == [(2,)]
    stored_run(postgres_url)  # and a second opening keeps it
    with PostgresStore(postgres_url) as store:
        assert store.load("r1") == make_snapshot("r1", 2, 1)


def test_without_create_an_empty_database_is_an_error_and_stays_empty(postgres_url: str) -> None:
    with pytest.raises(StoreError, match=r"no run store in .*the database is empty"):
        PostgresStore(postgres_url, create=False)
    assert tables(postgres_url) == []


def test_a_database_of_another_application_is_refused_untouched(postgres_url: str) -> None:
    with raw(postgres_url) as conn:
        conn.execute("CREATE TABLE users (name text)")
        conn.execute("INSERT INTO users VALUES ('ada')")
    with pytest.raises(StoreCorruptError, match=r"another application's tables \(\['users'\]\)"):
        PostgresStore(postgres_url)
    assert tables(postgres_url) == ["users"]
    with raw(postgres_url) as conn:
        assert conn.execute("SELECT name FROM users").fetchall() == [("ada",)]


def test_a_schema_of_its_own_shares_a_database_with_another_application(
    postgres_url: str,
) -> None:
    with raw(postgres_url) as conn:
        conn.execute("CREATE TABLE users (name text)")
        conn.execute("CREATE SCHEMA agentfsm")
    url = postgres_url + "&options=-csearch_path%3Dagentfsm"
    stored_run(url)
    with PostgresStore(url) as store:
        assert store.load("r1") == make_snapshot("r1", 2, 1)
    assert tables(postgres_url) == ["users"]


def test_a_database_of_a_newer_schema_version_is_refused_untouched(postgres_url: str) -> None:
    stored_run(postgres_url)
    with raw(postgres_url) as conn:
        conn.execute("UPDATE agentfsm_schema SET version = 7")
    with pytest.raises(SchemaVersionError, match=r"the file format .* schema version 7") as caught:
        PostgresStore(postgres_url)
    assert (caught.value.found, caught.value.expected, caught.value.run_id) == (7, (2,), None)
    with raw(postgres_url) as conn:
        assert conn.execute("SELECT version FROM agentfsm_schema").fetchall() == [(7,)]
        assert conn.execute("SELECT count(*) FROM agentfsm_events").fetchone() == (2,)


def test_a_schema_missing_a_table_is_refused(postgres_url: str) -> None:
    stored_run(postgres_url)
    with raw(postgres_url) as conn:
        conn.execute("DROP TABLE agentfsm_items")
    with pytest.raises(StoreCorruptError, match=r"tables \['agentfsm_items'\] are missing"):
        PostgresStore(postgres_url)


def test_a_schema_table_without_its_one_row_is_refused(postgres_url: str) -> None:
    stored_run(postgres_url)
    with raw(postgres_url) as conn:
        conn.execute("INSERT INTO agentfsm_schema VALUES (1)")
    with pytest.raises(StoreCorruptError, match="agentfsm_schema has 2 rows, expected 1"):
        PostgresStore(postgres_url)


def test_concurrent_first_openings_migrate_once(postgres_url: str) -> None:
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def open_one() -> None:
        barrier.wait()
        try:
            PostgresStore(postgres_url).close()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with raw(postgres_url) as conn:
        assert conn.execute("SELECT version FROM agentfsm_schema").fetchall() == [(2,)]


def test_a_snapshot_of_an_unknown_schema_version_is_refused_and_left_alone(
    postgres_url: str,
) -> None:
    stored_run(postgres_url)
    with raw(postgres_url) as conn:
        conn.execute("UPDATE agentfsm_runs SET schema_version = 2")
    with PostgresStore(postgres_url) as store:
        with pytest.raises(SchemaVersionError, match=r"run 'r1'.* version 2.* reads only 1"):
            store.load("r1")
        with pytest.raises(SnapshotConflictError):
            store.save(make_snapshot("r1", 2, 1), [], expected_version=None)


@pytest.mark.parametrize(
    ("table", "column", "value", "problem"),
    [
        ("agentfsm_runs", "snapshot", '{"run_id": 3}', "not a valid Snapshot"),
        ("agentfsm_events", "event", "{}", "not a valid Event"),
    ],
    ids=["snapshot", "event"],
)
def test_an_unreadable_record_names_its_run(
    postgres_url: str, table: str, column: str, value: str, problem: str
) -> None:
    stored_run(postgres_url)
    with raw(postgres_url) as conn:
        conn.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
        conn.execute(f"UPDATE {table} SET {column} = %s", (value,))  # type: ignore[arg-type]
    with PostgresStore(postgres_url) as store, pytest.raises(StoreCorruptError, match=problem):
        store.load("r1") if table == "agentfsm_runs" else store.events("r1")


def test_the_event_log_cannot_be_updated(postgres_url: str) -> None:
    stored_run(postgres_url)
    with raw(postgres_url) as conn, pytest.raises(psycopg.errors.RaiseException, match="append"):
        conn.execute("UPDATE agentfsm_events SET event = '{}'")


def test_a_failing_write_keeps_the_previous_snapshot(postgres_url: str) -> None:
    stored_run(postgres_url)
    with raw(postgres_url) as conn:  # the database refuses items beyond a size, as a full disk
        conn.execute("ALTER TABLE agentfsm_items ADD CHECK (length(item) < 1000)")
    with PostgresStore(postgres_url) as store:
        big = make_snapshot("r1", 3, 2).model_copy(
            update={"messages": make_snapshot("r1", 3, 2, messages=600).messages}
        )
        big = big.model_copy(update={"messages": (*big.messages[:2], big.messages[1].model_copy(
            update={"content": "x" * 2000}))})  # fmt: skip
        with pytest.raises(StoreWriteError, match="check constraint") as caught:
            store.save(big, make_events("r1", 3, 1), expected_version=1)
        assert caught.value.run_id == "r1"
        assert isinstance(caught.value.__cause__, psycopg.Error)
        assert store.load("r1") == make_snapshot("r1", 2, 1)
        assert store.events("r1") == make_events("r1", 1, 2)
        # and the store goes on: the next save writes every item again
        store.save(make_snapshot("r1", 3, 2), make_events("r1", 3, 1), expected_version=1)
        assert store.load("r1") == make_snapshot("r1", 3, 2)


def cut(admin: psycopg.Connection[tuple[object, ...]]) -> None:
    """Terminate every other connection to the database, as a server restart would."""
    admin.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )


def test_lost_server_connections_are_replaced_before_use(postgres_url: str) -> None:
    with raw(postgres_url) as admin, PostgresStore(postgres_url) as store:
        store.save(make_snapshot("r1", 1, 1), make_events("r1", 1, 1), expected_version=None)
        cut(admin)
        store.save(make_snapshot("r1", 2, 2), make_events("r1", 2, 1), expected_version=1)
        cut(admin)
        assert store.load("r1") == make_snapshot("r1", 2, 2)


@pytest.mark.parametrize("call", ["read", "save", "delete"])
def test_unchecked_a_lost_connection_fails_one_call_writing_nothing(
    postgres_url: str, call: str
) -> None:
    stored_run(postgres_url)
    with (
        raw(postgres_url) as admin,
        PostgresStore(postgres_url, max_size=1, check_connections=False) as store,
    ):
        assert store.load("r1") == make_snapshot("r1", 2, 1)
        cut(admin)
        if call == "save":
            with pytest.raises(StoreWriteError, match="rolled back") as caught:
                store.save(make_snapshot("r1", 3, 2), make_events("r1", 3, 1), expected_version=1)
            assert isinstance(caught.value.__cause__, psycopg.OperationalError)
        elif call == "delete":
            with pytest.raises(StoreWriteError, match="cannot save run 'r1'"):
                store.delete("r1")
        else:
            with pytest.raises(StoreError, match="cannot use the run store"):
                store.list_runs()
        assert store.load("r1") == make_snapshot("r1", 2, 1)
        assert store.events("r1") == make_events("r1", 1, 2)


def test_another_process_sees_every_committed_save(postgres_url: str) -> None:
    stored_run(postgres_url)
    script = (
        "import sys\n"
        "from agentfsm.stores.postgres import PostgresStore\n"
        "with PostgresStore(sys.argv[1]) as store:\n"
        "    print(store.load('r1').model_dump_json())\n"
        "    print(len(store.events('r1')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, postgres_url],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    text, count = done.stdout.splitlines()
    assert text == make_snapshot("r1", 2, 1).model_dump_json()
    assert count == "2"


@pytest.mark.parametrize("existing", [False, True], ids=["new-run", "existing-run"])
def test_stores_on_one_database_exactly_one_writer_wins(postgres_url: str, existing: bool) -> None:
    if existing:
        stored_run(postgres_url)
    expected, version, first = (1, 2, 3) if existing else (None, 1, 1)
    stores = [PostgresStore(postgres_url) for _ in range(4)]
    barrier = threading.Barrier(len(stores))
    won: list[int] = []
    lost: list[int | None] = []

    def write(number: int) -> None:
        barrier.wait()
        try:
            stores[number].save(
                make_snapshot("r1", first, version, messages=2 + number),
                make_events("r1", first, 1),
                expected_version=expected,
            )
            won.append(number)
        except SnapshotConflictError as conflict:
            lost.append(conflict.actual)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(len(stores))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(won) == 1
        assert lost == [version] * (len(stores) - 1)
        winner = make_snapshot("r1", first, version, messages=2 + won[0])
        assert stores[0].load("r1") == winner
        assert stores[0].events("r1") == make_events("r1", 1, first)
    finally:
        for store in stores:
            store.close()


def test_a_store_written_by_another_is_rewritten_whole(postgres_url: str) -> None:
    with PostgresStore(postgres_url) as one, PostgresStore(postgres_url) as two:
        one.save(
            make_snapshot("r1", 1, 1, messages=3), make_events("r1", 1, 1), expected_version=None
        )
        two.save(
            make_snapshot("r1", 2, 2, messages=2), make_events("r1", 2, 1), expected_version=1
        )
        one.save(
            make_snapshot("r1", 3, 3, messages=4), make_events("r1", 3, 1), expected_version=2
        )
        assert two.load("r1") == make_snapshot("r1", 3, 3, messages=4)


def test_damage_the_database_reports_is_a_corrupt_store(postgres_url: str) -> None:
    with PostgresStore(postgres_url) as store:
        error = store._failure(psycopg.errors.DataCorrupted("invalid page in block 7"), "r1", True)
    assert isinstance(error, StoreCorruptError)
    assert error.run_id == "r1"
    assert "the database reports damage (invalid page in block 7)" in str(error)


def test_watching_a_database_that_is_gone_is_a_store_error(
    postgres_url: str, postgres_server: TemporaryPostgres
) -> None:
    with PostgresStore(postgres_url) as store, raw(postgres_server.url()) as admin:
        store.close()
        store.close()  # harmless twice
        database = postgres_url.split("/")[3].split("?")[0]
        admin.execute(f'DROP DATABASE "{database}" WITH (FORCE)')  # type: ignore[arg-type]
        with pytest.raises(StoreError, match=f'database "{database}" does not exist'):
            next(store.watch("r1"))


def test_a_run_recreated_by_another_store_at_the_same_version_is_rewritten_whole(
    postgres_url: str,
) -> None:
    with PostgresStore(postgres_url) as one, PostgresStore(postgres_url) as two:
        one.save(
            make_snapshot("r1", 1, 1, messages=3), make_events("r1", 1, 1), expected_version=None
        )
        two.delete("r1")
        two.save(
            make_snapshot("r1", 1, 1, messages=5), make_events("r1", 1, 1), expected_version=None
        )
        # one still holds version 1 as it wrote it; the stored version 1 is two's
        one.save(
            make_snapshot("r1", 2, 2, messages=4), make_events("r1", 2, 1), expected_version=1
        )
        assert two.load("r1") == make_snapshot("r1", 2, 2, messages=4)


@pytest.mark.parametrize("committed", [True, False], ids=["after-commit", "before-commit"])
def test_a_connection_lost_during_a_save_is_resolved_by_the_save_stamp(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, committed: bool
) -> None:
    stored_run(postgres_url)
    with PostgresStore(postgres_url) as store:
        assert store.load("r1") == make_snapshot("r1", 2, 1)
        real = store._save

        def drop(*args: object) -> tuple[str, int | None, int]:
            if committed:
                real(*args)  # type: ignore[arg-type]
            raise psycopg.OperationalError("server closed the connection unexpectedly")

        monkeypatch.setattr(store, "_save", drop)
        second = make_snapshot("r1", 3, 2)
        if committed:  # the save is stored: it succeeded, whatever the connection said
            store.save(second, make_events("r1", 3, 1), expected_version=1)
        else:
            with pytest.raises(StoreWriteError, match="server closed the connection"):
                store.save(second, make_events("r1", 3, 1), expected_version=1)
        monkeypatch.undo()
        assert store.load("r1") == (second if committed else make_snapshot("r1", 2, 1))
        assert len(store.events("r1")) == (3 if committed else 2)


def test_a_save_whose_outcome_cannot_be_checked_is_a_write_error(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored_run(postgres_url)
    with PostgresStore(postgres_url) as store:

        def drop(*args: object) -> tuple[str, int | None, int]:
            raise psycopg.OperationalError("server closed the connection unexpectedly")

        def unreachable(*args: object) -> list[tuple[object, ...]]:
            raise StoreError("cannot use the run store: no connection")

        monkeypatch.setattr(store, "_save", drop)
        monkeypatch.setattr(store, "_read", unreachable)
        with pytest.raises(StoreWriteError):
            store.save(make_snapshot("r1", 3, 2), make_events("r1", 3, 1), expected_version=1)


def test_the_store_is_returned_with_its_min_size_connections_open(postgres_url: str) -> None:
    def backends() -> int:
        with raw(postgres_url) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchone()
        assert row is not None
        return int(str(row[0]))

    before = backends()
    with PostgresStore(postgres_url, min_size=3, max_size=3):
        assert backends() == before + 3


@pytest.mark.parametrize(("low", "high"), [(0, 4), (5, 4), (-1, 1)])
def test_pool_sizes_out_of_order_are_refused(low: int, high: int, postgres_url: str) -> None:
    with pytest.raises(ValueError, match=r"1 <= min_size <= max_size, got min_size="):
        PostgresStore(postgres_url, min_size=low, max_size=high)


def test_a_database_of_schema_version_1_is_migrated_to_leases(postgres_url: str) -> None:
    from agentfsm.stores import _postgres_sql as sql
    from agentfsm.stores.leases import Hold, Lease
    from agentfsm.testing.clock import FakeClock

    stored_run(postgres_url)
    with raw(postgres_url) as conn:  # as schema version 1 left it: no lease columns
        conn.execute(
            "DROP FUNCTION agentfsm_save(text, bigint, bigint, text, integer, bigint, bigint, "
            "text, bigint, text, text, bigint[], text[], text[], text[], integer[], text[], "
            "text, text, double precision, double precision)"
        )
        conn.execute(
            "ALTER TABLE agentfsm_runs DROP COLUMN lease_owner, DROP COLUMN lease_expires"
        )
        conn.execute(sql.SAVE_FUNCTION_1)
        conn.execute("UPDATE agentfsm_schema SET version = 1")
    with PostgresStore(postgres_url) as store:
        assert store.load("r1") == make_snapshot("r1", 2, 1)
        assert store.lease("r1") is None
        clock = FakeClock(1000.0)
        hold = Hold("a", 10.0, 1.0, clock)
        store.hold("r1", hold)
        store.save(make_snapshot("r1", 3, 2), make_events("r1", 3, 1), expected_version=1)
        store.unhold("r1", hold)
        assert store.lease("r1") == Lease("r1", "a", 1010.0)
    with raw(postgres_url) as conn:
        assert conn.execute("SELECT version FROM agentfsm_schema").fetchall() == [(2,)]
