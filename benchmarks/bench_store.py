"""µs to persist one transition and to load a run: SQLite and PostgreSQL against memory.

Persist: one `save` of one event and a snapshot with 4 messages (what the agent will do at
every transition). Load: one `load` of a run whose snapshot has 50 messages. SQLite runs with
``synchronous=FULL`` (the default: fsync per save) and ``NORMAL`` in a temporary directory,
PostgreSQL on a durable server of its own (`TemporaryPostgres`, over a Unix socket);
all candidates run in the same process, medians of several repetitions, so the ratios are
what matters (fsync cost depends on the disk).

PostgreSQL's floor: what the server asks of any durable write at all, one ``INSERT`` of one
small row and its ``COMMIT`` in one round trip (an autocommit connection of the same kind, a
Unix socket, ``fsync`` and ``synchronous_commit`` on), interleaved with the `PostgresStore`
saves on the same server, repetition by repetition: the row ``save / floor`` is the median of
each repetition's ratio. Round trips per save are counted in libpq's protocol trace of the
store's one connection (each ends with the server's ``ReadyForQuery``), and the client's CPU
time per operation (this process's, the thread's wait for the server excluded) beside each.

Run: ``.venv/bin/python benchmarks/bench_store.py [--json PATH] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import psycopg

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
    stores: dict[str, RunStore], timer: Callable[[RunStore, int], float], repeats: int = REPEATS
) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in stores}
    for repetition in range(repeats):
        for name, store in stores.items():  # interleaved, so drift hits all alike
            samples[name].append(timer(store, repetition))
    return {name: statistics.median(values) for name, values in samples.items()}


FLOOR_ROW = "x" * 200
"""The floor's row: a small one (a save writes a few hundred bytes more)."""


def time_floor(connection: psycopg.Connection[Any], repetition: int) -> float:
    """µs per ``INSERT`` of one row with its ``COMMIT``: one round trip (autocommit)."""
    start = time.perf_counter()
    for _ in range(SAVES):
        connection.execute("INSERT INTO floor (v) VALUES (%s)", (FLOOR_ROW,))
    return (time.perf_counter() - start) / SAVES * 1e6


def client_cpu(timer: Callable[[], float]) -> tuple[float, float]:
    """``timer()``'s µs per operation, and this process's CPU µs per operation meanwhile."""
    start = time.process_time()
    micros = timer()
    return micros, (time.process_time() - start) / SAVES * 1e6


def round_trips_per_save(server: TemporaryPostgres, saves: int = 20) -> float:
    """The round trips of one `PostgresStore` save, counted in libpq's protocol trace.

    On a store of one connection, after a first save or two (a statement is prepared on a
    connection's first use of it: one round trip more, once).
    """
    with PostgresStore(server.new_database(), max_size=1) as store:
        batch = transitions("trips", saves + 2)
        for snapshot, event in batch[:2]:
            store.save(snapshot, [event], expected_version=snapshot.version - 1 or None)
        (connection,) = store._pool._idle
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "trace"
            with path.open("w") as trace:
                connection.pgconn.trace(trace.fileno())
                for snapshot, event in batch[2:]:
                    store.save(snapshot, [event], expected_version=snapshot.version - 1)
                connection.pgconn.untrace()
            lines = path.read_text().splitlines()
    ready = sum("\tB\t" in line and "ReadyForQuery" in line for line in lines)
    return ready / saves


def measure_floor(server: TemporaryPostgres, repeats: int = REPEATS) -> dict[str, float]:
    """A `PostgresStore` save against the server's floor, interleaved; round trips per save."""
    floor_us, save_us, ratios, floor_cpu, save_cpu = [], [], [], [], []
    with (
        PostgresStore(server.new_database()) as store,
        psycopg.connect(server.new_database(), autocommit=True) as connection,
    ):
        connection.execute("CREATE TABLE floor (k bigserial PRIMARY KEY, v text NOT NULL)")
        for repetition in range(repeats):
            first_floor = repetition % 2 == 0  # (which goes first alternates)
            floor_timer = partial(time_floor, connection, repetition)
            floor, cpu = client_cpu(floor_timer) if first_floor else (0.0, 0.0)
            save, cpu_of_save = client_cpu(partial(time_saves, store, 1000 + repetition))
            if not first_floor:
                floor, cpu = client_cpu(floor_timer)
            floor_cpu.append(cpu)
            save_cpu.append(cpu_of_save)
            floor_us.append(floor)
            save_us.append(save)
            ratios.append(save / floor)
    return {
        "floor_us": statistics.median(floor_us),
        "save_us": statistics.median(save_us),
        "ratio": statistics.median(ratios),
        "round_trips_per_save": round_trips_per_save(server),
        "floor_client_cpu_us": statistics.median(floor_cpu),
        "save_client_cpu_us": statistics.median(save_cpu),
    }


