"""A tool's media and user-only content on Temporal: the same records as in one process.

The tool body runs in an activity; its `ToolContent` crosses to the workflow as JSON (the
value, the parts, the user's content), so the run stores the same tool message (with its
image) and the same ``user_content`` record as the in-process Agent.
"""

from __future__ import annotations

import asyncio

from temporalio.client import Client

from agentfsm.states.events import Event
from agentfsm.stores.memory import MemoryStore
from agentfsm.temporal import TemporalRuns
from tests.temporal import agents
from tests.temporal.support import drive_local, on_temporal

RUN_ID = "chart"


def _records(store: MemoryStore) -> list[tuple[str, object]]:
    return [
        (event.event, event.data)
        for event in store.events(RUN_ID)
        if isinstance(event, Event) and event.event in ("user_content", "tool_result")
    ]


def test_media_and_user_content_are_the_same_on_temporal(temporal_target: str) -> None:
    local = MemoryStore()
    seen = asyncio.run(
        drive_local(
            agents.make_chart_agent(run_id=RUN_ID, store=local), [("submit", "call chart")]
        )
    )
    remote = MemoryStore()

    async def body(runs: TemporalRuns, client: Client) -> list[str]:
        run = await runs.start(RUN_ID)
        outcome = await run.submit("call chart")
        return [f"{outcome.state} {outcome.reason} {outcome.reply}"]

    remote_seen = on_temporal(
        temporal_target, remote, body, agents={"default": agents.make_chart_agent}
    )

    assert seen == remote_seen == ["completed answered done: north is up 12%"]
    records = _records(local)
    assert [kind for kind, _ in records] == ["user_content", "tool_result"]
    mine, theirs = records, _records(remote)
    assert [kind for kind, _ in theirs] == ["user_content", "tool_result"]
    assert mine[0] == theirs[0]
    for (_, here), (_, there) in zip(mine[1:], theirs[1:], strict=True):
        assert here["message"] == there["message"]  # type: ignore[index]
        assert here["message"]["parts"][0]["type"] == "image"  # type: ignore[index]
