"""Bytes per idle run in memory: agentfsm's machines and Agent, and what the peers keep.

An idle run is one that exists and holds no messages. Each candidate makes many of them,
kept alive at once; tracemalloc counts the bytes allocated between before and after, divided
by their number. What is shared between runs (compiled tables, tool declarations, a compiled
graph) is built before the count starts, so only what each run costs on its own is counted.

Run: ``.venv/bin/python benchmarks/bench_memory.py [--json PATH]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentfsm import Agent
from agentfsm.fsm import Emitter, RunData, run_machine
from benchmarks.loops import agentfsm_loop, burr_loop, statemachine_loop
from benchmarks.loops.workload import Listener

COUNT = 2_000
"""Idle runs per candidate, alive at once."""


def bytes_per_instance(make: Callable[[], object], count: int = COUNT) -> float:
    """Bytes allocated per instance, with ``count`` instances alive."""
    make()  # warm caches (interned strings, lazily built tables) outside the count
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    keep = [make() for _ in range(count)]
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    size = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    del keep
    return size / count


def bare_machine() -> object:
    """RunLifecycle of one run on the compiled table: its data, emitter and machine."""
    data = RunData("bench")
    return run_machine(data, Emitter("bench", [print]))


def idle_agent(**options: object) -> Callable[[], object]:
    """A factory of new Agents (state ``created``) with the workload's tools."""

    def make() -> object:
        return Agent(agentfsm_loop.BenchModel(3), agentfsm_loop.TOOLS, **options)  # type: ignore[arg-type]

    return make


def started_agents(count: int) -> float:
    """Bytes per Agent after ``await astart()`` (state ``ready``), in one event loop."""

    async def make() -> Agent:
        agent = Agent(agentfsm_loop.BenchModel(3), agentfsm_loop.TOOLS, ask_user=False)
        await agent.astart()
        return agent

    async def measure() -> float:
        await make()
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        keep = [await make() for _ in range(count)]
        gc.collect()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        del keep
        return sum(s.size_diff for s in after.compare_to(before, "filename")) / count

    return asyncio.run(measure())


def hand_written() -> object:
    """What a hand-written loop keeps per run: its state name and an empty conversation."""
    return {"run_id": "bench", "state": "ready", "messages": []}


def burr_application() -> object:
    """A Burr `Application` built for one run (the per-run object in Burr)."""
    return burr_loop.build(3, burr_loop.ListenerHook(Listener()))


def statechart() -> object:
    """The python-statemachine `StateChart` of one run."""
    return statemachine_loop.AgentLoop(statemachine_loop._TransitionListener(Listener()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results here as JSON")
    options = parser.parse_args()
    results = {
        "hand-written run (dict)": bytes_per_instance(hand_written),
        "agentfsm bare RunLifecycle (compiled)": bytes_per_instance(bare_machine),
        "agentfsm Agent, created (ask_user=False)": bytes_per_instance(idle_agent(ask_user=False)),
        "agentfsm Agent, started (ask_user=False)": started_agents(COUNT),
        "agentfsm Agent, created (with ask_user)": bytes_per_instance(idle_agent(ask_user=True)),
        "python-statemachine StateChart": bytes_per_instance(statechart, 500),
        "Apache Burr Application": bytes_per_instance(burr_application, 500),
    }
    print("bytes per idle run (tracemalloc)")
    for name, size in results.items():
        print(f"  {name:<50} {size:>10,.0f}")
    if options.json:
        options.json.write_text(json.dumps({"bytes_per_idle_run": results}, indent=2))


if __name__ == "__main__":
    main()
