"""The Agent's parts inside a workflow: a model, tools and a store that are activities.

The workflow runs a real `Agent` (the same RunLifecycle and TurnLoop, the same ToolSystem
validating arguments and checking permissions, the same hooks and guards). Only three of
its parts are swapped for proxies whose work is an activity: `ActivityModel` (the model
call), `ActivityTool` (a tool body) and `WorkflowStore` (the saves).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any, TypeVar

from pydantic_core import to_jsonable_python
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    RetryState,
    TimeoutError,
    TimeoutType,
)

from agentfsm.agent.rounds import OUTCOME_UNKNOWN
from agentfsm.errors import ModelCallError, ToolTimeoutError
from agentfsm.llm.base import ModelResponse, RetryListener
from agentfsm.llm.retry import RetryPolicy as ModelRetryPolicy
from agentfsm.states.events import Event
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message
from agentfsm.stores.base import ClosesOnExit, RunSummary
from agentfsm.stores.snapshot import Snapshot
from agentfsm.temporal.payloads import (
    LOCAL_MODEL_PATCH,
    MODEL_ACTIVITY,
    STORE_ACTIVITY,
    TOOL_ACTIVITY,
    ModelRequest,
    RunSettings,
    StoreBatch,
    StoreWrite,
    ToolRequest,
)
from agentfsm.temporal.wire import failure_attempt, from_failure
from agentfsm.tools.content import content_of
from agentfsm.tools.context import ToolContext
from agentfsm.tools.execution import TRIED_ATTRIBUTE, Tried
from agentfsm.tools.spec import Tool

T = TypeVar("T")

CONTEXT_KEY = "__agentfsm_context__"
"""The keyword the ToolSystem hands an `ActivityTool`'s body its `ToolContext` under."""


def _seconds(value: float) -> timedelta:
    return timedelta(seconds=value)


def model_retry_policy(model: object, settings: RunSettings) -> RetryPolicy:
    """Temporal's retries for a model call: the model's own `RetryPolicy`, else one try.

    Inside the activity the model makes one attempt (its client's retries and its own are
    off), so the retries do not multiply. An attempt longer than the run's ``model_timeout``
    fails in the activity, retryable only under the model's policy (as a timeout is in one
    process). Without a policy, the model's own errors and timeouts are final (the activity
    marks them non-retryable); only a lost or stuck worker makes the call again, as a
    resumed run would, and at most ``settings.lost_model_attempts`` times in all.
    """
    policy = getattr(model, "retry", None)
    if not isinstance(policy, ModelRetryPolicy):
        return RetryPolicy(
            maximum_attempts=settings.lost_model_attempts,
            initial_interval=timedelta(milliseconds=100),
            maximum_interval=_seconds(5.0),
        )
    return RetryPolicy(
        maximum_attempts=policy.max_attempts,
        initial_interval=_seconds(policy.initial_wait),
        maximum_interval=_seconds(max(policy.max_wait, policy.initial_wait)),
        backoff_coefficient=2.0,
    )


def _model_error(error: ActivityError | ApplicationError | TimeoutError, name: str) -> Exception:
    """What a failed model call stands for (a local activity's failure comes unwrapped)."""
    cause = error.cause if isinstance(error, ActivityError) else error
    if isinstance(cause, ApplicationError):
        return from_failure(cause)
    if isinstance(cause, TimeoutError):
        return ModelCallError(
            f"the model call timed out ({cause.type.name if cause.type else 'timeout'})",
            model=name,
            reason="timeout",
            retryable=True,
        )
    return ModelCallError(str(error), model=name, reason="activity", retryable=True)


