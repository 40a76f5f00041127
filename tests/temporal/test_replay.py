"""The determinism guard: workflow histories replay with Temporal's `Replayer`.

``histories/`` holds histories recorded by this version's tests (tool rounds, approvals,
questions, cancels, failures, pause and shutdown). Each must replay on the current workflow
code: a change that would make a running workflow take other decisions fails here, before
it reaches workers with runs in flight. Fresh histories of every differential script are
replayed too. Rerecord (after a deliberate, versioned change) with
``AGENTFSM_RECORD_HISTORIES=1 pytest tests/temporal/test_replay.py``; that leaves
``query-during-first-write.json`` (a rare task shape, kept by hand) as it is.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowHistory

from agentfsm.stores.memory import MemoryStore
from agentfsm.temporal import TemporalRuns
from agentfsm.temporal.worker import replayer
from tests.temporal.agents import make_agent
from tests.temporal.support import drive_remote, on_temporal
from tests.temporal.test_differential import SCRIPTS

HISTORIES = Path(__file__).parent / "histories"
AGENTS = {"default": make_agent}


def _recorded() -> list[Path]:
    return sorted(HISTORIES.glob("*.json"))


def test_histories_are_recorded() -> None:
    assert len(_recorded()) >= len(SCRIPTS)


@pytest.mark.parametrize("path", _recorded(), ids=lambda path: path.stem)
def test_a_recorded_history_replays_on_this_version(path: Path) -> None:
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    result = asyncio.run(replayer(AGENTS).replay_workflow(history))
    assert result.replay_failure is None


def test_fresh_histories_replay(temporal_target: str) -> None:
    async def body(runs: TemporalRuns, client: Client) -> list[WorkflowHistory]:
        histories = []
        for name, steps in sorted(SCRIPTS.items()):
            run = await runs.start(f"replay-{name}")
            await drive_remote(run, steps)
            histories.append(await run.handle.fetch_history())
        return histories

    histories = on_temporal(temporal_target, MemoryStore(), body)
    for history in histories:
        asyncio.run(replayer(AGENTS).replay_workflow(history))
    if os.environ.get("AGENTFSM_RECORD_HISTORIES") == "1":
        HISTORIES.mkdir(exist_ok=True)
        for history in histories:
            (HISTORIES / f"{history.workflow_id}.json").write_text(history.to_json())


@pytest.mark.parametrize("local", [True, False], ids=["patched", "unpatched"])
def test_a_run_begun_by_a_worker_ignoring_local_model_calls_replays(local: bool) -> None:
    """An older worker ignores ``local_model_calls`` (an unknown field) and makes activities.

    A newer worker replaying that run must make the same commands: it takes local model
    calls only under their patch, which the older worker's history does not have. (Without
    the setting, nothing changes at all.)
    """
    recorded = json.loads((HISTORIES / "replay-tool_round.json").read_text())
    payload = recorded["events"][0]["workflowExecutionStartedEventAttributes"]["input"]
    start = json.loads(base64.b64decode(payload["payloads"][0]["data"]))
    assert "local_model_calls" not in start["settings"]  # (recorded before the setting)
    start["settings"]["local_model_calls"] = local
    payload["payloads"][0]["data"] = base64.b64encode(json.dumps(start).encode()).decode()
    history = WorkflowHistory.from_json("replay-tool_round", recorded)
    result = asyncio.run(replayer(AGENTS).replay_workflow(history))
    assert result.replay_failure is None


def test_a_run_whose_first_task_a_replay_merges_with_the_next_replays() -> None:
    """A query answered while the start's store write was in flight (the flake it fixes).

    Recorded on a worker with the cache off, where the calls of
    ``test_updates_queries_and_refusals_leave_no_history`` hung on it in 5 of 140 loops:
    the first workflow task answered the query (the run's first call) and completed with
    no command, the write still running; its marker came in the next task, with the
    ``submit`` update. A replay takes the first task for a heartbeat and delivers
    the start and the update in one activation, where the SDK runs the update handler
    first. The workflow code before the fix then let the handler carry the start's save,
    scheduled no store write, and failed every replay with "Missing associated machine for
    LocalActivity(1)"; the run hung.
    """
    path = HISTORIES / "query-during-first-write.json"
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    kinds = [str(event.WhichOneof("attributes")) for event in history.events[:9]]
    assert [kind.removesuffix("_event_attributes") for kind in kinds[3:]] == [
        "workflow_task_completed",  # the first task: no command
        "workflow_task_scheduled",
        "workflow_task_started",
        "workflow_task_completed",
        "marker_recorded",  # the start's store write (local activity 1)...
        "workflow_execution_update_accepted",  # ...in the task of the first update
    ]
    result = asyncio.run(replayer(AGENTS).replay_workflow(history, raise_on_replay_failure=False))
    assert result.replay_failure is None
