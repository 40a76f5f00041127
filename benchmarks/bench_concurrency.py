"""10,000 concurrent async runs with a 50 ms model: wall time against the bound, peak memory.

Each run is the workload of `benchmarks.loops` with `ITERATIONS` iterations, its model
awaiting `LATENCY` seconds per call; all runs start at once in one event loop
(``asyncio.gather``). The latency bound is ``ITERATIONS x LATENCY``: what the runs would take
if the framework cost nothing. Each candidate runs in a fresh subprocess, so that its peak
memory (the growth of the process's maximum resident set over its resident set before the
runs) is its own. The hand-written loop and the Agent rows (each a few seconds) are
repeated `REPEATS` times, interleaved, and report their medians: one run each swings by a
fifth with the machine's load, and the ratio between them is a target. The peers run once.

Run: ``.venv/bin/python benchmarks/bench_concurrency.py [--json PATH] [--runs N]``.
"""

from __future__ import annotations

import argparse
import asyncio
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


def measure(name: str, runs: int) -> dict[str, float]:
    """Run ``runs`` concurrent runs of candidate ``name`` in this process."""
    listener = Listener()
    runner = _factories()[name](listener, LATENCY)

    async def everything() -> float:
        await runner(ITERATIONS)  # warm up (imports, caches) before the clock starts
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
    print(f"{'candidate':<34} {'wall s':>7} {'x bound':>8} {'peak MiB':>9} {'KiB/run':>8}")
    for name, row in results.items():
        print(
            f"{name:<34} {row['wall_s']:>7.2f} {row['ratio_to_bound']:>8.2f} "
            f"{row['peak_mib']:>9.1f} {row['peak_kib_per_run']:>8.1f}"
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