class ActivityModel:
    """A model whose every call is the model activity (the conversation is read from the store).

    Args:
        store: The run's store (flushed before each call: the activity reads it).
        name: The model's name.
        agent: The agent's name.
        run_id: The run.
        settings: The run's timeouts.
        retry: Temporal's retries for a call.
    """

    def __init__(
        self,
        store: WorkflowStore,
        name: str,
        agent: str,
        run_id: str,
        settings: RunSettings,
        retry: RetryPolicy,
    ) -> None:
        self._store = store
        self._name = name
        self._agent = agent
        self._run_id = run_id
        self._settings = settings
        self._retry = retry
        self.enabled: list[str] | None = None
        """The tools offered (set from the Agent's ``enabled_tools``)."""

    @property
    def name(self) -> str:
        """The model's name."""
        return self._name

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[JSONObject],
        *,
        on_retry: RetryListener | None = None,
    ) -> ModelResponse:
        """Run the model activity on the stored conversation (``len(messages)`` checked)."""
        try:
            data = await self._store.sending(
                lambda batch: self._call(
                    ModelRequest(
                        self._agent,
                        self._run_id,
                        len(messages),
                        self.enabled,
                        batch.writes,
                        timeout=self._settings.model_timeout,
                    )
                )
            )
        except (ActivityError, ApplicationError, TimeoutError) as error:
            raise _model_error(error, self._name) from None
        return ModelResponse.model_validate(data)

    def _call(self, request: ModelRequest) -> Awaitable[dict[str, Any]]:
        """The model activity for ``request``: local if the run's settings say so.

        The activity enforces ``model_timeout`` itself; its start-to-close timeout is that
        plus the heartbeat timeout, a backstop that fires only for a lost or stuck worker.
        """
        settings = self._settings
        timeout = _seconds(settings.model_timeout + settings.heartbeat_timeout)
        if settings.local_model_calls and workflow.patched(LOCAL_MODEL_PATCH):
            return workflow.execute_local_activity(
                MODEL_ACTIVITY,
                request,
                start_to_close_timeout=timeout,
                retry_policy=self._retry,
                result_type=dict,
            )
        return workflow.execute_activity(
            MODEL_ACTIVITY,
            request,
            start_to_close_timeout=timeout,
            heartbeat_timeout=_seconds(settings.heartbeat_timeout),
            retry_policy=self._retry,
            result_type=dict,
        )


class ActivityTool(Tool[..., object]):
    """A tool whose body is the tool activity; its declaration is the real tool's."""

    __slots__ = ("declared",)

    declared: Tool[..., object]

    @property
    def context_parameter(self) -> str | None:
        """Always `CONTEXT_KEY`: the proxy needs the call it runs for."""
        return CONTEXT_KEY


def activity_tool(
    declared: Tool[..., object], agent: str, settings: RunSettings, max_attempts: int
) -> Tool[..., object]:
    """``declared`` with its body replaced by the tool activity (client-side tools as they are).

    The activity runs the body under the tool's timeout (else the run's ``tool_timeout``), as
    the `ToolSystem` does in one process; the activity's start-to-close timeout is that plus
    the heartbeat timeout, a backstop. Temporal retries an idempotent tool's failures only
    if its ``retry_on`` lists them (the activity marks the others non-retryable), and a lost
    worker; any other tool is tried once, with a heartbeat timeout, so a worker lost mid-call
    gives "outcome unknown". The result records the attempts Temporal made.
    """
    if declared.function is None or declared.client_side:
        return declared
    proxy: ActivityTool = object.__new__(ActivityTool)
    for slot in Tool.__slots__:
        setattr(proxy, slot, getattr(declared, slot))
    proxy.declared = declared
    proxy.timeout = None
    proxy.retry_on = ()
    proxy.is_async = True
    attempts = max_attempts if declared.idempotent else 1
    retry = RetryPolicy(
        maximum_attempts=attempts,
        initial_interval=timedelta(milliseconds=100),
        maximum_interval=_seconds(5.0),
    )
    timeout = declared.timeout if declared.timeout is not None else settings.tool_timeout

    async def body(**kwargs: Any) -> object:
        context: ToolContext = kwargs.pop(CONTEXT_KEY)
        request = ToolRequest(
            agent,
            declared.name,
            to_jsonable_python(kwargs),
            context.run_id,
            context.turn,
            context.iteration,
            context.call_id,
            context.user_id,
            timeout=timeout,
        )
        try:
            done = await workflow.execute_activity(
                TOOL_ACTIVITY,
                request,
                start_to_close_timeout=_seconds(timeout + settings.heartbeat_timeout),
                heartbeat_timeout=_seconds(settings.heartbeat_timeout),
                retry_policy=retry,
                result_type=dict,
            )
        except ActivityError as error:
            failure = tool_error(error, declared, context.call_id, settings)
            setattr(failure, TRIED_ATTRIBUTE, _attempts(error, attempts))
            raise failure from None
        value = json.loads(done["json"])
        if "content" in done:  # media, or content for the user only
            value = content_of(value, done["content"])
        return Tried(value, done.get("attempt", 1))

    proxy.function = body
    return proxy


