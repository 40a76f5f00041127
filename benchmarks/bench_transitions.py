"""µs per transition and bytes per idle machine: compiled, hand-written, python-statemachine.

Every candidate runs the same cycle, ``ready -pause-> paused -resume-> ready``, with one
guard, one effect and one listener per transition, in the same process run; the ratios to
the hand-written machine are what matter (absolute numbers move between machines).

Run: ``.venv/bin/python benchmarks/bench_transitions.py`` (or ``make bench``).
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentfsm.fsm import Emitter, RunData, run_machine
from agentfsm.fsm.lifecycle import RunLifecycle

REPEATS = 15
CYCLES = 5_000  # two transitions each


class HandWritten:
    """The limit: a dict from (state, event) to (guard, effect, target), one listener."""

    TABLE: ClassVar[dict[tuple[str, str], tuple[Callable[[HandWritten], bool], str]]] = {
        ("ready", "pause"): (lambda m: True, "paused"),
        ("paused", "resume"): (lambda m: m.paused_from == "ready", "ready"),
    }
    __slots__ = ("listener", "paused_from", "seq", "state")

    def __init__(self, listener: Callable[[tuple[int, str, str, str]], object]) -> None:
        self.state = "ready"
        self.paused_from: str | None = None
        self.listener = listener
        self.seq = 0

    def send(self, event: str) -> None:
        """Take the transition, or raise."""
        guard, target = self.TABLE[(self.state, event)]
        if not guard(self):
            raise RuntimeError(event)
        source = self.state
        self.paused_from = source if event == "pause" else None
        self.state = target
        self.seq += 1
        self.listener((self.seq, event, source, target))


def cycle_seconds(send: Callable[[str], object]) -> float:
    """One timed run of CYCLES pause/resume cycles."""
    start = time.perf_counter()
    for _ in range(CYCLES):
        send("pause")
        send("resume")
    return time.perf_counter() - start


def measure(sends: dict[str, Callable[[str], object]]) -> dict[str, tuple[float, float]]:
    """Map each name to (median µs per transition, median ratio to the first entry).

    The candidates run interleaved within each repetition, so a slow moment of the machine
    hits all of them alike, and each repetition gives its own ratio.
    """
    runs: dict[str, list[float]] = {name: [] for name in sends}
    for _ in range(REPEATS):
        for name, send in sends.items():
            runs[name].append(cycle_seconds(send) / (2 * CYCLES) * 1e6)
    first = next(iter(runs.values()))
    return {
        name: (
            statistics.median(micros),
            statistics.median(m / f for m, f in zip(micros, first, strict=True)),
        )
        for name, micros in runs.items()
    }


def bytes_per_instance(make: Callable[[], object], count: int = 2_000) -> float:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    keep = [make() for _ in range(count)]
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    size = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    del keep
    return size / count


def main() -> None:
    sink: list[object] = [None]

    def listener(event: object) -> None:
        # Keep only the latest event: retaining them all would time the garbage collector
        # walking a growing heap, not the transition.
        sink[0] = event

    def compiled() -> object:
        data = RunData("bench", state="ready")
        return run_machine(data, Emitter("bench", [listener]))

    def reference() -> object:
        data = RunData("bench", state="ready")
        return run_machine(data, Emitter("bench", [listener]), engine="reference")

    def raw_statechart() -> object:
        class Listener:
            def after_transition(self, event: object, source: object, target: object) -> None:
                sink[0] = (event, source, target)

        return RunLifecycle(model=RunData("bench", state="ready"), listeners=[Listener()])

    makers: dict[str, Callable[[], object]] = {
        "hand-written dict FSM": lambda: HandWritten(listener),
        "agentfsm compiled Machine": compiled,
    }
    fast = measure({name: make().send for name, make in makers.items()})  # type: ignore[attr-defined]
    slow_makers: dict[str, Callable[[], object]] = {
        "hand-written dict FSM": lambda: HandWritten(listener),
        "agentfsm ReferenceMachine (python-statemachine)": reference,
        "python-statemachine StateChart.send": raw_statechart,
    }
    global CYCLES
    CYCLES //= 20  # the slow engines need far fewer transitions for a stable median
    slow = measure({name: make().send for name, make in slow_makers.items()})  # type: ignore[attr-defined]
    results = {**fast, **{k: v for k, v in slow.items() if k != "hand-written dict FSM"}}
    sizes = {
        name: bytes_per_instance(make, 300) for name, make in {**makers, **slow_makers}.items()
    }

    print(f"Python {sys.version.split()[0]}; medians of {REPEATS} interleaved repetitions")
    print(f"{'engine':<50} {'µs/transition':>14} {'x hand':>8} {'bytes/idle instance':>20}")
    for name, (micros, ratio) in results.items():
        print(f"{name:<50} {micros:>14.2f} {ratio:>8.1f} {sizes[name]:>20,.0f}")


if __name__ == "__main__":
    main()
