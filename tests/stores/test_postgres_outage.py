"""PostgresStore through a server crash (``pg_ctl stop -m immediate``) and its restart.

The server here is the module's own (the session's is shared by other tests): it is crashed
and started again on the same socket.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator

import psycopg
import pytest

from agentfsm.errors import StoreError, StoreWriteError
from agentfsm.states.events import Event
from agentfsm.stores.postgres import PostgresStore
from agentfsm.testing.postgres_server import TemporaryPostgres
from agentfsm.testing.store_conformance import make_events, make_snapshot


@pytest.fixture(scope="module")
def server() -> Iterator[TemporaryPostgres]:
    with TemporaryPostgres() as own:
        yield own


@pytest.fixture
def store(server: TemporaryPostgres) -> Iterator[PostgresStore]:
    with PostgresStore(server.new_database(), min_size=2, max_size=4, timeout=3.0) as opened:
        opened.save(make_snapshot("r1", 2, 1), make_events("r1", 1, 2), expected_version=None)
        yield opened


@pytest.fixture
def outage(server: TemporaryPostgres) -> Iterator[TemporaryPostgres]:
    """The server, crashed by the test; started again at the end if the test did not."""
    yield server
    if not server.data.joinpath("postmaster.pid").exists():
        server.restart()


def timed(call: object) -> tuple[float, BaseException | None]:
    assert callable(call)
    start = time.monotonic()
    try:
        call()
    except Exception as exc:
        return time.monotonic() - start, exc
    return time.monotonic() - start, None


def test_an_outage_is_a_store_error_at_once_and_the_first_call_after_it_succeeds(
    store: PostgresStore, outage: TemporaryPostgres
) -> None:
    outage.crash()

    took, error = timed(lambda: store.load("r1"))
    assert isinstance(error, StoreError), error
    assert took < 1.0  # one failed connection attempt, not the pool's 3 s wait
    assert "cannot reach the database" in str(error)
    took, error = timed(
        lambda: store.save(make_snapshot("r1", 3, 2), make_events("r1", 3, 1), expected_version=1)
    )
    assert isinstance(error, StoreWriteError), error
    assert took < 1.0

    outage.restart()

    took, error = timed(lambda: store.load("r1"))
    assert error is None
    assert took < 1.0  # no stale connection, no wait for a background reconnection
    store.save(make_snapshot("r1", 3, 2), make_events("r1", 3, 1), expected_version=1)
    assert store.events("r1") == make_events("r1", 1, 3)


def test_a_watch_reconnects_after_a_restart_and_goes_on_from_its_last_event(
    store: PostgresStore, outage: TemporaryPostgres
) -> None:
    seen: queue.Queue[Event | BaseException] = queue.Queue()

    def watch() -> None:
        try:
            for event in store.watch("r1", timeout=20.0):
                seen.put(event)
                if event.seq == 4:
                    return
        except BaseException as exc:
            seen.put(exc)

    watcher = threading.Thread(target=watch)
    watcher.start()
    first = [seen.get(timeout=10), seen.get(timeout=10)]
    assert first == make_events("r1", 1, 2)
    time.sleep(0.2)  # the watcher waits for a notification now

    outage.crash()
    outage.restart()
    store.save(make_snapshot("r1", 3, 2), make_events("r1", 3, 1), expected_version=1)
    store.save(make_snapshot("r1", 4, 3), make_events("r1", 4, 1), expected_version=2)

    later = [seen.get(timeout=10), seen.get(timeout=10)]
    watcher.join(timeout=10)
    assert later == make_events("r1", 3, 2)  # each event once, in order, none lost
    assert seen.empty()


def test_a_watch_whose_server_stays_away_is_a_store_error(
    store: PostgresStore, outage: TemporaryPostgres
) -> None:
    events = store.watch("r1", timeout=30.0, reconnect_timeout=1.0)
    assert [next(events), next(events)] == make_events("r1", 1, 2)
    outage.crash()

    took, error = timed(lambda: next(events))

    assert isinstance(error, StoreError), error
    assert not isinstance(error, psycopg.Error)
    assert "lost its connection" in str(error)
    assert 1.0 <= took < 3.0


def test_a_pool_whose_connections_are_all_in_use_fails_after_its_timeout(
    server: TemporaryPostgres,
) -> None:
    with PostgresStore(server.new_database(), max_size=1, timeout=0.2) as store:
        with store._pool.connection():  # the one connection, held
            took, error = timed(lambda: store.load("r1"))
        assert isinstance(error, StoreError)
        assert "all 1 connections stayed in use for 0.2 s" in str(error)
        assert 0.2 <= took < 1.0
        assert store.load("r1") is None  # given back: the next call has it


def test_unchecked_a_lost_connection_fails_one_call_and_drops_the_idle_ones(
    server: TemporaryPostgres,
) -> None:
    url = server.new_database()
    with PostgresStore(url, min_size=4, max_size=4, check_connections=False) as store:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        with pytest.raises(StoreError):
            store.list_runs()
        assert store.list_runs() == []  # not a second failure: the dead idle ones are gone


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"connect_timeout": 1}, "connect_timeout must be a whole number >= 2"),
        ({"connect_timeout": 2.5}, "connect_timeout must be a whole number >= 2"),
        ({"timeout": 0}, "timeout must be a number of seconds > 0"),
    ],
)
def test_timeouts_out_of_range_are_refused(
    server: TemporaryPostgres, options: dict[str, float], words: str
) -> None:
    with pytest.raises((ValueError, TypeError), match=words):
        PostgresStore(server.url(), **options)  # type: ignore[arg-type]
