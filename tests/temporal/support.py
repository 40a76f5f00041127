"""Running a test body against a worker on the session's dev server, and comparing logs."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from temporalio.client import Client

from agentfsm import Agent
from agentfsm.agent.vocabulary import TurnOutcome
from agentfsm.states.events import Event
from agentfsm.stores.base import RunStore
from agentfsm.temporal import TemporalRun, TemporalRuns, create_worker
from agentfsm.temporal.payloads import RunSettings
from agentfsm.temporal.template import AgentFactory
from tests.temporal.agents import make_agent

T = TypeVar("T")

Body = Callable[[TemporalRuns, Client], Awaitable[T]]


def on_temporal(
    target: str,
    store: RunStore,
    body: Body[T],
    *,
    agents: Mapping[str, AgentFactory] | None = None,
    settings: RunSettings | None = None,
    **options: Any,
) -> T:
    """Run ``body`` with a worker (workflow cache off) on a fresh task queue."""

    async def main() -> T:
        client = await Client.connect(target)
        queue = f"q-{uuid.uuid4().hex}"
        options.setdefault("max_cached_workflows", 0)
        worker = create_worker(
            client,
            task_queue=queue,
            agents=agents or {"default": make_agent},
            store=store,
            **options,
        )
        async with worker:
            return await body(TemporalRuns(client, task_queue=queue, settings=settings), client)

    return asyncio.run(main())


Step = tuple[Any, ...]
"""One call of a script: ``("submit", "weather Rome")``, ``("resolve_action", "approve")``…"""


def _decisions(pending: Sequence[Any], value: str) -> dict[str, str]:
    return {call.id: value for call in pending}


async def drive_local(agent: Agent, steps: Sequence[Step]) -> list[str]:
    """Run ``steps`` on an in-process Agent; what each returned or raised, as text."""
    seen: list[str] = []
    await agent.astart()
    for name, *args in steps:
        if name == "resolve_action":
            args = [_decisions(agent.pending, args[0])]
        try:
            outcome: TurnOutcome = await getattr(agent, f"a{name}")(*args)
            seen.append(f"{outcome.state} {outcome.reason} {outcome.reply}")
        except Exception as error:
            seen.append(f"{type(error).__name__}: {error}")
    return seen


async def drive_remote(run: TemporalRun, steps: Sequence[Step]) -> list[str]:
    """Run ``steps`` on a run on Temporal; what each returned or raised, as text."""
    seen: list[str] = []
    for name, *args in steps:
        if name == "resolve_action":
            args = [_decisions(await run.pending(), args[0])]
        try:
            outcome: TurnOutcome = await getattr(run, name)(*args)
            seen.append(f"{outcome.state} {outcome.reason} {outcome.reply}")
        except Exception as error:
            seen.append(f"{type(error).__name__}: {error}")
    return seen


_VARYING = frozenset({"at", "deadline", "duration"})


def _plain(value: object) -> object:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in _VARYING}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def shape(events: Sequence[Event]) -> list[tuple[object, ...]]:
    """The events without what differs between two executions (times, durations)."""
    return [(e.seq, e.machine, e.event, e.source, e.target, _plain(e.data)) for e in events]
