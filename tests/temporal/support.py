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

CONNECT_SECONDS = 30.0
"""A client that cannot connect in this long fails the test (a healthy dev server: < 1 s)."""
BODY_SECONDS = 300.0
"""A test body on a worker that takes longer fails (an update or a query that no worker
answers waits forever otherwise). They take < 3 s on an idle machine, but each call is a
few round trips between processes (a workflow task replayed from its history with the
cache off), and each hop waits for a CPU on a loaded one: the ~13 calls of
test_updates_queries_and_refusals_leave_no_history took 0.7 s idle and 8-17 s under load
(at nice 10 beside busy loops), so 60 s was a few times more load from a false "hang"."""


async def connect(target: str) -> Client:
    """A client of the dev server at ``target``, or a clear failure after `CONNECT_SECONDS`."""
    connecting = Client.connect(target)
    return await within(CONNECT_SECONDS, connecting, f"a client connecting to {target}")


async def within(seconds: float, step: Awaitable[T], what: str) -> T:
    """``step``'s result, or a clear failure naming ``what`` after ``seconds``.

    Not `asyncio.wait_for`: Temporal's client turns the cancellation of a waiting update
    into an error of its own, which `wait_for` would raise instead of a timeout.
    """
    task = asyncio.ensure_future(step)
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if task in done:
        return task.result()
    task.cancel()
    await asyncio.wait({task})  # whatever it raises on the way out is not the failure
    if not task.cancelled():
        task.exception()  # (retrieved, so asyncio does not log it as never retrieved)
    raise AssertionError(f"{what} did not finish in {seconds:g}s (a hang)")


def on_temporal(
    target: str,
    store: RunStore,
    body: Body[T],
    *,
    agents: Mapping[str, AgentFactory] | None = None,
    settings: RunSettings | None = None,
    seconds: float = BODY_SECONDS,
    **options: Any,
) -> T:
    """Run ``body`` with a worker (workflow cache off) on a fresh task queue.

    A body that does not finish in ``seconds`` fails the test (the worker is shut down).
    """

    async def main() -> T:
        client = await connect(target)
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
            runs = TemporalRuns(client, task_queue=queue, settings=settings)
            return await within(seconds, body(runs, client), f"the test body on {queue}")

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
