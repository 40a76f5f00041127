"""The live view drives a run on Temporal: its actions are the run's updates, not writes.

A view given ``runs=TemporalRuns(...)`` sends approve, deny, answer, pause, resume and
cancel to the run's workflow, whose validators refuse what the machine refuses (nothing
reaches the history); the store, which the workers own, is never written by the view.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client

from agentfsm.cli import main as main_cli
from agentfsm.serve import create_app
from agentfsm.stores.memory import MemoryStore
from agentfsm.stores.sqlite import SQLiteStore
from agentfsm.temporal import TemporalRuns, create_worker
from tests.temporal import agents
from tests.temporal.support import connect, on_temporal, within

ROOT = Path(__file__).resolve().parents[2]


def test_the_live_view_drives_a_temporal_run_through_its_updates(temporal_target: str) -> None:
    store = MemoryStore()

    async def body(runs: TemporalRuns, client: Client) -> None:
        run, waiting = await runs.start_with("pay 3", "ui-pay")
        assert waiting.state == "requires_action"
        local = agents.make_agent(run_id="ui-local", store=store)
        await local.astart()
        app = create_app(store, runs=runs)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://view") as http:

            async def act(run_id: str, **action: object) -> tuple[int, dict[str, object]]:
                answer = await http.post(f"/api/runs/{run_id}/actions", json=action)
                data: dict[str, object] = answer.json()
                return answer.status_code, data

            version = store.load("ui-pay").version  # type: ignore[union-attr]
            history = len((await run.handle.fetch_history()).events)
            status, stale = await act("ui-pay", action="pause", version=version - 1)
            assert (status, stale["error"]) == (409, "StaleView")
            status, refused = await act("ui-pay", action="answer", text="not asked")
            assert (status, refused["error"]) == (409, "IllegalTransitionError")
            assert "provide_input" in str(refused["message"])
            status, refused = await act("ui-pay", action="resolve", decisions={"x": "approve"})
            assert (status, refused["error"]) == (409, "GuardFailedError")
            assert len((await run.handle.fetch_history()).events) == history
            assert store.load("ui-pay").version == version  # type: ignore[union-attr]
            call = waiting.pending[0].id
            status, done = await act("ui-pay", action="resolve", decisions={call: "approve"})
            assert (status, done["state"]) == (200, "completed")
            assert '"paid": 3' in str(done["reply"])
            assert await run.state() == "completed"
            status, lost = await act("ui-local", action="pause")  # not a Temporal run
            assert status == 502
            assert "driver" in str(lost["message"])
        stored = store.load("ui-pay")
        assert stored is not None
        assert stored.state == "completed"

    on_temporal(temporal_target, store, body)


def test_agentfsm_ui_drives_temporal_runs(temporal_target: str, tmp_path: Path) -> None:
    path = tmp_path / "runs.db"

    async def main() -> None:
        client = await connect(temporal_target)
        queue = f"ui-{uuid.uuid4().hex}"
        with SQLiteStore(path) as store:
            async with create_worker(
                client, task_queue=queue, agents={"default": agents.make_agent}, store=store
            ):
                runs = TemporalRuns(client, task_queue=queue)
                run, waiting = await runs.start_with("pay 4", "cli-pay")
                command = [
                    sys.executable, "-m", "agentfsm.cli", "ui", "--store", str(path),
                    "--port", "0", "--temporal", temporal_target, "--task-queue", queue,
                ]  # fmt: skip
                server = subprocess.Popen(
                    command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
                )
                try:
                    assert server.stdout is not None
                    line = asyncio.to_thread(server.stdout.readline)
                    first = await within(30, line, "agentfsm ui's first line")
                    url, _, token = first.split(" at ")[1].strip().partition("?token=")
                    line = asyncio.to_thread(server.stdout.readline)
                    assert "runs on Temporal" in await within(30, line, "its second line")
                    decisions = {waiting.pending[0].id: "approve"}
                    auth = {"Authorization": f"token {token}"}
                    async with httpx.AsyncClient(base_url=url, timeout=30, headers=auth) as http:
                        answer = await http.post(
                            "api/runs/cli-pay/actions",
                            json={"action": "resolve", "decisions": decisions},
                        )
                    assert answer.json()["state"] == "completed"
                    assert await run.state() == "completed"
                finally:
                    server.terminate()
                    await asyncio.to_thread(server.communicate, timeout=10)
            stored = store.load("cli-pay")
            assert stored is not None
            assert stored.state == "completed"

    asyncio.run(main())


def test_agentfsm_ui_on_temporal_needs_a_task_queue(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.db"
    SQLiteStore(path).close()
    assert main_cli(["ui", "--store", str(path), "--temporal", "127.0.0.1:7233"]) == 1
    assert "--temporal needs --task-queue" in capsys.readouterr().err