def _attempts(error: ActivityError, maximum: int) -> int:
    """How many attempts a failed tool activity made.

    Its last attempt's failure says so; a timeout (a lost worker) does not, and ends the
    retries only at the maximum (or on a tool tried once).
    """
    cause = error.cause
    if isinstance(cause, ApplicationError):
        attempt = failure_attempt(cause)
        if attempt is not None:
            return attempt
    return maximum if error.retry_state is RetryState.MAXIMUM_ATTEMPTS_REACHED else 1


class ToolOutcomeUnknown(Exception):  # noqa: N818 - named as the error type the model reads
    """A tool call whose worker was lost mid-call: it may or may not have had its effect."""


ToolOutcomeUnknown.__name__ = OUTCOME_UNKNOWN


def tool_error(
    error: ActivityError, declared: Tool[..., object], call_id: str, settings: RunSettings
) -> Exception:
    """The exception a failed tool activity stands for, as the ToolSystem records it."""
    cause = error.cause
    again = "" if declared.idempotent else ", since the tool is not idempotent"
    if _cut_by_shutdown(cause):
        return ToolOutcomeUnknown(
            "the worker running the call shut down before the call finished (its grace "
            f"period ran out) and its outcome is unknown; it was not run again{again}"
        )
    if isinstance(cause, ApplicationError):
        return from_failure(cause)
    if isinstance(cause, TimeoutError) and cause.type is TimeoutType.HEARTBEAT:
        return ToolOutcomeUnknown(
            f"the worker running the call stopped answering (no heartbeat for "
            f"{settings.heartbeat_timeout:g}s) and its outcome is unknown; it was not run "
            f"again{again}"
        )
    timeout = declared.timeout if declared.timeout is not None else settings.tool_timeout
    return ToolTimeoutError(declared.name, call_id, timeout)


WORKER_SHUTDOWN = "WorkerShutdown"
"""The failure type Temporal gives an activity its worker cut at shutdown (grace run out)."""


def _cut_by_shutdown(cause: BaseException | None) -> bool:
    """Whether a tool activity failed because its worker shut down mid-call.

    The body may have had its effect: for the model that is "outcome unknown", never an
    ordinary error that invites it to call the tool again.
    """
    if not isinstance(cause, ApplicationError):
        return False
    return cause.type == WORKER_SHUTDOWN or (
        cause.type is None and str(cause.message).startswith("Worker shutting down")
    )


def _kept(before: Sequence[object], now: Sequence[object]) -> int:
    """How many leading items ``now`` shares with ``before`` (the same objects)."""
    kept, limit = 0, min(len(before), len(now))
    while kept < limit and before[kept] is now[kept]:
        kept += 1
    return kept


def _delta(
    snapshot: Snapshot,
    events: Sequence[Event],
    expected: int | None,
    sent: tuple[Sequence[object], Sequence[object]],
) -> StoreWrite:
    """``snapshot`` as a delta on what the store holds (``sent``: its messages and trace)."""
    messages_from = _kept(sent[0], snapshot.messages)
    trace_from = _kept(sent[1], snapshot.trace)
    data = snapshot.model_dump(mode="json", exclude={"messages", "trace"})
    data["messages"] = [m.model_dump(mode="json") for m in snapshot.messages[messages_from:]]
    data["trace"] = [t.model_dump(mode="json") for t in snapshot.trace[trace_from:]]
    return StoreWrite(
        data,
        messages_from,
        trace_from,
        [event.model_dump(mode="json") for event in events],
        expected,
    )


