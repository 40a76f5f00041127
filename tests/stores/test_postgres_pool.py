"""A PostgresStore's pool under several threads: a call waits for a connection, and no longer.

(Its timeout, with every connection held, is in test_postgres_outage.py.)
"""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from agentfsm.errors import StoreError
from agentfsm.stores.postgres import PostgresStore
from agentfsm.testing.store_conformance import make_events, make_snapshot

BOUND = 10.0
"""Seconds any wait of these tests may take before it is a failure."""


def test_a_call_waiting_for_a_connection_takes_the_one_given_back(postgres_url: str) -> None:
    with PostgresStore(postgres_url, max_size=1, timeout=BOUND) as store:
        store.save(make_snapshot("r", 1, 1), make_events("r", 1, 1), expected_version=None)
        loaded: list[object] = []
        with store._pool.connection() as held:
            reader = threading.Thread(target=lambda: loaded.append(store.load("r")))
            reader.start()
            while store._pool._waiting == 0:  # (the reader waits for the one connection)
                assert reader.is_alive()
                time.sleep(0.001)
            assert loaded == []
        reader.join(BOUND)
        assert loaded == [make_snapshot("r", 1, 1)]
        assert store._pool._idle == [held]  # the same connection, given back twice
        assert store._pool._in_use == 0


def test_closing_the_store_fails_a_call_waiting_for_a_connection_at_once(
    postgres_url: str,
) -> None:
    store = PostgresStore(postgres_url, max_size=1, timeout=BOUND)
    errors: list[BaseException] = []

    def load() -> None:
        try:
            store.load("r")
        except BaseException as exc:
            errors.append(exc)

    with store._pool.connection():
        waiter = threading.Thread(target=load)
        waiter.start()
        while store._pool._waiting == 0:
            assert waiter.is_alive()
            time.sleep(0.001)
        store.close()
        waiter.join(BOUND / 2)
        assert not waiter.is_alive()  # it ended while the connection was still held
    assert len(errors) == 1
    assert isinstance(errors[0], StoreError)
    assert "closed" in str(errors[0])


@pytest.mark.parametrize("threads", [6])
def test_more_threads_than_connections_each_save_their_runs(
    postgres_url: str, threads: int
) -> None:
    # Each thread saves its own run 5 times through a pool of 2: every save is stored, in
    # order, and the pool ends with no call counted in use and no more than 2 connections.
    saves = 5
    with PostgresStore(postgres_url, max_size=2, timeout=BOUND) as store:
        failures: list[BaseException] = []

        def work(run_id: str) -> None:
            try:
                for n in range(1, saves + 1):
                    snapshot = make_snapshot(run_id, n, n)
                    events = make_events(run_id, n, 1)
                    store.save(snapshot, events, expected_version=n - 1 or None)
            except BaseException as exc:
                failures.append(exc)

        workers = [threading.Thread(target=work, args=(f"r{n}",)) for n in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(BOUND)
        assert failures == []
        assert store._pool._in_use == 0
        assert store._pool._waiting == 0
        assert 1 <= len(store._pool._idle) <= 2
        for n in range(threads):
            assert store.load(f"r{n}") == make_snapshot(f"r{n}", saves, saves)
            assert store.events(f"r{n}") == make_events(f"r{n}", 1, saves)
    with psycopg.connect(postgres_url) as admin:  # and the store closed its connections
        (others,) = admin.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone() or (None,)
    assert others == 0
