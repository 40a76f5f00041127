"""A PostgreSQL server that accepts a call and never answers fails it after ``call_timeout``.

The store's backend is stopped (SIGSTOP) while a call waits on it: the server's own
timeouts cannot fire in a process that does not run, and the kernel still answers TCP.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

from agentfsm.errors import StoreError, StoreWriteError
from agentfsm.stores.postgres import DEFAULT_CALL_TIMEOUT, PostgresStore
from agentfsm.testing.store_conformance import make_events, make_snapshot

BOUND = 0.5
"""The stores' call_timeout here, in seconds."""

LIMIT = 10.0
"""Seconds any wait of these tests may take before it is a failure."""


def save(store: PostgresStore, run_id: str, n: int, expected: int | None) -> None:
    store.save(make_snapshot(run_id, n, n), make_events(run_id, n, 1), expected_version=expected)


def backend(store: PostgresStore) -> int:
    (conn,) = store._pool._idle
    return conn.info.backend_pid


@contextmanager
def stopped(pid: int) -> Iterator[None]:
    """The backend ``pid`` stopped, then continued (and gone, as its client closed)."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def gone(url: str, pid: int) -> None:
    """Wait until the backend ``pid`` has ended (it finds its client gone once continued)."""
    deadline = time.monotonic() + LIMIT
    with psycopg.connect(url, autocommit=True) as admin:
        while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchall():
            assert time.monotonic() < deadline
            time.sleep(0.01)


def test_a_save_nobody_answers_fails_after_the_bound_and_may_be_stored_after_all(
    postgres_url: str,
) -> None:
    with PostgresStore(postgres_url, max_size=1, call_timeout=BOUND) as store:
        save(store, "r", 1, None)
        pid = backend(store)
        with stopped(pid):
            started = time.monotonic()
            with pytest.raises(StoreWriteError) as caught:
                save(store, "r", 2, 1)
            took = time.monotonic() - started
        assert BOUND <= took < LIMIT
        assert caught.value.outcome_known is False
        assert f"did not answer within {BOUND:g} s" in str(caught.value)
        assert "whether it was stored is unknown" in str(caught.value)
        gone(postgres_url, pid)
        # The stopped backend had the save: woken, it may have committed it. Either way the
        # store holds one whole version, and goes on from it on a new connection.
        held = store.load("r")
        assert held in (make_snapshot("r", 1, 1), make_snapshot("r", 2, 2))
        assert held is not None
        assert store.events("r") == make_events("r", 1, held.version)
        save(store, "r", held.version + 1, held.version)
        assert store.load("r") == make_snapshot("r", held.version + 1, held.version + 1)


def test_a_read_nobody_answers_fails_after_the_bound(postgres_url: str) -> None:
    with PostgresStore(postgres_url, max_size=1, call_timeout=BOUND) as store:
        save(store, "r", 1, None)
        pid = backend(store)
        with stopped(pid):
            started = time.monotonic()
            with pytest.raises(StoreError, match=rf"did not answer within {BOUND:g} s"):
                store.load("r")
            assert BOUND <= time.monotonic() - started < LIMIT
        assert store.load("r") == make_snapshot("r", 1, 1)  # a new connection


def test_the_bound_is_a_minute_by_default_and_none_turns_it_off(postgres_url: str) -> None:
    assert DEFAULT_CALL_TIMEOUT == 60.0
    with PostgresStore(postgres_url) as store:
        assert store._pool._watchdog is not None
        assert store._pool._watchdog.bound == DEFAULT_CALL_TIMEOUT
    with PostgresStore(postgres_url, call_timeout=None) as store:
        assert store._pool._watchdog is None
        save(store, "r", 1, None)
    with pytest.raises(ValueError, match="call_timeout"):
        PostgresStore(postgres_url, call_timeout=-1)
