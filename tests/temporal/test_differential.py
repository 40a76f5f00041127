"""The same scripted conversations in-process and on Temporal give the same event logs.

Every conversation runs twice: on an in-process `Agent` over a `MemoryStore`, and as a
workflow on the session's dev server whose worker stores into another `MemoryStore`. The
two logs must be the same event for event (times and durations aside), the calls must
return (or raise) the same, and the Temporal run's log must replay to its stored snapshot
and pass `check_log`.
"""

from __future__ import annotations

import pytest
from temporalio.client import Client

from agentfsm.stores.exact_replay import replay
from agentfsm.stores.memory import MemoryStore
from agentfsm.temporal import RunSettings, TemporalRuns
from agentfsm.verify.log_check import check_log
from tests.temporal.agents import make_agent
from tests.temporal.support import Step, drive_local, drive_remote, on_temporal, shape

SCRIPTS: dict[str, list[Step]] = {
    "tool_round": [("submit", "weather Rome"), ("submit", "hello")],
    "approval": [
        ("submit", "pay 3"),
        ("provide_input", "wrong call"),
        ("resolve_action", "approve"),
        ("submit", "pay 4"),
        ("resolve_action", "deny"),
    ],
    "question": [("submit", "ask"), ("resume",), ("provide_input", "Oslo")],
    "cancel": [("submit", "pay 9"), ("cancel",), ("submit", "hi"), ("cancel",)],
    "failures": [("submit", "boom"), ("submit", "fail"), ("submit", ""), ("submit", "hi")],
    "exhausted": [("submit", "loop")],
    "tool_timeout": [("submit", "sleepy")],
    "pause_shutdown": [
        ("submit", "ask"),
        ("pause",),
        ("provide_input", "x"),
        ("resume",),
        ("shutdown",),
        ("submit", "after"),
    ],
}


@pytest.mark.parametrize("local", [False, True], ids=["activity", "local_model_calls"])
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_same_events_in_process_and_on_temporal(
    temporal_target: str, name: str, local: bool
) -> None:
    import asyncio

    steps = SCRIPTS[name]
    run_id = f"diff-{name}" + ("-local" if local else "")
    local_store = MemoryStore()
    local_seen = asyncio.run(drive_local(make_agent(run_id=run_id, store=local_store), steps))
    remote_store = MemoryStore()

    async def body(runs: TemporalRuns, client: Client) -> list[str]:
        run = await runs.start(run_id)
        return await drive_remote(run, steps)

    settings = RunSettings(local_model_calls=local)
    remote_seen = on_temporal(temporal_target, remote_store, body, settings=settings)
    assert remote_seen == local_seen
    local_events = local_store.events(run_id)
    remote_events = remote_store.events(run_id)
    assert shape(remote_events) == shape(local_events)
    stored = remote_store.load(run_id)
    assert stored is not None
    local = local_store.load(run_id)
    assert local is not None
    assert stored.messages == local.messages
    assert replay(remote_events, stored).messages == stored.messages
    assert check_log(remote_events, config={"max_iterations": 3}).ok
