"""The live view drives a run on Temporal: its actions are the run's updates, not writes.

A view given ``runs=TemporalRuns(...)`` sends approve, deny, answer, pause, resume and
cancel to the run's workflow, whose validators refuse what the machine refuses (nothing
reaches the history); the store, which the workers own, is never written by the view.
"""

from __future__ import annotations

import httpx
from temporalio.client import Client

from agentfsm.serve import create_app
from agentfsm.stores.memory import MemoryStore
from agentfsm.temporal import TemporalRuns
from tests.temporal import agents
from tests.temporal.support import on_temporal


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