THREADS = 8
"""Threads saving their own runs at once, in `measure_concurrent`."""


def concurrent_saves(store: PostgresStore, repetition: int, saves: int = 100) -> float:
    """Saves per second of `THREADS` threads, each saving a run of its own ``saves`` times."""
    batches = [transitions(f"many-{repetition}-{n}", saves) for n in range(THREADS)]

    def work(batch: list[tuple[Snapshot, Event]]) -> None:
        for snapshot, event in batch:
            store.save(snapshot, [event], expected_version=snapshot.version - 1 or None)

    threads = [threading.Thread(target=work, args=(batch,)) for batch in batches]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return THREADS * saves / (time.perf_counter() - start)


def measure_concurrent(server: TemporaryPostgres, repeats: int = REPEATS) -> dict[str, float]:
    """Saves per second of `THREADS` threads, while nobody listens and while a listener does.

    A save that notifies holds a lock of the whole server from its commit until its WAL is
    flushed; a listener (`PostgresStore.listen`) makes every save notify.
    """
    quiet, listened = [], []
    with PostgresStore(server.new_database(), min_size=THREADS, max_size=THREADS) as store:

        async def listening(repetition: int) -> float:
            conn = await store.listen()
            try:
                return await asyncio.to_thread(concurrent_saves, store, repetition)
            finally:
                await conn.close()

        for repetition in range(repeats):
            quiet.append(concurrent_saves(store, 2 * repetition))
            listened.append(asyncio.run(listening(2 * repetition + 1)))
    return {
        "threads": THREADS,
        "unwatched_per_s": statistics.median(quiet),
        "listened_per_s": statistics.median(listened),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results here as JSON")
    parser.add_argument("--quick", action="store_true", help="3 repetitions, for a smoke run")
    options = parser.parse_args()
    repeats = 3 if options.quick else REPEATS
    with tempfile.TemporaryDirectory() as directory, TemporaryPostgres(durable=True) as server:
        stores: dict[str, RunStore] = {
            "MemoryStore": MemoryStore(),
            "SQLiteStore FULL": SQLiteStore(Path(directory) / "full.db"),
            "SQLiteStore NORMAL": SQLiteStore(Path(directory) / "normal.db", synchronous="NORMAL"),
            "PostgresStore": PostgresStore(server.new_database()),
        }
        try:
            results = {
                "persist one transition": measure(stores, time_saves, repeats),
                "load a run of 50 messages": measure(stores, time_loads, repeats),
            }
        finally:
            for store in stores.values():
                store.close()
        floor = measure_floor(server, repeats)
        floor.update(measure_concurrent(server, repeats))
    for title, numbers in results.items():
        memory = numbers["MemoryStore"]
        print(f"{title} (median of {repeats}):")
        for name, micros in numbers.items():
            print(f"  {name:<20} {micros:9.1f} µs   {micros / memory:7.1f}x MemoryStore")
    print(
        f"PostgreSQL floor (INSERT one row + COMMIT, one round trip, fsync on): "
        f"{floor['floor_us']:.1f} µs; a PostgresStore save {floor['save_us']:.1f} µs: "
        f"{floor['ratio']:.2f}x the floor (paired median of {repeats}); "
        f"{floor['round_trips_per_save']:g} round trip(s) per save; client CPU "
        f"{floor['floor_client_cpu_us']:.1f} µs per INSERT, {floor['save_client_cpu_us']:.1f} "
        "µs per save"
    )
    print(
        f"{floor['threads']:g} threads saving their own runs: "
        f"{floor['unwatched_per_s']:,.0f} saves/s with nobody watching, "
        f"{floor['listened_per_s']:,.0f} while a listener makes every save notify"
    )
    if options.json:
        options.json.write_text(json.dumps({"operations": results, "postgres_floor": floor}))


if __name__ == "__main__":
    main()
