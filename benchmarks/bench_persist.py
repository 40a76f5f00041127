"""What a store costs the Agent: µs per iteration with each store, and µs to resume a run.

Persist: the workload of `benchmarks.loops` (runs of `ITERATIONS` iterations) on an Agent
without a store, with a `MemoryStore`, and with a `SQLiteStore` at ``synchronous=NORMAL``
and ``FULL`` (fsync per save). The Agent saves its snapshot and the new event at every
event, so the extra cost per saved event is reported too. Resume: ``Agent(…, store=…,
run_id=…)`` of a finished run of `ITERATIONS` iterations, which loads its snapshot and
restores both machines where they were. Interleaved repetitions, medians, one process;
the raw store operations are `bench_store`'s.

Run: ``.venv/bin/python benchmarks/bench_persist.py [--json PATH] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentfsm import Agent, Event, MemoryStore, RunStore, SQLiteStore
from benchmarks.loops.agentfsm_loop import TOOLS, BenchModel
from benchmarks.loops.workload import FINAL, PROMPT, Listener

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


def agent(store: RunStore | None, listener: Listener, run_id: str | None = None) -> Agent:
    """An Agent of the workload on ``store``."""
    return Agent(
        BenchModel(ITERATIONS),
        TOOLS,
        listeners=[listener],
        max_iterations=ITERATIONS,
        ask_user=False,
        store=store,
        run_id=run_id,
    )


def run_seconds(store: RunStore | None, runs: int) -> tuple[float, int]:
    """Seconds for ``runs`` whole runs on ``store``, and the events each run emitted."""
    listener = EventCounter()

    async def many() -> float:
        start = time.perf_counter()
        for _ in range(runs):
            one = agent(store, listener)
            await one.astart()
            outcome = await one.asubmit(PROMPT)
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


def measure(directory: Path, repeats: int) -> dict[str, object]:
    """µs per iteration per store, the extra per saved event, and µs per resume."""
    stores: dict[str, RunStore | None] = {
        "no store": None,
        "MemoryStore": MemoryStore(),
        "SQLiteStore NORMAL": SQLiteStore(directory / "normal.db", synchronous="NORMAL"),
        "SQLiteStore FULL": SQLiteStore(directory / "full.db"),
    }
    per_iteration: dict[str, list[float]] = {name: [] for name in stores}
    events = 0
    resume: dict[str, list[float]] = {name: [] for name in stores if stores[name] is not None}
    finished: dict[str, str] = {}
    for name, store in stores.items():
        if store is not None:
            done = agent(store, Listener())
            done.start()
            done.submit(PROMPT)
            done.close()
            finished[name] = done.run_id
    try:
        for _ in range(repeats):
            for name, store in stores.items():  # interleaved
                seconds, events = run_seconds(store, RUNS)
                per_iteration[name].append(seconds / RUNS / ITERATIONS * 1e6)
                if store is not None:
                    resume[name].append(resume_seconds(store, finished[name], RESUMES) * 1e6)
    finally:
        for store in stores.values():
            if store is not None:
                store.close()
    bare = statistics.median(per_iteration["no store"])
    return {
        "iterations": ITERATIONS,
        "events_per_run": events,
        "per_iteration_us": {n: statistics.median(v) for n, v in per_iteration.items()},
        "per_saved_event_us": {
            n: (statistics.median(v) - bare) * ITERATIONS / max(events, 1)
            for n, v in per_iteration.items()
            if n != "no store"
        },
        "resume_us": {n: statistics.median(v) for n, v in resume.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results here as JSON")
    parser.add_argument("--quick", action="store_true", help="3 repetitions, for a smoke run")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        results = measure(Path(directory), 3 if options.quick else REPEATS)
    repeats = 3 if options.quick else REPEATS
    print(
        f"Agent with a store: runs of {ITERATIONS} iterations, {results['events_per_run']} "
        f"events each; medians of {repeats} repetitions"
    )
    print(f"{'store':<20} {'µs/iteration':>13} {'µs/saved event':>15} {'µs/resume':>10}")
    for name, micros in results["per_iteration_us"].items():  # type: ignore[attr-defined]
        saved = results["per_saved_event_us"].get(name)  # type: ignore[attr-defined]
        resumed = results["resume_us"].get(name)  # type: ignore[attr-defined]
        print(
            f"{name:<20} {micros:>13.1f} "
            f"{'' if saved is None else f'{saved:.1f}':>15} "
            f"{'' if resumed is None else f'{resumed:.1f}':>10}"
        )
    if options.json:
        options.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
