"""A long run: 300 model calls with long messages, continuing as new as its history grows.

The model activity reads the conversation from the store, and each store write carries only
what is new, so the history grows with the conversation once, not once per call; the
workflow continues as new (carrying the snapshot) before its history gets large. Every
execution's history stays far under Temporal's suggested continue-as-new size, and the
stored log of the whole run replays and passes `check_log`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from temporalio.client import Client

from agentfsm import Agent
from agentfsm.llm.base import ModelResponse
from agentfsm.llm.scripted import ScriptedModel
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message, ToolCall
from agentfsm.stores.exact_replay import replay
from agentfsm.stores.memory import MemoryStore
from agentfsm.temporal import RunSettings, TemporalRuns
from agentfsm.tools.spec import tool
from agentfsm.verify.log_check import check_log
from tests.temporal.support import on_temporal

CALLS_PER_TURN = 10
TURNS = 30
LONG = 2_000  # characters per tool result and per answer
SUGGESTED_EVENTS = 10_240  # Temporal suggests continue-as-new past these (or 50 MB)
SUGGESTED_BYTES = 50 * 1024 * 1024


@tool(idempotent=True)
def fetch(page: int) -> str:
    """A long page of text."""
    return f"page {page}: " + "x" * LONG


def _respond(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
    since = 0
    for message in reversed(messages):
        if message.role == "user":
            break
        since += message.role == "assistant"
    if since + 1 < CALLS_PER_TURN:
        call = ToolCall(
            id=f"call_{len(messages)}", name="fetch", arguments=json.dumps({"page": since})
        )
        return ModelResponse(tool_calls=(call,))
    return ModelResponse(content="summary: " + "y" * LONG)


def make_long_agent() -> Agent:
    """An agent making 10 model calls per turn with long messages."""
    return Agent(ScriptedModel(fallback=_respond), [fetch], max_iterations=CALLS_PER_TURN)


@pytest.mark.hang_seconds(600)
def test_300_model_calls_stay_under_the_history_limits(temporal_target: str) -> None:
    store = MemoryStore()

    async def body(runs: TemporalRuns, client: Client) -> list[tuple[int, int]]:
        run = await runs.start("long-run")
        for turn in range(TURNS):
            outcome = await run.submit(f"turn {turn}")
            assert outcome.state == "completed"
        sizes = []
        async for execution in client.list_workflows(f"WorkflowId = '{run.run_id}'"):
            handle = client.get_workflow_handle(run.run_id, run_id=execution.run_id)
            history = await handle.fetch_history()
            raw = sum(event.ByteSize() for event in history.events)
            sizes.append((len(history.events), raw))
        return sizes

    sizes = on_temporal(
        temporal_target,
        store,
        body,
        agents={"default": make_long_agent},
        settings=RunSettings(history_events=2_000),
        max_cached_workflows=10,
        seconds=300,  # 300 model calls: ~30 s alone, more under coverage on a busy machine
    )
    assert len(sizes) > 1  # it continued as new
    assert max(events for events, _ in sizes) < SUGGESTED_EVENTS
    assert max(raw for _, raw in sizes) < SUGGESTED_BYTES / 10
    stored = store.load("long-run")
    assert stored is not None
    assert sum(1 for m in stored.messages if m.role == "assistant") == TURNS * CALLS_PER_TURN
    events = store.events("long-run")
    assert replay(events, stored).messages == stored.messages
    assert check_log(events, config={"max_iterations": CALLS_PER_TURN}).ok
