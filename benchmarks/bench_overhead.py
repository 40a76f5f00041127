"""µs per agent-loop iteration in agentfsm and its peers, against a hand-written loop.

The same loop in every framework (see `benchmarks.loops`): a zero-latency scripted model
asking for a round of three tool calls per iteration and then answering, three no-op tools
with schema-validated arguments, one listener. A run of `ITERATIONS` iterations is timed
from the creation of the run (an `Agent`, a Burr `Application`, a LangGraph thread…) to its
final text, divided by `ITERATIONS`; a run of one iteration (a plain text answer) shows what
a run costs besides its iterations. Everything runs in this one process, interleaved,
medians of `REPEATS` repetitions; ratios are taken repetition by repetition against the
hand-written synchronous loop.

Run: ``.venv/bin/python benchmarks/bench_overhead.py [--json PATH] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.loops import (
    agentfsm_loop,
    burr_loop,
    hand,
    langgraph_loop,
    pydantic_graph_loop,
    statemachine_loop,
)
from benchmarks.loops.workload import FINAL, Listener

ITERATIONS = 10
"""Iterations per timed run: nine tool rounds and the final answer."""
REPEATS = 7
SAMPLE_SECONDS = 0.12
"""Each candidate's sample in a repetition lasts about this long."""

SyncRunner = Callable[[int], object]
AsyncRunner = Callable[[int], Awaitable[object]]


@dataclass(frozen=True)
class Candidate:
    """One implementation: a sync or an async runner factory, given the listener."""

    name: str
    framework: str
    make: Callable[[Listener], SyncRunner | AsyncRunner]
    is_async: bool = False


CANDIDATES = (
    Candidate("hand-written loop", "hand-written", hand.make_sync),
    Candidate("hand-written loop, async", "hand-written", hand.make_async, is_async=True),
    Candidate("agentfsm Agent, async", "agentfsm", agentfsm_loop.make_async, is_async=True),
    Candidate("agentfsm Agent, sync facade", "agentfsm", agentfsm_loop.make_sync),
    Candidate(
        "agentfsm Agent, async, fast extra",
        "agentfsm, fast extra",
        lambda listener: agentfsm_loop.make_async(listener, fast=True),
        is_async=True,
    ),
    Candidate(
        "agentfsm Agent, sync facade, fast extra",
        "agentfsm, fast extra",
        lambda listener: agentfsm_loop.make_sync(listener, fast=True),
    ),
    Candidate(
        "agentfsm Agent, reference engine",
        "agentfsm",
        lambda listener: agentfsm_loop.make_async(listener, engine="reference"),
        is_async=True,
    ),
    Candidate(
        "python-statemachine StateChart", "python-statemachine", statemachine_loop.make_sync
    ),
    Candidate("pydantic-graph", "pydantic-graph", pydantic_graph_loop.make_async, is_async=True),
    Candidate("Apache Burr", "burr", burr_loop.make_sync),
    Candidate("LangGraph StateGraph", "langgraph", langgraph_loop.make_sync),
    Candidate(
        "LangGraph StateGraph + InMemorySaver",
        "langgraph",
        lambda listener: langgraph_loop.make_sync(listener, checkpointer=True),
    ),
)
BASELINE = CANDIDATES[0].name


def timed(candidate: Candidate, iterations: int, runs: int) -> float:
    """Seconds for ``runs`` whole runs of ``iterations`` iterations, each checked."""
    runner = candidate.make(Listener())
    if candidate.is_async:
        arunner = runner

        async def many() -> float:
            start = time.perf_counter()
            for _ in range(runs):
                await arunner(iterations)  # type: ignore[misc]  # an AsyncRunner here
            return time.perf_counter() - start

        return asyncio.run(many())
    start = time.perf_counter()
    for _ in range(runs):
        runner(iterations)
    return time.perf_counter() - start


def check(candidate: Candidate) -> None:
    """Each implementation must end with the final text and have told its listener."""
    listener = Listener()
    runner = candidate.make(listener)
    answer = asyncio.run(runner(3)) if candidate.is_async else runner(3)  # type: ignore[arg-type]
    if answer != FINAL or listener.events < 3:
        raise AssertionError(f"{candidate.name}: answered {answer!r}, {listener.events} events")


def calibrate(candidate: Candidate, iterations: int) -> int:
    """Runs per sample so that a sample lasts about `SAMPLE_SECONDS`."""
    once = min(timed(candidate, iterations, 1) for _ in range(3))
    return max(3, round(SAMPLE_SECONDS / max(once, 1e-6)))


def measure(iterations: int, repeats: int) -> dict[str, list[float]]:
    """µs per iteration of each candidate in each repetition, interleaved."""
    runs = {c.name: calibrate(c, iterations) for c in CANDIDATES}
    samples: dict[str, list[float]] = {c.name: [] for c in CANDIDATES}
    for _ in range(repeats):
        for candidate in CANDIDATES:  # interleaved, so drift hits all alike
            seconds = timed(candidate, iterations, runs[candidate.name])
            samples[candidate.name].append(seconds / runs[candidate.name] / iterations * 1e6)
    return samples


def summarise(samples: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """Median µs and median ratio to the baseline (paired by repetition)."""
    baseline = samples[BASELINE]
    return {
        name: {
            "us": statistics.median(values),
            "ratio": statistics.median(v / b for v, b in zip(values, baseline, strict=True)),
            "min": min(values),
            "max": max(values),
        }
        for name, values in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results here as JSON")
    parser.add_argument("--quick", action="store_true", help="3 repetitions, for a smoke run")
    options = parser.parse_args()
    repeats = 3 if options.quick else REPEATS
    for candidate in CANDIDATES:
        check(candidate)
    per_iteration = measure(ITERATIONS, repeats)
    single = measure(1, repeats)
    results = {
        "iterations": ITERATIONS,
        "repeats": repeats,
        "baseline": BASELINE,
        "frameworks": {c.name: c.framework for c in CANDIDATES},
        "per_iteration": summarise(per_iteration),
        "per_iteration_samples": per_iteration,
        "one_iteration_run": summarise(single),
    }
    print(f"µs per iteration (runs of {ITERATIONS}), medians of {repeats} repetitions")
    print(f"{'candidate':<40} {'µs/iter':>9} {'x hand':>7} {'µs/1-iteration run':>19}")
    for name, row in results["per_iteration"].items():  # type: ignore[union-attr]
        one = results["one_iteration_run"][name]["us"]  # type: ignore[index]
        print(f"{name:<40} {row['us']:>9.1f} {row['ratio']:>7.2f} {one:>19.1f}")
    if options.json:
        options.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
