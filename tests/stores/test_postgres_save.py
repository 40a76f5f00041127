"""A PostgresStore save: one round trip, and what that asks of the pool and the statement."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

from agentfsm.errors import SnapshotConflictError, StoreError, StoreWriteError
from agentfsm.states import Message
from agentfsm.stores import _pg_exec, _pg_pool, _pg_save
from agentfsm.stores.postgres import PostgresStore
from agentfsm.stores.snapshot import Snapshot
from agentfsm.testing.store_conformance import make_events, make_snapshot


@contextmanager
def round_trips(store: PostgresStore, tmp_path: Path) -> Iterator[list[int]]:
    """Count the round trips of the store's one pooled connection (libpq's protocol trace)."""
    (conn,) = store._pool._idle
    counted: list[int] = []
    with (tmp_path / "trace").open("w") as trace:
        conn.pgconn.trace(trace.fileno())
        try:
            yield counted
        finally:
            conn.pgconn.untrace()
    # each round trip ends with the server's ReadyForQuery
    lines = (tmp_path / "trace").read_text().splitlines()
    counted.append(sum("\tB\t" in line and "ReadyForQuery" in line for line in lines))


def grown(snapshot: Snapshot, *messages: Message) -> Snapshot:
    return snapshot.model_copy(
        update={
            "messages": (*snapshot.messages, *messages),
            "seq": snapshot.seq + 1,
            "version": snapshot.version + 1,
        }
    )


def test_a_save_is_one_round_trip(postgres_url: str, tmp_path: Path) -> None:
    with PostgresStore(postgres_url, max_size=1) as store:
        first = make_snapshot("r1", 1, 1, messages=2)
        store.save(first, make_events("r1", 1, 1), expected_version=None)
        second = grown(first, Message.user("two"))
        store.save(second, make_events("r1", 2, 1), expected_version=1)  # (prepared now)
        with round_trips(store, tmp_path) as counted:
            third = grown(second, Message.user("three"))
            store.save(third, make_events("r1", 3, 1), expected_version=2)
            fourth = grown(third, Message.assistant("four"))
            store.save(fourth, make_events("r1", 4, 1), expected_version=3)
        assert counted == [2]  # no check of the pooled connection, no second statement
        assert store.load("r1") == fourth
        assert store.events("r1") == make_events("r1", 1, 4)


def test_each_save_is_the_statement_of_what_it_writes(postgres_url: str) -> None:
    # A save with no new item leaves the items' sub-statements out; one that shrinks a kind
    # rewrites it; the rest append. What is stored is the same either way.
    with PostgresStore(postgres_url, max_size=1) as store:
        (conn,) = store._pool._idle
        first = make_snapshot("r", 1, 1, messages=3)
        store.save(first, make_events("r", 1, 1), expected_version=None)
        assert store._pool.prepared(conn) == {b"agentfsm_save_create_rewrite"}  # (all new)
        same = first.model_copy(update={"seq": 2, "version": 2, "state": "ready"})
        store.save(same, make_events("r", 2, 1), expected_version=1)
        more = grown(same, Message.user("four"))
        store.save(more, make_events("r", 3, 1), expected_version=2)
        shrunk = more.model_copy(update={"messages": more.messages[:2], "seq": 4, "version": 4})
        store.save(shrunk, make_events("r", 4, 1), expected_version=3)
        assert store._pool.prepared(conn) == {
            b"agentfsm_save_create_rewrite",
            b"agentfsm_save_update_events",
            b"agentfsm_save_update_items",
            b"agentfsm_save_update_rewrite",
        }
        assert store.load("r") == shrunk
    with PostgresStore(postgres_url) as other:
        assert other.load("r") == shrunk
        assert other.events("r") == make_events("r", 1, 4)


def test_a_statement_deallocated_behind_the_store_is_prepared_again(postgres_url: str) -> None:
    # As a pooler or an administrator may do: the save prepares it again and is made.
    with PostgresStore(postgres_url, max_size=1) as store:
        (conn,) = store._pool._idle
        first = make_snapshot("r", 1, 1, messages=1)
        store.save(first, make_events("r", 1, 1), expected_version=None)
        second = grown(first, Message.user("two"))
        store.save(second, make_events("r", 2, 1), expected_version=1)
        conn.execute("DEALLOCATE ALL")
        third = grown(second, Message.user("three"))
        store.save(third, make_events("r", 3, 1), expected_version=2)
        assert store.load("r") == third
        assert store.events("r") == make_events("r", 1, 3)


def test_text_is_sent_as_utf8_whatever_the_url_asks(postgres_url: str) -> None:
    # The statement's parameters are UTF-8 bytes: the store's connections say so to the
    # server, even where the URL asks for another client encoding.
    latin = postgres_url + ("&" if "?" in postgres_url else "?") + "client_encoding=latin1"
    text = "naïve ✓ 日本語 \u0000 \U0001f600 ' \" %(run)s"
    with PostgresStore(latin) as store:
        snapshot = make_snapshot("ü-run ✓", 1, 1, messages=1)
        snapshot = snapshot.model_copy(update={"messages": (Message.user(text),)})
        events = make_events("ü-run ✓", 1, 1)
        store.save(snapshot, events, expected_version=None)
        assert store.load("ü-run ✓") == snapshot
    with PostgresStore(postgres_url) as other:
        assert other.load("ü-run ✓") == snapshot
        assert other.events("ü-run ✓") == events


def test_a_run_id_with_a_nul_is_refused_and_nothing_is_stored(postgres_url: str) -> None:
    # libpq ends a text parameter at its first NUL: sent as it is, the run "a\x00b" would
    # have been saved as the run "a".
    with PostgresStore(postgres_url) as store:
        with pytest.raises(StoreWriteError, match=r"cannot contain NUL"):
            store.save(
                make_snapshot("a\x00b", 1, 1), make_events("a\x00b", 1, 1), expected_version=None
            )
        assert store.list_runs() == []
        store.save(make_snapshot("a", 1, 1), make_events("a", 1, 1), expected_version=None)
        assert store.load("a") == make_snapshot("a", 1, 1)


def test_a_shrunk_conversation_is_rewritten(postgres_url: str) -> None:
    with PostgresStore(postgres_url) as store:
        first = make_snapshot("r", 1, 1, messages=6)
        store.save(first, make_events("r", 1, 1), expected_version=None)
        reset = first.model_copy(update={"messages": first.messages[:1], "seq": 2, "version": 2})
        store.save(reset, make_events("r", 2, 1), expected_version=1)
        assert store.load("r") == reset
        again = grown(reset, Message.user("new start"), Message.assistant("ok"))
        store.save(again, make_events("r", 3, 1), expected_version=2)
        assert store.load("r") == again
    with PostgresStore(postgres_url) as other:  # (what is stored, not what the store recalls)
        assert other.load("r") == again
        assert other.events("r") == make_events("r", 1, 3)


def cut_and_wait(url: str) -> None:
    """End every other connection to the database, waiting until each backend is gone."""
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


def test_a_connection_ended_before_its_end_could_be_seen_is_replaced(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The check finds nothing on the socket (the server's farewell not there yet): the call
    # fails on it, and is made again on a new connection, as it did not take effect.
    with PostgresStore(postgres_url, max_size=2) as store:
        store.save(make_snapshot("r1", 1, 1), make_events("r1", 1, 1), expected_version=None)
        monkeypatch.setattr(_pg_pool, "_readable", lambda fd: False)
        cut_and_wait(postgres_url)
        store.save(make_snapshot("r1", 2, 2), make_events("r1", 2, 1), expected_version=1)
        cut_and_wait(postgres_url)
        assert store.load("r1") == make_snapshot("r1", 2, 2)
        cut_and_wait(postgres_url)
        store.delete("r1")
        assert store.list_runs() == []
        # a dropped connection's prepared statements are forgotten with it
        assert set(store._pool._prepared) <= set(store._pool._idle)


def test_a_save_the_statement_did_not_write_is_decided_by_the_save_function(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a race between the statement and another writer looks like to the store: the
    # statement wrote nothing; the function, under the row's lock, saves or says why.
    nothing = _pg_exec.Statement(
        "nothing", "SELECT NULL::text, NULL::float8 WHERE %(run)s::text IS NULL", {}
    )
    monkeypatch.setattr(_pg_save, "statement", lambda *arguments: nothing)
    with PostgresStore(postgres_url) as store:
        first = make_snapshot("r1", 1, 1, messages=2)
        store.save(first, make_events("r1", 1, 1), expected_version=None)
        second = grown(first, Message.user("two"))
        store.save(second, make_events("r1", 2, 1), expected_version=1)
        with pytest.raises(SnapshotConflictError):  # (another writer's version 2)
            store.save(
                grown(first, Message.user("late")), make_events("r1", 2, 1), expected_version=1
            )
        monkeypatch.undo()
        assert store.load("r1") == second
        assert store.events("r1") == make_events("r1", 1, 2)


def test_a_save_on_a_lost_connection_is_made_again_only_if_it_is_known_not_stored(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Made again only if the stamp was read and is not the save's: a save whose outcome
    # cannot be checked is an error (made again, it could be refused as a conflict with
    # itself).
    with PostgresStore(postgres_url) as store:
        store.save(make_snapshot("r1", 1, 1), make_events("r1", 1, 1), expected_version=None)
        real, calls = store._save, []

        def lost(*arguments: object) -> object:
            calls.append(arguments)
            if len(calls) == 1:
                raise _pg_pool.StaleConnection("server closed the connection unexpectedly")
            return real(*arguments)  # type: ignore[arg-type]

        def unreachable(*arguments: object) -> list[tuple[object, ...]]:
            raise StoreError("cannot use the run store: no connection")

        monkeypatch.setattr(store, "_save", lost)
        monkeypatch.setattr(store, "_read", unreachable)
        with pytest.raises(StoreWriteError, match="server closed the connection"):
            store.save(make_snapshot("r1", 2, 2), make_events("r1", 2, 1), expected_version=1)
        assert len(calls) == 1
        monkeypatch.undo()
        calls.clear()
        monkeypatch.setattr(store, "_save", lost)  # the stamp read: not stored, so again
        store.save(make_snapshot("r1", 2, 2), make_events("r1", 2, 1), expected_version=1)
        assert len(calls) == 2
        monkeypatch.undo()
        assert store.load("r1") == make_snapshot("r1", 2, 2)


def test_a_forked_child_stamps_its_saves_apart_from_its_parent() -> None:
    # A stamp tells a save's own commit from another's: a child forked with the parent's
    # prefix and count would stamp its next save as the parent stamps its own.
    before = _pg_save.new_stamp()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        os.write(write, _pg_save.new_stamp().encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        theirs = pipe.read()
    os.waitpid(child, 0)
    ours = _pg_save.new_stamp()
    assert theirs.split("-")[0] != ours.split("-")[0] == before.split("-")[0]
    assert len({before, ours, theirs}) == 3
