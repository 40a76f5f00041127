"""Serve an agent over the A2A protocol (v1.0), with the protocol's own SDK (``a2a-sdk``).

Needs the ``a2a`` extra. `a2a_app` makes a Starlette app from an agent factory and a run
store; ``agentfsm serve-a2a --agent module:factory --store PATH`` runs it under uvicorn.

- A task's **context id is the run id**: the first message of a context starts the run
  (``factory(run_id, store)`` builds its Agent), and a run that completed or failed takes
  the next task of its context as its next turn. The run, not the server, holds the work:
  a server started since goes on from the store.
- A message is the run's next input, by the run's state: a user input while it is at
  rest (``submit``); the answer to its question in ``input_required`` (``provide_input``);
  in ``requires_action``, a data part ``{"decisions": {call_id: decision}}``, each decision
  ``"approve"``, ``"deny"`` or a `Decision` as JSON (``resolve_action``).
- Each transition is a status update, its state projected by `agentfsm.states.projections`
  and its ``metadata["agentfsm"]`` naming the machine, event, source, target and seq. The
  final reply is an artifact (``reply``), and a tool's content for the user only (a
  ``user_content`` record) an artifact ``user_content`` when it comes (text parts and raw
  media parts with their media type); ``requires_action`` and ``input_required`` are
  ``input-required`` with a data part ``{"pending": [...], "question": ...}`` listing the
  pending calls.
- Cancelling a task cancels the run's turn: at once while it waits, at the next step
  boundary while it works (the request returns once the turn has stopped). A new task in
  the context of a waiting run is rejected.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from a2a.helpers.proto_helpers import (
    get_data_parts,
    get_text_parts,
    new_task,
)
from a2a.server.agent_execution import (
    AgentExecutor,
    RequestContext,
    SimpleRequestContextBuilder,
)
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    CancelTaskRequest,
    Message,
    SendMessageRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import InternalError
from starlette.applications import Starlette
from starlette.middleware import Middleware

from agentfsm.agent.core import Agent
from agentfsm.agent.vocabulary import ASK_USER, AgentEvent, DecisionLike, TurnOutcome
from agentfsm.errors import AgentFSMError
from agentfsm.serve.a2a_json import IntegerMetadata
from agentfsm.serve.a2a_report import TASK_STATES, Report, agent_message, hidden
from agentfsm.serve.a2a_tasks import SQLiteTaskStore, task_store_path
from agentfsm.states.events import Event
from agentfsm.states.names import RUN_WAITING, MachineName, RecordKind, RunState
from agentfsm.stores.base import RunStore
from agentfsm.stores.memory import MemoryStore
from agentfsm.stores.sqlite import SQLiteStore
from agentfsm.tools.policy import Decision

__all__ = ["TASK_STATES", "AgentFactory", "RunExecutor", "a2a_app", "agent_card"]

AgentFactory = Callable[[str, RunStore], Agent]
"""Builds the Agent of a run: ``factory(run_id, store)`` must return an Agent with that
``run_id`` and that ``store`` (it restores the run when the store holds it)."""


def agent_card(
    agent: Agent,
    url: str,
    *,
    name: str = "agentfsm",
    description: str | None = None,
    version: str = "1.0.0",
    v0_3: bool = True,
) -> AgentCard:
    """The A2A agent card of ``agent`` served at ``url``: one skill per tool it offers.

    An agent without tools gets one skill, ``conversation`` (the protocol requires one).
    With ``v0_3``, the bindings are listed for protocol 0.3 too, after those of 1.0.

    The JSON-RPC binding is at ``url`` and the REST (HTTP+JSON) binding under it; the card
    says the agent streams.
    """
    skills = []
    for schema in agent.tools.openai_tools(agent.enabled_tools):
        function = schema.get("function")
        if not isinstance(function, dict) or function.get("name") == ASK_USER:
            continue
        tool_name = str(function.get("name"))
        skills.append(
            AgentSkill(
                id=tool_name,
                name=tool_name,
                description=str(function.get("description") or tool_name),
                tags=["tool"],
            )
        )
    count = len(skills)
    if not skills:  # the protocol requires one: an agent without tools still converses
        skills.append(
            AgentSkill(
                id="conversation",
                name="conversation",
                description="Each message is the run's next input; the reply is its answer.",
                tags=["chat"],
            )
        )
    return AgentCard(
        name=name,
        description=description or f"An agentfsm agent with {count} tool(s).",
        version=version,
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=binding, protocol_version=protocol)
            for protocol in (("1.0", "0.3") if v0_3 else ("1.0",))
            for binding in ("JSONRPC", "HTTP+JSON")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=skills,
    )


@dataclass(slots=True)
class _Served:
    """One run's Agent while requests use it, and the lock that takes them one at a time."""

    agent: Agent
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0
    """Requests holding or waiting for the Agent; at 0 it is let go."""


