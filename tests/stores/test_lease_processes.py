"""Leases end to end: two real processes on one SQLite file.

The first drives a run and blocks in a tool body; the second (this test's process) is refused
with `RunBusyError` while the first works, however long (the first renews its lease); once
the first is killed with SIGKILL and its lease expires, the second takes the run over, and
the run's log shows the takeover.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentfsm import Agent, ScriptedModel, SQLiteStore, replay
from agentfsm.errors import RunBusyError
from agentfsm.stores import LeasePolicy
from agentfsm.testing import assert_history_valid

ROOT = Path(__file__).resolve().parents[2]
RUN_ID = "trip"


def wait_for(condition: object, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_live_driver_refuses_a_second_process_and_a_killed_one_is_taken_over(
    tmp_path: Path,
) -> None:
    path, marker, errors = tmp_path / "runs.db", tmp_path / "working", tmp_path / "stderr"
    with errors.open("w") as stderr:
        first = subprocess.Popen(
            [sys.executable, "-m", "tests.stores.lease_child", str(path), RUN_ID, str(marker)],
            cwd=ROOT,
            stderr=stderr,
        )
    try:
        wait_for(lambda: marker.exists() or first.poll() is not None)
        assert first.poll() is None, errors.read_text()
        with SQLiteStore(path) as store:
            seen = store.lease(RUN_ID)
            assert seen is not None
            assert seen.owner == "first-process"
            # longer than the lease's duration: the first renews it while its tool works
            later = seen.expires_at + 1.0
            wait_for(lambda: (now := store.lease(RUN_ID)) is not None and now.expires_at > later)
            second = Agent(ScriptedModel().text("done"), store=store, run_id=RUN_ID)
            assert second.state == "busy"
            with pytest.raises(RunBusyError) as refused:
                second.start()
            assert refused.value.owner == "first-process"
            assert refused.value.expires_at > time.time()
            assert "lease_taken_over" not in [e.event for e in store.events(RUN_ID)]

            first.send_signal(signal.SIGKILL)
            assert first.wait(timeout=30) == -signal.SIGKILL

            waiting = Agent(
                ScriptedModel().text("done"),
                store=store,
                run_id=RUN_ID,
                lease=LeasePolicy(wait=10.0, owner="second-process"),
            )
            started = time.time()
            outcome = waiting.start()  # waits for the dead lease to expire, then takes over
            assert outcome.state == "completed"
            assert time.time() - started < 10.0
            log = store.events(RUN_ID)
            taken = [e for e in log if e.event == "lease_taken_over"]
            assert [(e.data["owner"], e.data["previous_owner"]) for e in taken] == [
                ("second-process", "first-process")
            ]
            assert taken[0].data["expired_at"] <= taken[0].at
            # the killed call's outcome is unknown (it is not idempotent): said so, not rerun
            assert "ToolOutcomeUnknown" in str(waiting.messages[-2].content)
            assert store.lease(RUN_ID) is None
            final = store.load(RUN_ID)
            assert final is not None
            replay(log, expected=final)
            assert_history_valid(final.messages)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
