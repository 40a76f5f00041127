"""The worker: runs the workflows and activities of a task queue's runs.

``agentfsm worker --temporal HOST:PORT --task-queue Q --agent module:factory --store URL``
is `run_worker`; `create_worker` is the API beneath it.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.worker import Replayer, Worker

from agentfsm import _checks
from agentfsm.stores.base import RunStore
from agentfsm.temporal.activities import RunActivities
from agentfsm.temporal.payloads import DEFAULT_AGENT, DEFAULT_GRACE, RunSettings
from agentfsm.temporal.template import (
    TEMPLATES,
    AgentFactory,
    AgentTemplate,
    load_factory,
    template_of,
)
from agentfsm.temporal.workflow import RunWorkflow


def create_worker(
    client: Client,
    *,
    task_queue: str,
    agents: Mapping[str, AgentFactory],
    store: RunStore,
    heartbeat_every: float = RunSettings.heartbeat_every,
    **options: Any,
) -> Worker:
    """A Temporal `Worker` running agentfsm runs on ``task_queue``.

    Each factory is called once, now: its Agent's configuration, tool declarations and
    hooks run in the workflow, its model and tool bodies in activities. What cannot run in
    a workflow is refused here (`ValueError`).

    Args:
        client: A connected Temporal client.
        task_queue: The task queue the runs are started on.
        agents: The agents by name, each a factory returning a configured `Agent`.
        store: Where every run this worker executes is stored (shared by all workers of
            the queue: a SQLite file on one machine, PostgreSQL across machines).
        heartbeat_every: Seconds between a running tool's heartbeats (keep it well under
            the runs' ``heartbeat_timeout``).
        **options: Passed to `temporalio.worker.Worker` (``max_cached_workflows``,
            ``max_concurrent_activities``…).

    Raises:
        ValueError: No agent, or an agent that cannot run in a workflow; an empty task
            queue or agent name; ``heartbeat_every`` not > 0.
        TypeError: A factory that does not return an `Agent`; an argument of the wrong
            kind (``agents`` not a mapping of names to callables, ``store`` not a
            `RunStore`, a task queue that is not a str).
    """
    _checks.text("task_queue", task_queue)
    if not isinstance(agents, Mapping):
        _checks.refuse_type("agents", agents, "a mapping of names to factories returning an Agent")
    if not agents:
        raise ValueError("agents is empty; give at least one {name: factory}")
    for name, factory in agents.items():
        _checks.text("each name of agents", name)
        if not callable(factory):
            _checks.refuse_type(f"agents[{name!r}]", factory, "a factory returning an Agent")
    if not isinstance(store, RunStore):
        _checks.refuse_type("store", store, "a RunStore (SQLiteStore, PostgresStore, …)")
    _checks.seconds("heartbeat_every", heartbeat_every)
    templates = register_agents(agents)
    activities = RunActivities(templates, store, heartbeat_every)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[RunWorkflow],
        activities=activities.all(),
        **options,
    )


def register_agents(agents: Mapping[str, AgentFactory]) -> dict[str, AgentTemplate]:
    """Call each factory and make its agent available to this process's workflows.

    Raises:
        ValueError: An agent that cannot run in a workflow.
        TypeError: A factory that does not return an `Agent`.
    """
    templates = {name: template_of(name, factory()) for name, factory in agents.items()}
    TEMPLATES.update(templates)
    return templates


def replayer(agents: Mapping[str, AgentFactory]) -> Replayer:
    """A Temporal `Replayer` for runs of ``agents``: the determinism check of a history.

    ``await replayer(agents).replay_workflow(history)`` raises if the workflow code of
    this version would not make the decisions the history records (a change that would
    break the runs in flight).
    """
    register_agents(agents)
    return Replayer(workflows=[RunWorkflow])


async def run_worker(
    target: str,
    *,
    task_queue: str,
    agent: str,
    store: str,
    namespace: str = "default",
    name: str = DEFAULT_AGENT,
    grace: float = DEFAULT_GRACE,
    until: Awaitable[object] | None = None,
    on_ready: Callable[[], None] | None = None,
    **options: Any,
) -> None:
    """Connect to ``target`` and run a worker until ``until`` completes (the ``worker`` command).

    Then it shuts down gracefully: it stops polling for tasks, gives the activities in
    flight ``grace`` seconds to finish, and cancels the others; a tool call cut so ends
    "outcome unknown" (`ToolOutcomeUnknown`) for the model, and the run goes on on another
    worker of the queue. The store is closed last.

    Args:
        target: The Temporal frontend, ``HOST:PORT``.
        task_queue: The task queue.
        agent: The factory, as ``module:attribute``.
        store: The store's URL or SQLite path (``agentfsm runs`` reads the same one).
        namespace: The Temporal namespace.
        name: The name the agent runs under.
        grace: Seconds the activities in flight get to finish at shutdown.
        until: Run until this completes (None: until cancelled).
        on_ready: Called once the worker polls its task queue.
        **options: Passed to `create_worker` (``max_cached_workflows``,
            ``sticky_queue_schedule_to_start_timeout``…).
    """
    try:
        from agentfsm.stores.urls import open_store

        _checks.seconds("grace", grace, zero=True)
        factory = load_factory(agent)
        client = await Client.connect(target, namespace=namespace)
        with open_store(store) as opened:
            worker = create_worker(
                client,
                task_queue=task_queue,
                agents={name: factory},
                store=opened,
                graceful_shutdown_timeout=timedelta(seconds=grace),
                **options,
            )
            async with worker:
                if on_ready is not None:
                    on_ready()
                await (until if until is not None else asyncio.Event().wait())
    finally:
        if inspect.iscoroutine(until):  # (refused before awaiting it: closed, not left to
            until.close()  # warn at garbage collection that it was never awaited)