class RunExecutor(AgentExecutor):
    """The A2A `AgentExecutor` of a run store: each task's message is its run's next input.

    A run's Agent lives while requests use it: built (restored from the store) by the first,
    shared by those that come while it works, and let go when the last one is done, so a
    server holds only the runs it is working on.

    Args:
        factory: Builds a run's Agent (see `AgentFactory`).
        store: The run store every Agent is given.
    """

    def __init__(self, factory: AgentFactory, store: RunStore) -> None:
        self.factory = factory
        self.store = store
        self._served: dict[str, _Served] = {}

    def _build(self, run_id: str) -> Agent:
        agent = self.factory(run_id, self.store)
        if not isinstance(agent, Agent) or agent.run_id != run_id or agent.store is not self.store:
            raise TypeError(
                f"the agent factory must return an Agent with run_id={run_id!r} and the "
                f"store it was given, not {agent!r}"
            )
        return agent

    @asynccontextmanager
    async def holding(self, run_id: str) -> AsyncIterator[Agent]:
        """The run's Agent, started, for this request alone until the block ends."""
        served = self._served.get(run_id)
        if served is None:
            served = self._served[run_id] = _Served(self._build(run_id))
        served.users += 1
        try:
            async with served.lock:
                if served.agent.state == RunState.CREATED:
                    await served.agent.astart()
                yield served.agent
        finally:
            served.users -= 1
            if served.users == 0:
                del self._served[run_id]

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Give the run the task's message as its next input; report every transition."""
        task_id, run_id = str(context.task_id), _run_id(context)
        fresh = context.current_task is None
        if fresh:
            history = [context.message] if context.message is not None else []
            await event_queue.enqueue_event(
                new_task(task_id, run_id, TaskState.TASK_STATE_SUBMITTED, history=history)
            )
        report = Report(TaskUpdater(event_queue, task_id, run_id))
        try:
            async with self.holding(run_id) as agent:
                await _take(agent, context.message, fresh, report)
        except Exception as error:  # (the factory's, a store's): the task still ends
            if not report.closed:
                await report.updater.failed(agent_message(hidden(error, "a task")))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Cancel the run's turn: at once while it waits, at the next boundary while busy.

        A busy turn's request closes its task (``canceled``, on its stream too) once the
        turn has stopped; this returns then, before the SDK cancels that request.
        """
        run_id = _run_id(context)
        working = self._served.get(run_id)
        if working is not None and working.agent.state == RunState.BUSY:
            await working.agent.acancel()
            async with working.lock:  # held by the turn's request until it has closed
                return
        if await self.settle_cancel(run_id):
            updater = TaskUpdater(event_queue, str(context.task_id), run_id)
            await updater.cancel(agent_message("The run's turn was cancelled."))

    async def settle_cancel(self, run_id: str) -> bool:
        """Cancel the run's wait, if it waits; whether its turn is now cancelled.

        Also for a task cancelled while no server held it, whose run still waits.
        """
        async with self.holding(run_id) as agent:
            if agent.state in RUN_WAITING:
                await agent.acancel()
            return agent.state == RunState.FAILED


_Step = Callable[[], Awaitable[TurnOutcome]]


async def _take(agent: Agent, message: Message | None, fresh: bool, report: Report) -> None:
    """Give ``agent`` the message as its next input; report the turn to its close."""
    try:
        step = _next_input(agent, message, fresh)
        outcome = await _relay(agent, step, report)
    except Exception as error:
        refusal = isinstance(error, (AgentFSMError, ValueError)) and report.last is None
        if refusal:  # refused: nothing changed
            await report.refused(agent, error, fresh)
        else:  # the turn moved, then raised (a hook, the model): it is at rest now
            report.failed_with(error)
            await report.close(agent, agent.outcome())
        return
    await report.close(agent, outcome)


def _run_id(context: RequestContext) -> str:
    """The run of a request: its task's context (a follow-up message may name only the task)."""
    task = context.current_task
    return task.context_id if task is not None else str(context.context_id)


