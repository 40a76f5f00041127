"""``agentfsm worker`` stopped by SIGINT and SIGTERM: it drains, hands back, and exits 0.

Two real worker processes on one task queue, one after the other, run a non-idempotent
tool that writes to a ledger and then sleeps:

- the first is sent SIGINT (Ctrl-C) while its call runs 1.5 s, within its 10 s grace: the
  call finishes, its result is recorded, and the worker exits 0;
- the second is sent SIGTERM while its call sleeps 120 s, beyond its 1 s grace: the call is
  cut, the worker exits 0 at once, and the run goes on on a third worker, where the model
  is told "outcome unknown" (never a plain ``WorkerShutdown`` error that invites a retry).

Neither prints a traceback; each says what it serves where, and that it stopped.
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

from agentfsm.stores.sqlite import SQLiteStore
from agentfsm.temporal import RunSettings, TemporalRuns, create_worker
from tests.temporal.agents import LEDGER_VARIABLE, make_agent
from tests.temporal.support import connect, within
from tests.temporal.test_crash import _lines

ROOT = Path(__file__).resolve().parents[2]
AGENTFSM = Path(sys.executable).parent / "agentfsm"


def _worker(
    target: str, queue: str, store: Path, slow: float, grace: float
) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [
            str(AGENTFSM),
            "worker",
            *("--temporal", target, "--task-queue", queue, "--store", str(store)),
            *("--agent", "tests.temporal.agents:make_agent", "--grace", str(grace)),
            *("--sticky-queue-timeout", "1"),
        ],
        cwd=ROOT,
        env={**os.environ, "AGENTFSM_TEST_SLOW": str(slow)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    ready = process.stdout.readline()
    assert ready.startswith("agentfsm worker: running agent 'default' (tests.temporal"), ready
    assert f"on task queue {queue!r} of {target}" in ready
    return process


def _stopped(process: subprocess.Popen[str], sig: signal.Signals) -> tuple[str, str, float]:
    sent = time.monotonic()
    process.send_signal(sig)
    out, err = process.communicate(timeout=60)
    return out, err, time.monotonic() - sent


@pytest.mark.hang_seconds(240)
def test_a_stopped_worker_drains_its_call_or_hands_it_back_as_outcome_unknown(
    temporal_target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, ledger = tmp_path / "runs.db", tmp_path / "ledger.txt"
    monkeypatch.setenv(LEDGER_VARIABLE, str(ledger))
    queue = f"stop-{uuid.uuid4().hex}"
    workers: list[subprocess.Popen[str]] = []
    stops: dict[str, tuple[int, str, str, float]] = {}

    async def stop(name: str, sig: signal.Signals) -> None:
        process = workers[-1]
        out, err, took = await asyncio.to_thread(_stopped, process, sig)
        stops[name] = (process.returncode, out, err, took)

    async def start(slow: float, grace: float) -> None:
        workers.append(await asyncio.to_thread(_worker, temporal_target, queue, db, slow, grace))

    async def main() -> tuple[str | None, str | None]:
        client = await connect(temporal_target)
        runs = TemporalRuns(
            client,
            task_queue=queue,
            settings=RunSettings(heartbeat_timeout=30.0),  # (no heartbeat rescue here)
            task_timeout=10.0,
        )
        await start(slow=1.5, grace=10)
        run = await runs.start("stop-1")
        drained = asyncio.ensure_future(run.submit("slow 7"))
        await _lines(ledger, 1)
        await stop("SIGINT", signal.SIGINT)  # mid-call, within the grace: it finishes
        await start(slow=120, grace=1)
        first = await within(60, drained, "the turn whose call was drained")
        cut = asyncio.ensure_future(run.submit("slow 8"))
        await _lines(ledger, 2)
        await stop("SIGTERM", signal.SIGTERM)  # mid-call, beyond the grace: it is cut
        with SQLiteStore(db) as store:
            successor = create_worker(
                client, task_queue=queue, agents={"default": make_agent}, store=store
            )
            async with successor:
                second = await within(60, cut, "the turn whose call was cut")
        return first.reply, second.reply

    try:
        first, second = asyncio.run(main())
    finally:
        for process in workers:
            if process.poll() is None:
                process.kill()
                process.communicate()
    assert first == "done: paid 7"
    assert second is not None
    assert "ToolOutcomeUnknown" in second
    assert "shut down before the call finished" in second
    assert "WorkerShutdown" not in second
    assert [line.split()[1:] for line in ledger.read_text().splitlines()] == [
        ["slow_pay", "7"],
        ["slow_pay", "8"],
    ]  # each call ran once
    for name, (code, out, err, took) in stops.items():
        assert code == 0, (name, err)
        assert "Traceback" not in err, (name, err)
        assert out.splitlines()[-1] == "agentfsm worker: stopped", (name, out)
        assert err.startswith(f"agentfsm worker: {name}: stopping"), (name, err)
        print(f"\n{name}: the worker exited {took:.1f}s after the signal")
    assert stops["SIGTERM"][3] < 10  # the 1 s grace, not the 120 s call
