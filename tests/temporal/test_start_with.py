"""`TemporalRuns.start_with`: a run started with its first input in one round-trip.

The workflow's start and the first ``submit`` update travel together (update-with-start)
and are taken in the run's first workflow task. The run, its events and its history are
those of `start` then `submit`, minus a client round-trip; a refused first input leaves
nothing in the history and raises what the in-process Agent raises.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence

import pytest
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowHistory
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from agentfsm.errors import GuardFailedError
from agentfsm.stores.memory import MemoryStore
from agentfsm.temporal import RunSettings, TemporalRuns
from agentfsm.temporal.worker import replayer
from tests.temporal import agents
from tests.temporal.support import on_temporal, shape
from tests.temporal.test_replay import HISTORIES


def _kinds(events: Sequence[HistoryEvent]) -> list[str]:
    """Each event's type, as ``activity_task_scheduled``."""
    return [
        str(event.WhichOneof("attributes")).removesuffix("_event_attributes") for event in events
    ]


def one_turn_bound(model_calls: int, tool_calls: int, *, local: bool) -> int:
    """The most events a one-turn run started by `start_with` may have in its history.

    Started (1), the first workflow task (3: scheduled, started, completed) that accepts
    the update (1); each tool body an activity (3) followed by the workflow task that takes
    its result (3); each model call the same (6), or, as a local activity, a marker (1) in
    the workflow task already open (and the patch's two events, once); the step's saves stored
    before the reply (a local activity: 1 marker) and the update's completion (1).
    """
    if local:  # (and the patch they are taken under, once per run: a marker, an upsert)
        return 1 + 3 + 1 + 2 + model_calls + 6 * tool_calls + 1 + 1
    return 1 + 3 + 1 + 6 * model_calls + 6 * tool_calls + 1 + 1


@pytest.mark.parametrize("local", [False, True], ids=["activity", "local_model_calls"])
@pytest.mark.parametrize("text", ["hello", "weather Rome", "loop"])
def test_a_one_turn_history_stays_within_its_structure(
    temporal_target: str, text: str, local: bool
) -> None:
    store = MemoryStore()
    run_id = f"{'local' if local else 'bound'}-{text.split()[0]}"

    async def body(runs: TemporalRuns, client: Client) -> WorkflowHistory:
        run, outcome = await runs.start_with(text, run_id)
        assert outcome.state in ("completed", "failed")
        return await run.handle.fetch_history()

    settings = RunSettings(local_model_calls=local)
    history = on_temporal(temporal_target, store, body, settings=settings)
    stored = store.load(run_id)
    assert stored is not None
    model_calls = sum(1 for m in stored.messages if m.role == "assistant")
    tool_calls = sum(1 for m in stored.messages if m.role == "tool")
    assert model_calls >= 1
    kinds = _kinds(history.events)
    assert len(kinds) <= one_turn_bound(model_calls, tool_calls, local=local), kinds
    assert kinds.count("workflow_execution_update_accepted") == 1
    assert kinds.count("activity_task_scheduled") <= tool_calls + (0 if local else model_calls)
    asyncio.run(replayer({"default": agents.make_agent}).replay_workflow(history))
    if local and text == "weather Rome" and os.environ.get("AGENTFSM_RECORD_HISTORIES") == "1":
        (HISTORIES / "replay-local_model_calls.json").write_text(history.to_json())


def test_start_with_is_start_then_submit_in_one_call(temporal_target: str) -> None:
    store = MemoryStore()

    async def body(runs: TemporalRuns, client: Client) -> tuple[int, int]:
        run, outcome = await runs.start_with("weather Rome", "together", user_id="u1")
        assert outcome.state == "completed"
        assert outcome.reply is not None
        assert "Rome" in outcome.reply
        assert await run.state() == "completed"
        started = (await run.handle.fetch_history()).events[0]
        start = started.workflow_execution_started_event_attributes.input.payloads[0]
        assert json.loads(start.data)["user_id"] == "u1"
        second = await run.submit("hello")
        assert second.reply == "you said: hello"
        apart = await runs.start("apart", user_id="u1")
        await apart.submit("weather Rome")
        await apart.submit("hello")
        with pytest.raises(WorkflowAlreadyStartedError):
            await runs.start_with("hello", "together")
        return (
            len((await run.handle.fetch_history()).events),
            len((await apart.handle.fetch_history()).events),
        )

    together, apart = on_temporal(temporal_target, store, body)
    assert together <= apart
    assert shape(store.events("together")) == shape(store.events("apart"))


def test_a_refused_first_input_leaves_nothing_in_the_history(temporal_target: str) -> None:
    local = agents.make_agent(run_id="refused")
    local.start()
    with pytest.raises(GuardFailedError) as in_process:
        local.submit("")

    async def body(runs: TemporalRuns, client: Client) -> None:
        with pytest.raises(GuardFailedError) as refused:
            await runs.start_with("", "refused")
        assert str(refused.value) == str(in_process.value)
        run = runs.get("refused")
        assert await run.state() == "ready"
        kinds = _kinds((await run.handle.fetch_history()).events)
        assert not [kind for kind in kinds if kind.startswith("workflow_execution_update")]
        assert kinds[0] == "workflow_execution_started"
        with pytest.raises(GuardFailedError):  # the same refusal later: no trace either
            await run.submit("")
        assert _kinds((await run.handle.fetch_history()).events) == kinds
        assert (await run.submit("hello")).reply == "you said: hello"
        with pytest.raises(TypeError, match="text"):
            await runs.start_with(b"hi", "bytes")  # type: ignore[arg-type]
        with pytest.raises(RPCError):  # nothing was started
            await runs.get("bytes").handle.describe()

    on_temporal(temporal_target, MemoryStore(), body)
