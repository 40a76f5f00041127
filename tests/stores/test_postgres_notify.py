"""A PostgresStore save notifies only when someone watches its run, and no watcher misses one.

A transaction that sends a notification holds a lock of the whole server from its commit
until its WAL is flushed, so notifying saves commit one at a time: the saves of runs nobody
watches send none. The watch's lock, taken before it reads, makes the saves of its run
notify, and waits for a save in flight that did not.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from agentfsm.errors import StoreError
from agentfsm.states.events import Event
from agentfsm.stores import _pg_exec, _pg_save, _pg_watch
from agentfsm.stores import _postgres_sql as sql
from agentfsm.stores._items import new_items
from agentfsm.stores.postgres import PostgresStore
from agentfsm.testing.store_conformance import make_events, make_snapshot

BOUND = 10.0
"""Seconds any wait of these tests may take before it is a failure."""

QUIET = 0.3
"""Seconds a listener waits to be sure no notification came (all are sent at commit)."""


@pytest.fixture
def store(postgres_url: str) -> Iterator[PostgresStore]:
    with PostgresStore(postgres_url) as store:
        yield store


@pytest.fixture
def heard(postgres_url: str) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
    """A plain LISTENer of the store's channel, which holds no lock of its own."""
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(sql.LISTEN)
        yield conn


def notices(conn: psycopg.Connection[tuple[Any, ...]], timeout: float = QUIET) -> list[str]:
    return [note.payload for note in conn.notifies(timeout=timeout)]


def save(store: PostgresStore, run_id: str, n: int) -> None:
    store.save(
        make_snapshot(run_id, n, n), make_events(run_id, n, 1), expected_version=n - 1 or None
    )


def waiting_for_lock(url: str) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND NOT granted)"
        ).fetchone()
    return bool(row and row[0])


def holding_watch(url: str, run_id: str) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND classid = %s::bigint::oid AND objid = (%s::bigint & 4294967295)::oid)",
            (sql.WATCHED_RUN, sql.watch_key(run_id)),
        ).fetchone()
    return bool(row and row[0])


def eventually(condition: Any) -> None:
    for _ in range(int(BOUND / 0.01)):
        if condition():
            return
        threading.Event().wait(0.01)
    raise AssertionError("not within the bound")


def watching(
    store: PostgresStore, run_id: str, count: int
) -> tuple[threading.Thread, list[Event]]:
    """A thread watching ``run_id`` until it has ``count`` events."""
    seen: list[Event] = []

    def watch() -> None:
        for event in store.watch(run_id, timeout=BOUND):
            seen.append(event)
            if len(seen) == count:
                return

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread, seen


def test_a_save_of_a_run_nobody_watches_sends_no_notification(
    store: PostgresStore, heard: psycopg.Connection[tuple[Any, ...]], postgres_url: str
) -> None:
    save(store, "quiet", 1)
    save(store, "quiet", 2)
    assert notices(heard) == []
    thread, seen = watching(store, "watched", 2)
    eventually(lambda: holding_watch(postgres_url, "watched"))
    save(store, "watched", 1)
    save(store, "quiet", 3)  # (still nobody's)
    save(store, "watched", 2)
    thread.join(BOUND)
    assert seen == make_events("watched", 1, 2)
    key = sql.run_key("watched")
    assert notices(heard) == [f"{key}:1", f"{key}:2"]
    eventually(lambda: not holding_watch(postgres_url, "watched"))  # the watch ended
    save(store, "watched", 3)
    assert notices(heard) == []


def test_a_watch_begun_while_a_save_that_did_not_notify_is_in_flight_yields_it(
    store: PostgresStore, postgres_url: str
) -> None:
    # The save's statement ran (and found nobody watching) but has not committed: the watch
    # waits for its commit before it reads, so it sees the save's event without a notice.
    snapshot, events = make_snapshot("r", 1, 1), make_events("r", 1, 1)
    changes = new_items(snapshot, None)
    arguments = _pg_save.arguments(
        snapshot,
        events,
        changes,
        expected_version=None,
        known_seq=0,
        known_stamp=None,
        stamp="in-flight",
        lease=(None, 0.0, 0.0),
    )
    with psycopg.connect(postgres_url, autocommit=True) as saving:
        saving.execute("BEGIN")
        result = _pg_exec.run(saving, _pg_save.statement(None, changes), arguments, set())
        assert _pg_save.lease_row(result) == (None, None)  # written, not committed
        thread, seen = watching(store, "r", 1)
        eventually(lambda: waiting_for_lock(postgres_url))  # the watch waits for the commit
        assert seen == []
        saving.execute("COMMIT")
        thread.join(BOUND)
    assert seen == events


def test_while_a_listener_is_open_every_save_notifies_and_a_second_one_takes_over(
    store: PostgresStore, heard: psycopg.Connection[tuple[Any, ...]]
) -> None:
    async def listeners() -> None:
        first = await store.listen()
        await asyncio.to_thread(save, store, "a", 1)
        second = await store.listen()  # queued behind the first
        await asyncio.to_thread(save, store, "b", 1)
        await first.close()
        await asyncio.to_thread(save, store, "a", 2)
        got = [note.payload async for note in second.notifies(timeout=QUIET)]
        await second.close()
        assert got == [sql.notice("b", 1), sql.notice("a", 2)]

    asyncio.run(asyncio.wait_for(listeners(), BOUND))
    assert notices(heard) == [sql.notice("a", 1), sql.notice("b", 1), sql.notice("a", 2)]
    save(store, "b", 2)  # both closed: nobody listens
    assert notices(heard) == []


def test_a_watch_held_up_by_a_save_that_never_commits_fails_after_the_lock_timeout(
    store: PostgresStore, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A save in flight in a server that stopped running holds its run's lock for good: the
    # watch fails (StoreError) instead of waiting for ever to start.
    monkeypatch.setattr(_pg_watch, "LOCK_TIMEOUT", 1)
    with psycopg.connect(postgres_url, autocommit=True) as stuck:
        stuck.execute("BEGIN")
        stuck.execute(
            "SELECT pg_advisory_xact_lock(%s, %s)", (sql.WATCHED_RUN, sql.watch_key("r"))
        )
        started = time.monotonic()
        with pytest.raises(StoreError, match="lock timeout"):
            next(store.watch("r", timeout=BOUND))
        assert time.monotonic() - started < BOUND
        stuck.execute("ROLLBACK")
    save(store, "r", 1)  # and once the lock is free, a watch starts and reads
    assert next(store.watch("r", timeout=BOUND)) == make_events("r", 1, 1)[0]
