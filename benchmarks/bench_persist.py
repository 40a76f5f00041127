"""What a store costs the Agent: µs per iteration with each store, and µs to resume a run.

Persist: the workload of `benchmarks.loops` (runs of `ITERATIONS` iterations) on an Agent
without a store, with a `MemoryStore`, a `SQLiteStore` at ``synchronous=NORMAL`` and
``FULL`` (fsync per save), and a `PostgresStore` on a PostgreSQL server this benchmark
starts (`TemporaryPostgres`, durable: ``fsync`` and ``synchronous_commit`` on, over a Unix
socket). The Agent saves by group commit, and on SQLite and PostgreSQL writes behind
(docs/persistence.md), so the extra cost per event is reported, and the durable-run ratio: a
run's time with the store over the same run's with none. Resume:
``Agent(…, store=…, run_id=…)`` of a finished run of `ITERATIONS` iterations, which loads
its snapshot and restores both machines. Saves per run: the stored version of a finished run
(one per save); fsyncs per run: the fsync'd commits of one run on SQLite FULL (the saves of one
write-behind hop share one, `SQLiteStore.save_many`); WAL pages per run: what one run's
commits write to SQLite's WAL (`wal_pages_per_run`). One more row runs the same workload on
SQLite FULL with the three tools declared idempotent (their saves go on behind the run); the
durable-run target (`benchmarks.targets`) names that row. The machine's load average is
recorded beside the medians (its disk and cores are shared: fsync latency varies).

The peer row: LangGraph's own PostgreSQL checkpointer (langgraph-checkpoint-postgres's
`PostgresSaver`) on the same workload and the same server, with ``durability="sync"`` (each
checkpoint written before the next step, as agentfsm does) and LangGraph's default
``"async"``; its ratio is to the same graph without a checkpointer, and its resume is
``graph.get_state`` of a finished thread. Interleaved repetitions, medians, one process;
the raw store operations are `bench_store`'s.

Every agentfsm run starts with its input in one call (``astart(PROMPT)``: the start and the
input in one save), the run with no store too.

Run: ``.venv/bin/python benchmarks/bench_persist.py [--json PATH] [--quick] [--sqlite]``;
``--sqlite`` measures only no store and the SQLite rows (no PostgreSQL server, no peer), to
compare two versions of the SQLite path quickly (the durable-run target's row included).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentfsm import Agent, Event, MemoryStore, RunStore, SQLiteStore, Tool
from agentfsm.stores.postgres import PostgresStore
from agentfsm.testing.postgres_server import TemporaryPostgres
from benchmarks.loops.agentfsm_loop import TOOLS, BenchModel, make_tools
from benchmarks.loops.workload import FINAL, PROMPT, Listener
from benchmarks.targets import durable_run_target, postgres_peer_target

IDEMPOTENT_TOOLS = make_tools(fast=False, idempotent=True)
"""The same three tools declared idempotent: no save of its own before each body (I11);
validated by jsonschema, as `TOOLS` are (the ratio's run with no store uses those)."""
IDEMPOTENT = "SQLiteStore FULL, idempotent tools"
"""The row of the same run on SQLite FULL with `IDEMPOTENT_TOOLS` (ratio to no store)."""

ITERATIONS = 10
REPEATS = 7
RUNS = 8  # per sample
RESUMES = 40  # per sample


class EventCounter(Listener):
    """Counts the `Event`s delivered (what the Agent saves), not the trace entries."""

    __slots__ = ()

    def __call__(self, event: object) -> None:
        """Be told of one event or trace entry."""
        if isinstance(event, Event):
            self.events += 1


def agent(
    store: RunStore | None,
    listener: Listener,
    run_id: str | None = None,
    tools: list[Tool] = TOOLS,
) -> Agent:
    """An Agent of the workload on ``store``."""
    return Agent(
        BenchModel(ITERATIONS),
        tools,
        listeners=[listener],
        max_iterations=ITERATIONS,
        ask_user=False,
        store=store,
        run_id=run_id,
    )


def run_seconds(store: RunStore | None, runs: int, tools: list[Tool] = TOOLS) -> tuple[float, int]:
    """Seconds for ``runs`` whole runs on ``store``, and the events each run emitted."""
    listener = EventCounter()

    async def many() -> float:
        start = time.perf_counter()
        for _ in range(runs):
            one = agent(store, listener, tools=tools)
            outcome = await one.astart(PROMPT)  # (start and input: one save)
            if outcome.reply != FINAL:
                raise AssertionError(f"a run answered {outcome.reply!r}")
        return time.perf_counter() - start

    seconds = asyncio.run(many())
    return seconds, listener.events // runs


def resume_seconds(store: RunStore, run_id: str, resumes: int) -> float:
    """Seconds per resume of the stored run ``run_id``."""
    listener = Listener()
    start = time.perf_counter()
    for _ in range(resumes):
        resumed = agent(store, listener, run_id)
        if len(resumed.messages) < ITERATIONS:
            raise AssertionError("the run was not restored")
    return (time.perf_counter() - start) / resumes


def open_stores(
    directory: Path, server: TemporaryPostgres | None, stack: ExitStack
) -> dict[str, Any]:
    """The candidates: no store, then each store, closed by ``stack``.

    Without a ``server``, no store and SQLite's only.
    """
    stores: dict[str, RunStore | None] = {"no store": None}
    if server is not None:
        stores["MemoryStore"] = MemoryStore()
    stores["SQLiteStore NORMAL"] = SQLiteStore(directory / "normal.db", synchronous="NORMAL")
    stores["SQLiteStore FULL"] = SQLiteStore(directory / "full.db")
    if server is not None:
        stores["PostgresStore"] = PostgresStore(server.new_database())
    stores[IDEMPOTENT] = stores["SQLiteStore FULL"]  # the same file, idempotent tools
    for store in set(stores.values()):
        if store is not None:
            stack.enter_context(store)
    return stores


@contextmanager
def langgraph_candidates(server: TemporaryPostgres) -> Iterator[dict[str, Any]]:
    """LangGraph without a checkpointer and with its PostgresSaver, sync and async."""
    from langgraph.checkpoint.postgres import PostgresSaver

    from benchmarks.loops.langgraph_loop import make_sync

    with PostgresSaver.from_conn_string(server.new_database()) as saver:
        saver.setup()
        yield {
            "LangGraph, no checkpointer": (make_sync(Listener()), None),
            "LangGraph PostgresSaver, durability=sync": (
                make_sync(Listener(), saver=saver, durability="sync", prefix="sync"),
                saver,
            ),
            "LangGraph PostgresSaver, durability=async": (
                make_sync(Listener(), saver=saver, durability="async", prefix="async"),
                saver,
            ),
        }


def langgraph_seconds(run: Callable[[int], str], runs: int) -> float:
    start = time.perf_counter()
    for _ in range(runs):
        if run(ITERATIONS) != FINAL:
            raise AssertionError("LangGraph answered otherwise")
    return time.perf_counter() - start


def langgraph_resume_seconds(saver: Any, thread: str, resumes: int) -> float:
    """Seconds per ``get_state`` of a finished thread (what a resume reads)."""
    from benchmarks.loops.langgraph_loop import build

    graph = build(saver)
    config = {"configurable": {"thread_id": thread}}
    start = time.perf_counter()
    for _ in range(resumes):
        if not graph.get_state(config).values["messages"]:
            raise AssertionError("the thread was not restored")
    return (time.perf_counter() - start) / resumes


def fsyncs_per_run(directory: Path, tools: list[Tool]) -> int:
    """The fsync'd commits one run makes on a fresh SQLite FULL file (its connection traced).

    A commit is fsync'd unless ``synchronous`` was NORMAL when it ran: `SQLiteStore.save_many`
    commits all but the last save of a hop without one (their durability is the last one's).
    """
    statements: list[str] = []

    def traced(path: Path) -> sqlite3.Connection:
        connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        connection.set_trace_callback(statements.append)
        return connection

    with SQLiteStore(directory / "fsyncs.db", connect=traced) as store:
        statements.clear()
        one = agent(store, Listener(), tools=tools)
        one.start(PROMPT)
        one.close()
    fsyncs, level, writing = 0, "FULL", False
    for statement in statements:
        if statement.startswith("PRAGMA synchronous="):
            level = statement.partition("=")[2]
        elif statement.startswith("BEGIN"):
            writing = statement == "BEGIN IMMEDIATE"
        elif statement == "COMMIT" and writing:
            fsyncs += level == "FULL"
    (directory / "fsyncs.db").unlink()
    return fsyncs


WARM_RUNS = 100
"""Runs stored before WAL pages are counted, so that a run lands in tables of some size."""


def wal_pages_per_run(directory: Path, tools: list[Tool], runs: int = 20) -> float:
    """The WAL pages one run writes on SQLite FULL, counted from the WAL file's size.

    `WARM_RUNS` runs are stored first; the WAL is then checkpointed and truncated, and
    ``runs`` more write it with no checkpoint (its connection's ``wal_autocheckpoint`` off):
    a frame is a page and its 24-byte header, after the file's 32-byte header. What a run's
    commits write, and (as distinct pages) what SQLite's checkpoints copy back.
    """
    path = directory / "wal.db"

    def no_checkpoints(where: Path) -> sqlite3.Connection:
        connection = sqlite3.connect(where, isolation_level=None, check_same_thread=False)
        connection.execute("PRAGMA wal_autocheckpoint=0")
        return connection

    def run(store: SQLiteStore) -> None:
        one = agent(store, Listener(), tools=tools)
        one.start(PROMPT)
        one.close()

    with SQLiteStore(path, connect=no_checkpoints) as store:
        for _ in range(WARM_RUNS):
            run(store)
        with sqlite3.connect(path, isolation_level=None) as other:
            other.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            page_size = int(other.execute("PRAGMA page_size").fetchone()[0])
        other.close()
        for _ in range(runs):
            run(store)
        frames = (Path(f"{path}-wal").stat().st_size - 32) / (page_size + 24)
    path.unlink()
    return frames / runs


FSYNCS = 100  # per sample


def fsync_commit_seconds(path: Path) -> float:
    """Median seconds of one SQLite commit of one small row, WAL, ``synchronous=FULL``.

    What the disk asks of each save on SQLite FULL whatever the store does (one fsync), for
    the reader to weigh a durable run's saves against (the disk is shared: fsync latency
    varies from one moment to the next, so this is not subtracted from anything).
    """
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")
        connection.execute("CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v TEXT)")
        for _ in range(FSYNCS):  # a WAL as long as the measured commits need, then reused
            connection.execute("INSERT INTO t (v) VALUES (?)", ("x" * 200,))
        connection.execute("PRAGMA wal_checkpoint(RESTART)")  # (as a store's WAL, in use)
        times = []
        for _ in range(FSYNCS):
            start = time.perf_counter()
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("INSERT INTO t (v) VALUES (?)", ("x" * 200,))
            connection.execute("COMMIT")
            times.append(time.perf_counter() - start)
        return statistics.median(times)
    finally:
        connection.close()


def measure(directory: Path, repeats: int, *, sqlite_only: bool = False) -> dict[str, object]:
    """µs per iteration per store, the extra per saved event, µs per resume; the peers."""
    with ExitStack() as stack:
        server = None if sqlite_only else stack.enter_context(TemporaryPostgres(durable=True))
        stores = open_stores(directory, server, stack)
        peers = {} if server is None else stack.enter_context(langgraph_candidates(server))
        results = _measure(stores, peers, repeats, directory / "fsync.db")
        results["fsyncs_per_run"] = {
            name: fsyncs_per_run(directory, tools_of(name))
            for name in ("SQLiteStore FULL", IDEMPOTENT)
        }
        results["wal_pages_per_run"] = wal_pages_per_run(directory, IDEMPOTENT_TOOLS)
        return results
    raise AssertionError("unreachable")  # pragma: no cover - mypy: ExitStack may swallow


def _measure(
    stores: dict[str, RunStore | None], peers: dict[str, Any], repeats: int, fsync_db: Path
) -> dict[str, object]:
    per_iteration: dict[str, list[float]] = {name: [] for name in [*stores, *peers]}
    events = 0
    resume: dict[str, list[float]] = {
        name: []
        for name in [*stores, *peers]
        if name not in ("no store", "LangGraph, no checkpointer")
    }
    finished: dict[str, str] = {}
    saves: dict[str, int] = {}
    for name, store in stores.items():
        if store is not None:
            done = agent(store, Listener(), tools=tools_of(name))
            done.start(PROMPT)
            done.close()
            finished[name] = done.run_id
            stored = store.load(done.run_id)
            saves[name] = 0 if stored is None else stored.version  # one version per save
    for name, (run, saver) in peers.items():
        if saver is not None:
            run(ITERATIONS)
            finished[name] = f"{name.rsplit('=', 1)[-1]}-0"  # the runner's first thread
    fsync_commit: list[float] = []
    for _ in range(repeats):
        fsync_commit.append(fsync_commit_seconds(fsync_db) * 1e6)
        for name, store in stores.items():  # interleaved
            seconds, events = run_seconds(store, RUNS, tools_of(name))
            per_iteration[name].append(seconds / RUNS / ITERATIONS * 1e6)
            if store is not None:
                resume[name].append(resume_seconds(store, finished[name], RESUMES) * 1e6)
        for name, (run, saver) in peers.items():
            seconds = langgraph_seconds(run, RUNS)
            per_iteration[name].append(seconds / RUNS / ITERATIONS * 1e6)
            if saver is not None:
                resumed = langgraph_resume_seconds(saver, finished[name], RESUMES)
                resume[name].append(resumed * 1e6)
    medians = {n: statistics.median(v) for n, v in per_iteration.items()}
    bare = medians["no store"]
    langgraph_bare = medians.get("LangGraph, no checkpointer", 1.0)
    return {
        "iterations": ITERATIONS,
        "events_per_run": events,
        "per_iteration_us": medians,
        "per_saved_event_us": {
            n: (medians[n] - bare) * ITERATIONS / max(events, 1) for n in stores if n != "no store"
        },
        "durable_run_ratio": {
            n: medians[n] / (langgraph_bare if n.startswith("LangGraph") else bare)
            for n in medians
        },
        "resume_us": {n: statistics.median(v) for n, v in resume.items()},
        "saves_per_run": saves,
        "postgres_to_peer": paired(per_iteration, "PostgresStore", PEER),
        "fsync_commit_us": min(fsync_commit),  # the quietest sample: a floor
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }


PEER = "LangGraph PostgresSaver, durability=sync"
"""The peer a durable PostgreSQL run is held to (each checkpoint written before going on)."""


def paired(samples: dict[str, list[float]], ours: str, theirs: str) -> float | None:
    """The median of ``ours`` over ``theirs``, repetition by repetition (None: not measured)."""
    if not samples.get(ours) or not samples.get(theirs):
        return None
    return statistics.median(a / b for a, b in zip(samples[ours], samples[theirs], strict=True))


def tools_of(candidate: str) -> list[Tool]:
    """The tools ``candidate`` runs with."""
    return IDEMPOTENT_TOOLS if candidate == IDEMPOTENT else TOOLS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results here as JSON")
    parser.add_argument("--quick", action="store_true", help="3 repetitions, for a smoke run")
    parser.add_argument(
        "--sqlite", action="store_true", help="only no store and the SQLite rows (no server)"
    )
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        results = measure(
            Path(directory), 3 if options.quick else REPEATS, sqlite_only=options.sqlite
        )
    repeats = 3 if options.quick else REPEATS
    print(
        f"Agent with a store: runs of {ITERATIONS} iterations, {results['events_per_run']} "
        f"events each; medians of {repeats} repetitions"
    )
    print(
        f"{'store':<42} {'µs/iteration':>13} {'x no store':>10} {'µs/saved event':>15} "
        f"{'µs/resume':>10} {'saves/run':>9}"
    )
    for name, micros in results["per_iteration_us"].items():  # type: ignore[attr-defined]
        saved = results["per_saved_event_us"].get(name)  # type: ignore[attr-defined]
        resumed = results["resume_us"].get(name)  # type: ignore[attr-defined]
        ratio = results["durable_run_ratio"][name]  # type: ignore[index]
        saves = results["saves_per_run"].get(name, "")  # type: ignore[attr-defined]
        print(
            f"{name:<42} {micros:>13.1f} {ratio:>10.2f} "
            f"{'' if saved is None else f'{saved:.1f}':>15} "
            f"{'' if resumed is None else f'{resumed:.1f}':>10} {saves:>9}"
        )
    fsyncs = ", ".join(f"{n} {c}" for n, c in results["fsyncs_per_run"].items())  # type: ignore[attr-defined]
    print(f"fsync'd commits per run: {fsyncs}")
    print(f"WAL pages per run ({IDEMPOTENT}): {results['wal_pages_per_run']:.1f}")
    fsync = results["fsync_commit_us"]
    print(f"one fsync'd SQLite commit of one row: {fsync:.0f} µs (the quietest median)")
    print(f"load average (1 min) at the end: {results['load_average']}")
    for target in (durable_run_target(results), postgres_peer_target(results)):
        if target is not None:
            verdict = "met" if target.met else "NOT met"
            print(f"target: {target.goal}: {target.measured}, {verdict}")
    if options.json:
        options.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
