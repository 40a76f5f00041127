"""µs to persist one transition and to load a run: SQLite and PostgreSQL against memory.

Persist: one `save` of one event and a snapshot with 4 messages (what the agent will do at
every transition). Load: one `load` of a run whose snapshot has 50 messages. SQLite runs with
``synchronous=FULL`` (the default: fsync per save) and ``NORMAL`` in a temporary directory,
PostgreSQL on a durable server of its own (`TemporaryPostgres`, over a Unix socket);
all candidates run in the same process, medians of several repetitions, so the ratios are
what matters (fsync cost depends on the disk).

Run: ``.venv/bin/python benchmarks/bench_store.py``.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentfsm.states import Event, Message
from agentfsm.states.names import MachineName
from agentfsm.stores import MemoryStore, RunStore, Snapshot, SQLiteStore
from agentfsm.stores.postgres import PostgresStore
from agentfsm.testing.postgres_server import TemporaryPostgres
from agentfsm.testing.store_conformance import make_snapshot

REPEATS = 7
SAVES = 200  # per repetition and candidate
LOADS = 500


def transitions(run_id: str, count: int) -> list[tuple[Snapshot, Event]]:
    base = make_snapshot(run_id, 0, 1, messages=4)
    return [
        (
            base.model_copy(update={"seq": n, "version": n}),
            Event(
                seq=n,
                run_id=run_id,
                machine=MachineName.LOOP,
                event="model_replied",
                source="thinking",
                target="acting",
                at=1_700_000_000.0 + n,
                data={"tool_calls": 1},
            ),
        )
        for n in range(1, count + 1)
    ]


def time_saves(store: RunStore, repetition: int) -> float:
    batch = transitions(f"save-{repetition}", SAVES)
    start = time.perf_counter()
    for snapshot, event in batch:
        store.save(snapshot, [event], expected_version=snapshot.version - 1 or None)
    return (time.perf_counter() - start) / SAVES * 1e6


def time_loads(store: RunStore, repetition: int) -> float:
    run_id = f"load-{repetition}"
    snapshot = make_snapshot(run_id, 0, 1, messages=1).model_copy(
        update={"messages": tuple(Message.user(f"message {n} " * 8) for n in range(50))}
    )
    store.save(snapshot, [], expected_version=None)
    start = time.perf_counter()
    for _ in range(LOADS):
        store.load(run_id)
    return (time.perf_counter() - start) / LOADS * 1e6


def measure(
    stores: dict[str, RunStore], timer: Callable[[RunStore, int], float]
) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in stores}
    for repetition in range(REPEATS):
        for name, store in stores.items():  # interleaved, so drift hits all alike
            samples[name].append(timer(store, repetition))
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    with tempfile.TemporaryDirectory() as directory, TemporaryPostgres(durable=True) as server:
        stores: dict[str, RunStore] = {
            "MemoryStore": MemoryStore(),
            "SQLiteStore FULL": SQLiteStore(Path(directory) / "full.db"),
            "SQLiteStore NORMAL": SQLiteStore(Path(directory) / "normal.db", synchronous="NORMAL"),
            "PostgresStore": PostgresStore(server.new_database()),
        }
        try:
            results = {
                "persist one transition": measure(stores, time_saves),
                "load a run of 50 messages": measure(stores, time_loads),
            }
        finally:
            for store in stores.values():
                store.close()
    for title, numbers in results.items():
        memory = numbers["MemoryStore"]
        print(f"{title} (median of {REPEATS}):")
        for name, micros in numbers.items():
            print(f"  {name:<20} {micros:9.1f} µs   {micros / memory:7.1f}x MemoryStore")


if __name__ == "__main__":
    main()
