"""10,000 concurrent async runs with a 50 ms model: wall time against the bound, peak memory.

Each run is the workload of `benchmarks.loops` with `ITERATIONS` iterations, its model
awaiting `LATENCY` seconds per call; all runs start at once in one event loop
(``asyncio.gather``). The latency bound is ``ITERATIONS x LATENCY``: what the runs would take
if the framework cost nothing. Each candidate runs in a fresh subprocess, so that its peak
memory (the growth of the process's maximum resident set over its resident set before the
runs) is its own. The hand-written loop and the Agent rows (each a few seconds) are
repeated `REPEATS` times, interleaved, and report their medians: one run each swings by a
fifth with the machine's load, and the ratio between them is a target. The peers run once.
Each row also says how long the cyclic garbage collector ran during the runs and how many
full (generation 2) collections it made, observed with `gc.callbacks` (the collector itself
is left as it is): at this scale most of what separates the Agent from the hand-written loop.

Run: ``.venv/bin/python benchmarks/bench_concurrency.py [--json PATH] [--runs N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.loops.workload import FINAL, Listener

RUNS = 10_000
REPEATS = 3
"""Interleaved repetitions of each `REPEATED` candidate; its row is their median."""
ITERATIONS = 3
"""Model calls per run: two tool rounds and the final answer."""
LATENCY = 0.05
"""Seconds each model call takes."""

Factory = Callable[[Listener, float], Callable[[int], Awaitable[object]]]


def _factories() -> dict[str, Factory]:
    from benchmarks.loops import (
        agentfsm_loop,
        burr_loop,
        hand,
        langgraph_loop,
        pydantic_graph_loop,
    )

    return {
        "hand-written loop, async": hand.make_async,
        "agentfsm Agent, async": agentfsm_loop.make_async,
        "agentfsm Agent, async, fast extra": lambda listener, latency: agentfsm_loop.make_async(
            listener, latency, fast=True
        ),
        "pydantic-graph": pydantic_graph_loop.make_async,
        "Apache Burr": burr_loop.make_async,
        "LangGraph StateGraph": langgraph_loop.make_async,
    }


REPEATED = (
    "hand-written loop, async",
    "agentfsm Agent, async",
    "agentfsm Agent, async, fast extra",
)
"""The candidates compared by a target: measured `REPEATS` times, interleaved."""

CANDIDATES = (
    "hand-written loop, async",
    "agentfsm Agent, async",
    "agentfsm Agent, async, fast extra",
    "pydantic-graph",
    "Apache Burr",
    "LangGraph StateGraph",
)


def _resident_kib() -> int:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * resource.getpagesize() // 1024


_OLDEST = len(gc.get_threshold()) - 1
"""The collector's oldest generation (2 in CPython)."""


class CollectorWatch:
    """How long the cyclic garbage collector runs, and how often in full, while it watches.

    Observes only (`gc.callbacks`): the collector's thresholds and state are left alone.
    """

    def __init__(self) -> None:
        self.seconds = 0.0
        """Time spent in collections of any generation."""
        self.full = 0
        """Collections of the oldest generation (each walks every tracked object)."""
        self._started = 0.0

    def __enter__(self) -> CollectorWatch:
        gc.callbacks.append(self._told)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._told)

    def _told(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        self.seconds += time.perf_counter() - self._started
        if info["generation"] == _OLDEST:
            self.full += 1


def measure(name: str, runs: int) -> dict[str, float]:
    """Run ``runs`` concurrent runs of candidate ``name`` in this process."""
    listener = Listener()
    runner = _factories()[name](listener, LATENCY)
    watch = CollectorWatch()

    async def everything() -> float:
        await runner(ITERATIONS)  # warm up (imports, caches) before the clock starts
        with watch:
            start = time.perf_counter()
            answers = await asyncio.gather(*(runner(ITERATIONS) for _ in range(runs)))
            wall = time.perf_counter() - start
        if any(answer != FINAL for answer in answers):
            raise AssertionError(f"{name}: a run did not end with the final text")
        return wall

    before = _resident_kib()
    wall = asyncio.run(everything())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    bound = ITERATIONS * LATENCY
    return {
        "runs": runs,
        "wall_s": wall,
        "bound_s": bound,
        "ratio_to_bound": wall / bound,
        "peak_mib": max(peak - before, 0) / 1024,
        "peak_kib_per_run": max(peak - before, 0) / runs,
        "gc_s": watch.seconds,
        "full_collections": watch.full,
    }


def in_subprocess(name: str, runs: int) -> dict[str, float]:
    """`measure` in a fresh interpreter."""
    output = subprocess.run(
        [sys.executable, __file__, "--candidate", name, "--runs", str(runs)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, float] = json.loads(output.strip().splitlines()[-1])
    return result


def median_row(rows: list[dict[str, float]]) -> dict[str, float]:
    """Each measure's median over ``rows`` (one candidate's repetitions)."""
    return {key: statistics.median(row[key] for row in rows) for key in rows[0]}


def repeated(runs: int) -> dict[str, dict[str, float]]:
    """Every candidate's row: the `REPEATED` ones the median of interleaved repetitions."""
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in REPEATED}
    for _ in range(REPEATS):
        for name in REPEATED:
            samples[name].append(in_subprocess(name, runs))
    return {
        name: median_row(samples[name]) if name in samples else in_subprocess(name, runs)
        for name in CANDIDATES
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results here as JSON")
    parser.add_argument("--runs", type=int, default=RUNS, help="concurrent runs")
    parser.add_argument("--candidate", help=argparse.SUPPRESS)  # the subprocess's job
    options = parser.parse_args()
    if options.candidate:
        print(json.dumps(measure(options.candidate, options.runs)))
        return
    results = repeated(options.runs)
    print(
        f"{options.runs:,} concurrent runs x {ITERATIONS} iterations, model latency "
        f"{LATENCY * 1000:.0f} ms (bound {ITERATIONS * LATENCY:.2f} s)"
    )
    print(
        f"{'candidate':<34} {'wall s':>7} {'x bound':>8} {'peak MiB':>9} {'KiB/run':>8} "
        f"{'gc s':>6} {'full gc':>7}"
    )
    for name, row in results.items():
        print(
            f"{name:<34} {row['wall_s']:>7.2f} {row['ratio_to_bound']:>8.2f} "
            f"{row['peak_mib']:>9.1f} {row['peak_kib_per_run']:>8.1f} "
            f"{row['gc_s']:>6.2f} {row['full_collections']:>7.0f}"
        )
    if options.json:
        options.json.write_text(
            json.dumps(
                {
                    "iterations": ITERATIONS,
                    "latency_s": LATENCY,
                    "runs": options.runs,
                    "candidates": results,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
