"""Tool retries on Temporal are the ToolSystem's: the same tries, the same recorded attempts.

Each idempotent tool of `make_retry_agent` runs in-process and on Temporal; the body must
start as many times in both, and the `ToolResult` (status, error, attempts) must be the same:
a listed error is retried (until it passes or the attempts run out), an unlisted one is not,
and a timeout is retried only when the tool's ``retry_on`` lists ``TimeoutError``.
"""

from __future__ import annotations

import asyncio

import pytest
from temporalio.client import Client

from agentfsm.fsm.trace import ToolExecutionTrace
from agentfsm.stores.memory import MemoryStore
from agentfsm.temporal import TemporalRuns
from agentfsm.tools.results import ToolResult
from tests.temporal import agents
from tests.temporal.support import drive_local, on_temporal

EXPECTED = {  # tool -> (body starts, status, error type) in one process, with 3 attempts
    "flaky_fetch": (2, "success", None),
    "down_fetch": (3, "error", "ConnectionError"),
    "bad_fetch": (1, "error", "ValueError"),
    "slow_fetch": (1, "timeout", "ToolTimeoutError"),
    "slow_retried_fetch": (3, "timeout", "ToolTimeoutError"),
}


def _result(store: MemoryStore, run_id: str) -> ToolResult:
    snapshot = store.load(run_id)
    assert snapshot is not None
    (entry,) = [e for e in snapshot.trace if isinstance(e, ToolExecutionTrace)]
    return entry.result


def _local(name: str) -> tuple[int, ToolResult, list[str]]:
    agents.STARTS.clear()
    store = MemoryStore()
    run_id = f"retry-{name}"
    agent = agents.make_retry_agent(run_id=run_id, store=store)
    seen = asyncio.run(drive_local(agent, [("submit", f"call {name}")]))
    return agents.STARTS.get(name, 0), _result(store, run_id), seen


def _remote(target: str, name: str) -> tuple[int, ToolResult, list[str]]:
    agents.STARTS.clear()
    store = MemoryStore()
    run_id = f"retry-{name}"

    async def body(runs: TemporalRuns, client: Client) -> list[str]:
        run = await runs.start(run_id)
        outcome = await run.submit(f"call {name}")
        return [f"{outcome.state} {outcome.reason} {outcome.reply}"]

    seen = on_temporal(target, store, body, agents={"default": agents.make_retry_agent})
    return agents.STARTS.get(name, 0), _result(store, run_id), seen


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_tools_retries_are_the_same_in_process_and_on_temporal(
    temporal_target: str, name: str
) -> None:
    local_starts, local, local_seen = _local(name)
    remote_starts, remote, remote_seen = _remote(temporal_target, name)
    starts, status, error = EXPECTED[name]
    assert (local_starts, local.status, local.error and local.error.type) == (
        starts,
        status,
        error,
    )
    assert remote_starts == local_starts
    assert remote.attempts == local.attempts == starts
    assert remote.model_dump(exclude={"duration"}) == local.model_dump(exclude={"duration"})
    assert remote_seen == local_seen
