"""A worker killed mid-call: its run goes on elsewhere, and no non-idempotent call runs twice.

A worker process (the ``agentfsm worker`` command, over a SQLite store) runs a
non-idempotent tool that writes to a ledger and then sleeps; the test SIGKILLs the process
while the body runs. A second worker takes the run over: the call's heartbeat times out,
and the model gets a ``ToolOutcomeUnknown`` error result instead of a second execution.
The ledger holds one line; the stored log replays and passes `check_log`; the workflow's
history replays with Temporal's `Replayer`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from agentfsm.stores.exact_replay import replay
from agentfsm.stores.sqlite import SQLiteStore
from agentfsm.temporal import RunSettings, TemporalRuns, create_worker
from agentfsm.temporal.worker import replayer
from agentfsm.verify.log_check import check_log
from tests.temporal.agents import LEDGER_VARIABLE, make_agent
from tests.temporal.support import connect, within

ROOT = Path(__file__).resolve().parents[2]
AGENTFSM = Path(sys.executable).parent / "agentfsm"


def start_worker(
    target: str, queue: str, store: Path, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    """An ``agentfsm worker`` process for the test agent."""
    return subprocess.Popen(
        [
            str(AGENTFSM),
            "worker",
            "--temporal",
            target,
            "--task-queue",
            queue,
            "--agent",
            "tests.temporal.agents:make_agent",
            "--store",
            str(store),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def _lines(path: Path, count: int, timeout: float = 60.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and len(lines := path.read_text().splitlines()) >= count:
            return lines
        await asyncio.sleep(0.05)
    raise AssertionError(f"the ledger {path} did not reach {count} line(s)")


def test_a_worker_killed_mid_call_gives_outcome_unknown_not_a_second_run(
    temporal_target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, ledger = tmp_path / "runs.db", tmp_path / "ledger.txt"
    monkeypatch.setenv(LEDGER_VARIABLE, str(ledger))
    env = {**os.environ, "AGENTFSM_TEST_SLOW": "120"}
    queue = f"crash-{uuid.uuid4().hex}"
    victim = start_worker(temporal_target, queue, db, env)

    async def main() -> tuple[str | None, float]:
        client = await connect(temporal_target)
        runs = TemporalRuns(
            client,
            task_queue=queue,
            settings=RunSettings(heartbeat_timeout=1.0),
            task_timeout=10.0,  # (2 s is tight for a workflow task on a loaded machine)
        )
        run = await runs.start("crash-1")
        turn = asyncio.ensure_future(run.submit("slow 7"))
        await _lines(ledger, 1)
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        killed = time.monotonic()
        with SQLiteStore(db) as store:
            successor = create_worker(
                client, task_queue=queue, agents={"default": make_agent}, store=store
            )
            async with successor:
                # Within 100 s, before the killed worker's slow tool (120 s) could have ended:
                # the successor took the run over after the heartbeat timeout (1 s) and the
                # workflow task timeout, it did not wait out the call.
                outcome = await within(100, turn, "the turn after the kill")
                took = time.monotonic() - killed
                history = await run.handle.fetch_history()
        await replayer({"default": make_agent}).replay_workflow(history)
        return outcome.reply, took

    try:
        reply, took = asyncio.run(main())
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()
    assert reply is not None
    assert "ToolOutcomeUnknown" in reply
    assert ledger.read_text().splitlines() == ["crash-1:call_2 slow_pay 7"]
    print(f"\nthe run went on {took:.1f}s after the SIGKILL")  # (bounded by `within` above)
    with SQLiteStore(db) as store:
        events = store.events("crash-1")
        stored = store.load("crash-1")
    assert stored is not None
    assert replay(events, stored).messages == stored.messages
    assert check_log(events, config={"max_iterations": 3}).ok