def _next_input(agent: Agent, message: Message | None, fresh: bool) -> _Step:
    """What the message is to the run in its state (raises `ValueError` if it is nothing)."""
    text = "\n".join(get_text_parts(message.parts)) if message is not None else ""
    if fresh and agent.state in RUN_WAITING:
        raise ValueError(
            f"run {agent.run_id!r} is in {agent.state!r}, waiting in the task that asked: "
            "answer in that task, or cancel it, before starting another"
        )
    if agent.state == RunState.REQUIRES_ACTION:
        decisions = _decisions(message)
        return lambda: agent.aresolve_action(decisions)
    if agent.state == RunState.INPUT_REQUIRED:
        return lambda: agent.aprovide_input(text)
    return lambda: agent.asubmit(text)


def _decisions(message: Message | None) -> dict[str, DecisionLike]:
    found = get_data_parts(message.parts) if message is not None else []
    for data in found:
        if isinstance(data, dict) and isinstance(data.get("decisions"), dict):
            return {
                str(call_id): value if isinstance(value, str) else Decision.model_validate(value)
                for call_id, value in data["decisions"].items()
            }
    raise ValueError(
        "the run awaits decisions: send a data part {'decisions': {call_id: decision}}, each "
        "decision 'approve', 'deny' or a Decision as JSON; got "
        f"{json.dumps(found) if found else 'no data part'}"
    )


async def _relay(agent: Agent, step: _Step, report: Report) -> TurnOutcome:
    """Run ``step``, reporting each transition as it happens; return its outcome."""
    events: asyncio.Queue[AgentEvent] = asyncio.Queue()
    agent.add_listener(events.put_nowait)
    try:
        call = asyncio.ensure_future(step())
        try:
            async for event in _drain(call, events):
                if not isinstance(event, Event):
                    continue
                if event.machine != MachineName.CONVERSATION:
                    await report.transition(event)
                elif event.event == RecordKind.USER_CONTENT:
                    await report.user_content(event)
        except asyncio.CancelledError:
            # The request was cancelled (tasks/cancel, or the server stopping): so is the
            # turn, at its next step boundary (docs/contract.md §1), and the lock is held until
            # it has stopped, so that the run is at rest when the next request comes.
            if agent.state == RunState.BUSY:
                await agent.acancel()
            await asyncio.wait({call})
            if not call.cancelled() and call.exception() is None:
                # The stream's last event, if the task's queue still takes it (best effort:
                # the request is going away, and its cancellation is what propagates).
                with contextlib.suppress(Exception):
                    await report.close(agent, call.result())
            raise
        return call.result()
    finally:
        agent.remove_listener(events.put_nowait)


async def _drain(
    call: asyncio.Future[TurnOutcome], events: asyncio.Queue[AgentEvent]
) -> AsyncIterator[AgentEvent]:
    while not (call.done() and events.empty()):
        getter = asyncio.ensure_future(events.get())
        waiting: set[asyncio.Future[Any]] = {getter, call}
        try:
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not getter.done():
                getter.cancel()
        if getter.done() and not getter.cancelled():
            yield getter.result()