class WorkflowStore(ClosesOnExit):
    """The Agent's store inside a workflow: each step's saves go to the store activity.

    ``save`` (a save outside a step) queues; ``asave`` (a step's group commit) sends what is
    queued and the new save in one activity, retried until the worker's store takes it.
    ``load`` answers the last snapshot stored, or the one carried by continue-as-new.

    Args:
        run_id: The run.
        carried: The snapshot a continued run starts from (None for a new run).
        settings: The run's timeouts.
    """

    def __init__(self, run_id: str, carried: Snapshot | None, settings: RunSettings) -> None:
        self.run_id = run_id
        self.last = carried
        """The last snapshot the worker's store holds."""
        self._settings = settings
        self._queue: list[tuple[Snapshot, tuple[Event, ...], int | None]] = []
        self._sent: tuple[tuple[object, ...], tuple[object, ...]] = (
            (carried.messages, carried.trace) if carried is not None else ((), ())
        )
        self._lock = asyncio.Lock()
        self.writes = 0
        """Store activities run so far (by this workflow run)."""

    def save(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        """Queue a save (sent with the next step's)."""
        self._queue.append((snapshot, tuple(events), expected_version))

    async def asave(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        """Queue a step's save: it is sent by `flush`, before the next model call or reply.

        Inside a workflow the history, not the store, is what makes a step durable (a tool
        body's start is recorded by its scheduling), so saves wait for the next point where
        someone reads the store: the model activity, and the reply to a client.
        """
        self.save(snapshot, events, expected_version=expected_version)

    async def flush(self) -> None:
        """Send the queued saves, in order, in one store activity (a local activity)."""
        await self.sending(self._write)

    async def _write(self, batch: StoreBatch) -> None:
        await workflow.execute_local_activity(
            STORE_ACTIVITY,
            batch,
            start_to_close_timeout=_seconds(self._settings.store_timeout),
            retry_policy=RetryPolicy(maximum_interval=_seconds(10.0)),
        )
        self.writes += 1

    async def sending(self, send: Callable[[StoreBatch], Awaitable[T]]) -> T | None:
        """Hand the queued saves to ``send`` (an activity that stores them first).

        Saves stay in order: one sending at a time. If ``send`` raises, the saves are
        queued again in front (a store write skips what an attempt already stored).

        Returns:
            What ``send`` returned; None if nothing was queued and ``send`` was not called
            (the model call sends an empty batch: it always runs).
        """
        if not self._queue and send == self._write:
            return None
        async with self._lock:
            queued, self._queue = self._queue, []
            sent = self._sent
            writes = []
            for snapshot, events, expected in queued:
                writes.append(_delta(snapshot, events, expected, sent))
                sent = (snapshot.messages, snapshot.trace)
            if not writes and send == self._write:
                return None
            try:
                result = await send(StoreBatch(writes))
            except BaseException:
                self._queue[:0] = queued
                raise
            if queued:
                self.last = queued[-1][0]
            self._sent = sent
            return result

    def load(self, run_id: str) -> Snapshot | None:
        """The last snapshot stored (or carried)."""
        return self.last if run_id == self.run_id else None

    def events(self, run_id: str, after_seq: int = 0) -> list[Event]:
        """None kept in the workflow: the worker's store has them."""
        return []

    def list_runs(self) -> list[RunSummary]:
        """This run only, if stored."""
        last = self.last
        if last is None:
            return []
        return [RunSummary(last.run_id, last.state, last.turn, last.seq, last.version)]

    def delete(self, run_id: str) -> None:
        """Not supported inside a workflow (nothing to do)."""

    def close(self) -> None:
        """Nothing to release."""


__all__ = [
    "ActivityModel",
    "ActivityTool",
    "WorkflowStore",
    "activity_tool",
    "model_retry_policy",
    "tool_error",
]
