"""The proof at scale: 4 worker processes drain 500 runs; one is SIGKILLed, another started.

Four ``agentfsm worker`` processes share a SQLite store and a task queue. This process is
the client: it starts 500 runs of the test agent, each a turn with a non-idempotent tool
that writes its idempotency key to a ledger, most behind an approval it answers, some slow
and some with an idempotent tool round first. Once a third of the runs have completed it
SIGKILLs one worker, and a little later starts a fifth. Every run completes exactly once;
no key appears twice in the ledger (no non-idempotent call ran twice); every stored log
replays to its snapshot and passes `check_log`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from agentfsm.agent.vocabulary import TurnOutcome
from agentfsm.stores.exact_replay import replay
from agentfsm.stores.sqlite import SQLiteStore
from agentfsm.temporal import RunSettings, TemporalRun, TemporalRuns
from agentfsm.verify.log_check import check_log
from tests.temporal.agents import LEDGER_VARIABLE
from tests.temporal.support import connect, within
from tests.temporal.test_crash import start_worker

RUNS = 500
WORKERS = 4
CONCURRENT = 60


def _input(index: int) -> str:
    if index % 10 == 0:
        return f"slow {index}"  # non-idempotent, no approval, takes a moment
    if index % 10 == 1:
        return f"weather City{index}"  # idempotent
    return f"pay {index}"  # non-idempotent, behind an approval


async def _drive(run: TemporalRun, index: int, spans: list[tuple[float, float]]) -> TurnOutcome:
    started = time.monotonic()
    outcome = await run.submit(_input(index))
    spans.append((started, time.monotonic()))
    if outcome.state == "requires_action":
        started = time.monotonic()
        outcome = await run.resolve_action({call.id: "approve" for call in outcome.pending})
        spans.append((started, time.monotonic()))
    return outcome


@pytest.mark.hang_seconds(600)
def test_500_runs_on_4_workers_one_killed(temporal_target: str, tmp_path: Path) -> None:
    db, ledger = tmp_path / "runs.db", tmp_path / "ledger.txt"
    env = {**os.environ, LEDGER_VARIABLE: str(ledger), "AGENTFSM_TEST_SLOW": "0.3"}
    queue = f"scale-{uuid.uuid4().hex}"
    SQLiteStore(db).close()  # the schema, before four processes race to make it
    workers = [start_worker(temporal_target, queue, db, env) for _ in range(WORKERS)]
    spans: list[tuple[float, float]] = []

    async def main() -> tuple[list[TurnOutcome], float, float]:
        client = await connect(temporal_target)
        runs = TemporalRuns(
            client,
            task_queue=queue,
            settings=RunSettings(heartbeat_timeout=2.0),
            task_timeout=10.0,  # (2 s is tight for a workflow task on a loaded machine)
        )
        gate = asyncio.Semaphore(CONCURRENT)
        done = 0
        killed_at = 0.0

        async def one(index: int) -> TurnOutcome:
            nonlocal done, killed_at
            async with gate:
                run = await runs.start(f"scale-{index}")
                outcome = await _drive(run, index, spans)
            done += 1
            if done == RUNS // 3:
                workers[0].send_signal(signal.SIGKILL)
                killed_at = time.monotonic()
            if done == RUNS // 2:
                workers.append(start_worker(temporal_target, queue, db, env))
            return outcome

        began = time.monotonic()
        everything = asyncio.gather(*(one(i) for i in range(RUNS)))
        outcomes = await within(300, everything, f"{RUNS} runs")
        return list(outcomes), killed_at, time.monotonic() - began

    try:
        outcomes, killed_at, took = asyncio.run(main())
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
        for worker in workers:
            try:
                worker.wait(timeout=10)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
    assert workers[0].returncode == -signal.SIGKILL
    failed = [(i, o) for i, o in enumerate(outcomes) if o.state != "completed"]
    assert failed == []
    keys = [line.split()[0] for line in ledger.read_text().splitlines()]
    duplicates = [key for key, count in Counter(keys).items() if count > 1]
    assert duplicates == []
    unknown = sum("ToolOutcomeUnknown" in (o.reply or "") for o in outcomes)
    assert len(keys) >= RUNS * 9 // 10 - unknown  # every non-idempotent call ran, or is unknown
    over_kill = [end - start for start, end in spans if start <= killed_at <= end]
    takeover = max(over_kill, default=0.0)
    print(
        f"\n{RUNS} runs in {took:.1f}s; ledger {len(keys)} lines, 0 duplicates; "
        f"{unknown} outcome unknown; longest call across the kill {takeover:.1f}s"
    )
    with SQLiteStore(db) as store:
        assert len(store.list_runs()) == RUNS
        for index in range(RUNS):
            events = store.events(f"scale-{index}")
            stored = store.load(f"scale-{index}")
            assert stored is not None
            assert replay(events, stored).messages == stored.messages
            assert check_log(events, config={"max_iterations": 3}).ok
