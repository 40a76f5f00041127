"""store.watch: a run's events as they are stored, from any process, each once and in order."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentfsm import MemoryStore, SQLiteStore
from agentfsm.stores import RunStore, WatchableStore
from agentfsm.stores.postgres import PostgresStore
from agentfsm.stores.urls import open_store
from agentfsm.testing.store_conformance import make_events, make_snapshot

ROOT = Path(__file__).resolve().parents[2]


class FakeTime:
    """A clock that moves only when slept on, and does something at each sleep."""

    def __init__(self, on_sleep: Iterator[None]) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []
        self.on_sleep = on_sleep

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        next(self.on_sleep, None)

    def clock(self) -> float:
        return self.now


def saves(store: RunStore, batches: list[int]) -> Iterator[None]:
    """Save the batches of events one by one, each when the watcher sleeps."""
    seq = 0
    for version, count in enumerate(batches, 1):
        yield
        store.save(
            make_snapshot("r1", seq + count, version),
            make_events("r1", seq + 1, count),
            expected_version=version - 1 or None,
        )
        seq += count


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_polling_watch_yields_each_event_once_in_order_and_stops_when_idle(
    tmp_path: Path, kind: str
) -> None:
    with open_store("memory:" if kind == "memory" else str(tmp_path / "runs.db")) as store:
        assert isinstance(store, (MemoryStore, SQLiteStore))
        fake = FakeTime(saves(store, [2, 0, 3, 1]))
        seen = list(
            store.watch("r1", timeout=1.0, interval=0.25, sleep=fake.sleep, clock=fake.clock)
        )
    assert seen == make_events("r1", 1, 6)
    # one sleep before each save, then idle for the timeout: 4 x 0.25 s
    assert fake.sleeps == [0.25] * 9
    assert fake.now == 2.25


def test_a_polling_watch_starts_after_the_seq_given(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "runs.db") as store:
        store.save(make_snapshot("r1", 3, 1), make_events("r1", 1, 3), expected_version=None)
        fake = FakeTime(iter(()))
        seen = list(store.watch("r1", after_seq=1, timeout=0, sleep=fake.sleep, clock=fake.clock))
    assert seen == make_events("r1", 2, 2)
    assert fake.sleeps == []


def test_every_store_shipped_is_watchable(tmp_path: Path, postgres_url: str) -> None:
    with (
        MemoryStore() as memory,
        SQLiteStore(tmp_path / "runs.db") as sqlite,
        PostgresStore(postgres_url) as postgres,
    ):
        assert all(isinstance(s, WatchableStore) for s in (memory, sqlite, postgres))


def test_a_postgres_watch_with_no_timeout_left_returns_what_is_stored(postgres_url: str) -> None:
    with PostgresStore(postgres_url) as store:
        assert list(store.watch("r1", timeout=0)) == []
        store.save(make_snapshot("r1", 3, 1), make_events("r1", 1, 3), expected_version=None)
        assert list(store.watch("r1", after_seq=1, timeout=0)) == make_events("r1", 2, 2)


def test_a_postgres_watch_misses_nothing_saved_between_its_read_and_its_wait(
    postgres_url: str,
) -> None:
    """An event committed right after the catch-up read is announced to the watcher."""
    with PostgresStore(postgres_url) as store, PostgresStore(postgres_url) as writer:
        writer.save(make_snapshot("r1", 2, 1), make_events("r1", 1, 2), expected_version=None)
        read = store._rows_after  # the watch's read of the stored events

        def read_then_save(run_id: str, after_seq: int = 0) -> list[tuple[object, ...]]:
            found = read(run_id, after_seq)
            if after_seq == 0:  # the catch-up: another writer commits before we wait
                writer.save(
                    make_snapshot("r2", 1, 1), make_events("r2", 1, 1), expected_version=None
                )
                writer.save(make_snapshot("r1", 3, 2), make_events("r1", 3, 1), expected_version=1)
            return found

        store._rows_after = read_then_save  # type: ignore[method-assign]
        seen = []
        for event in store.watch("r1", timeout=30):
            seen.append(event)
            if event.seq == 3:
                break
    assert seen == make_events("r1", 1, 3)


WRITER = """
import sys
from agentfsm.stores.urls import open_store
from tests.stores.durable_support import agent
with open_store(sys.argv[1]) as store:
    the_agent = agent(store, "trip")
    the_agent.start()
    the_agent.submit("Plan my trip")
"""


def test_a_watch_sees_a_run_another_process_drives_live(store_url: str) -> None:
    with open_store(store_url) as store:
        assert isinstance(store, WatchableStore)
        writer = subprocess.Popen([sys.executable, "-c", WRITER, store_url], cwd=ROOT)
        try:
            seen = []
            for event in store.watch("trip", timeout=60):
                seen.append(event)
                if event.event == "complete":
                    break
        finally:
            assert writer.wait(timeout=60) == 0
        stored = store.events("trip")
    assert seen == stored
    assert [event.seq for event in seen] == list(range(1, len(stored) + 1))