class _TaskContexts(SimpleRequestContextBuilder):
    """Gives a message that names only its task the task's context (its run), from the store.

    The SDK holds a task's context in memory only while it serves the task; a server started
    since would otherwise give such a message a new context.
    """

    def __init__(self, task_store: TaskStore) -> None:
        super().__init__()
        self._tasks = task_store

    async def build(
        self,
        context: ServerCallContext,
        params: SendMessageRequest | None = None,
        task_id: str | None = None,
        context_id: str | None = None,
        task: Task | None = None,
    ) -> RequestContext:
        if task_id and not context_id:
            known = await self._tasks.get(task_id, context)
            context_id = known.context_id if known is not None else None
        return await super().build(context, params, task_id, context_id, task)


class _Handler(DefaultRequestHandler):
    """The SDK's request handler, which also cancels a waiting run the server did not hold."""

    def __init__(self, executor: RunExecutor, task_store: TaskStore, card: AgentCard) -> None:
        super().__init__(
            agent_executor=executor,
            task_store=task_store,
            agent_card=card,
            request_context_builder=_TaskContexts(task_store),
        )
        self._runs = executor

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        task: Task = await super().on_cancel_task(params, context)
        try:
            await self._runs.settle_cancel(task.context_id)
        except Exception as error:  # (the factory's, a store's): not shown to the caller
            raise InternalError(message=hidden(error, "cancelling a task")) from None
        return task


def a2a_app(
    factory: AgentFactory,
    store: RunStore,
    url: str,
    *,
    task_store: TaskStore | None = None,
    name: str = "agentfsm",
    description: str | None = None,
    v0_3: bool = True,
    stream_grace: float = 0.0,
) -> Starlette:
    """A Starlette app serving ``factory``'s agents over A2A: JSON-RPC at ``/``, REST, the card.

    Clients of protocol 1.0 send the header ``A2A-Version: 1.0``; a request without it is
    one of protocol 0.3, served through the SDK's compatibility layer (``v0_3``), whose
    card fields (``url``, ``protocolVersion``…) the agent card carries as well.

    Args:
        factory: Builds a run's Agent (see `AgentFactory`); it is also called once with a
            memory store to build the agent card from the tools.
        store: Where the runs persist.
        url: The server's public URL (it goes into the agent card).
        task_store: Where the A2A tasks are kept; by default beside a `SQLiteStore`'s file
            (`SQLiteTaskStore`) so that tasks outlive the server, else in memory.
        name: The agent card's name.
        description: The agent card's description.
        v0_3: Serve clients of protocol 0.3 too (False: they are refused, -32009).
        stream_grace: Seconds an open stream gets to finish when the server stops (keep
            it below the server's own graceful shutdown timeout); 0 ends it at once.
    """
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"url must be an http:// or https:// URL, not {url!r}")
    card = agent_card(
        factory("agent-card", MemoryStore()), url, name=name, description=description, v0_3=v0_3
    )
    given = task_store
    if task_store is None:
        task_store = (
            SQLiteTaskStore(task_store_path(store.path))
            if isinstance(store, SQLiteStore)
            else InMemoryTaskStore()
        )
    handler = _Handler(RunExecutor(factory, store), task_store, card)
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(
            handler, rpc_url="/", enable_v0_3_compat=v0_3, shutdown_grace_period=stream_grace
        ),
        *create_rest_routes(handler, enable_v0_3_compat=v0_3, shutdown_grace_period=stream_grace),
    ]
    owned = (
        task_store if isinstance(task_store, SQLiteTaskStore) and task_store is not given else None
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await handler.aclose()
            if isinstance(owned, SQLiteTaskStore):
                owned.close()

    return Starlette(routes=routes, lifespan=lifespan, middleware=[Middleware(IntegerMetadata)])
