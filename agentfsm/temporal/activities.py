"""The activities of a run: a model call, a tool body, a step's store write.

They run on the worker, with its agents (`AgentTemplate`) and its `RunStore`. Each one is
safe to retry: the store write skips a save already stored; the model activity reads the
conversation from the store (it is not carried in the history); a tool body gets the call's
idempotency key (run id + call id) in its `ToolContext`.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import functools
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from agentfsm.errors import ModelCallError, ModelError, ToolOutputError
from agentfsm.llm.base import Model, ModelResponse
from agentfsm.llm.retry import RetryPolicy as ModelRetryPolicy
from agentfsm.states.events import Event
from agentfsm.states.json import JSONObject
from agentfsm.stores.base import RunStore
from agentfsm.stores.snapshot import Snapshot
from agentfsm.temporal.payloads import (
    MODEL_ACTIVITY,
    STORE_ACTIVITY,
    TOOL_ACTIVITY,
    ModelRequest,
    StoreBatch,
    ToolRequest,
)
from agentfsm.temporal.template import AgentTemplate
from agentfsm.temporal.wire import attributes, to_failure
from agentfsm.tools.arguments import ArgumentLimits
from agentfsm.tools.content import ToolContent, content_json
from agentfsm.tools.context import ToolContext
from agentfsm.tools.execution import run_once
from agentfsm.tools.results import json_output
from agentfsm.tools.spec import Tool

T = TypeVar("T")


def one_attempt(model: Model) -> Model:
    """``model`` making a single attempt per call: Temporal does the retrying.

    A model with an agentfsm `RetryPolicy` (``OpenAIModel``) is copied with
    ``max_attempts=1`` (its client's own retries are already off); any other is used as is.
    """
    policy = getattr(model, "_retry", None)
    if not isinstance(policy, ModelRetryPolicy) or policy.max_attempts == 1:
        return model
    single = copy.copy(model)
    single._retry = dataclasses.replace(policy, max_attempts=1)  # type: ignore[attr-defined]
    return single


def _model_failure(error: ModelError, model: Model) -> ApplicationError:
    """A model error as a failure: retried by Temporal only if it is of a transient kind.

    A model without an agentfsm `RetryPolicy` does not retry in one process either, so
    its errors are all final.
    """
    retries = isinstance(getattr(model, "retry", None), ModelRetryPolicy)
    retryable = retries and isinstance(error, ModelCallError) and error.retryable
    retry_after = getattr(error, "retry_after", None)
    delay = (
        timedelta(seconds=retry_after)
        if retryable and isinstance(retry_after, (int, float))
        else None
    )
    return ApplicationError(
        str(error),
        attributes(error),
        type=type(error).__name__,
        non_retryable=not retryable,
        next_retry_delay=delay,
    )


async def _within(call: Awaitable[T], seconds: float | None, name: str, attempt: int) -> T:
    """``call``, cancelled after ``seconds`` (None: no limit) with a timeout `ModelCallError`.

    The run's ``model_timeout``, enforced here rather than by the activity's start-to-close
    timeout, so a timeout is the model's error: final, or retried under its `RetryPolicy`.
    """
    if seconds is None:
        return await call
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        return await asyncio.wait_for(call, seconds)
    except asyncio.TimeoutError:
        if loop.time() - started < seconds:  # (the model's own, not the deadline)
            raise
    raise ModelCallError(
        f"model {name!r} call timed out after {seconds:g}s (the run's model_timeout), "
        f"attempt {attempt}",
        model=name,
        reason="timeout",
        attempts=attempt,
        retryable=True,
    )


def _whole(
    tail: Snapshot, stored: Snapshot | None, messages_from: int, trace_from: int
) -> Snapshot:
    """The snapshot a delta stands for: the stored conversation's head, then its tail."""
    if not messages_from and not trace_from:
        return tail
    held = (0, 0) if stored is None else (len(stored.messages), len(stored.trace))
    if stored is None or held[0] < messages_from or held[1] < trace_from:
        raise ApplicationError(
            f"the store holds {held[0]} messages and {held[1]} trace entries of run "
            f"{tail.run_id!r}; the save builds on {messages_from} and {trace_from}: the "
            "store is not the one the run saves to",
            type="StoreMismatch",
            non_retryable=True,
        )
    return tail.model_copy(
        update={
            "messages": stored.messages[:messages_from] + tail.messages,
            "trace": stored.trace[:trace_from] + tail.trace,
        }
    )


async def _run_body(
    declared: Tool[..., object], kwargs: dict[str, object], request: ToolRequest, grace: float
) -> object:
    """One try of the body: under ``request.timeout`` as `ToolSystem` runs it in one process.

    A sync body runs in a thread (the heartbeat goes on); a timeout raises `ToolTimeoutError`.
    """
    timeout = request.timeout if request.timeout is not None else declared.timeout
    if timeout is not None:
        timed = copy.copy(declared)
        timed.timeout = timeout
        return await run_once(timed, kwargs, request.call_id, grace)
    function = declared.function
    assert function is not None  # (client-side tools never reach an activity)
    if declared.is_async:
        value = function(**kwargs)
        return await value if inspect.isawaitable(value) else value
    return await asyncio.to_thread(functools.partial(function, **kwargs))


class RunActivities:
    """The activities for a worker's agents and store.

    Args:
        templates: The worker's agents, by name.
        store: Where the runs persist (the worker's `RunStore`).
        heartbeat_every: Seconds between a running tool body's heartbeats.
    """

    def __init__(
        self, templates: Mapping[str, AgentTemplate], store: RunStore, heartbeat_every: float
    ) -> None:
        self._templates = dict(templates)
        self._store = store
        self._every = heartbeat_every
        self._models = {name: one_attempt(t.model) for name, t in self._templates.items()}

    def _template(self, name: str) -> AgentTemplate:
        template = self._templates.get(name)
        if template is None:
            raise ApplicationError(f"this worker has no agent {name!r}", type="UnknownAgent")
        return template

    @activity.defn(name=STORE_ACTIVITY)
    async def store(self, batch: StoreBatch) -> None:
        """Apply a step's saves in order; a save already stored (a retry) is skipped."""
        await asyncio.to_thread(self._store_batch, batch)

    def _store_batch(self, batch: StoreBatch) -> None:
        for write in batch.writes:
            tail = Snapshot.model_validate(write.snapshot)
            stored = self._store.load(tail.run_id)
            if stored is not None and stored.version >= tail.version:
                continue  # stored by an earlier attempt of this activity
            snapshot = _whole(tail, stored, write.messages_from, write.trace_from)
            events = [Event.model_validate(event) for event in write.events]
            try:
                self._store.save(snapshot, events, expected_version=write.expected_version)
            except Exception as error:
                retry = type(error).__name__ == "StoreWriteError"
                raise to_failure(error, retryable=retry) from None

    @activity.defn(name=MODEL_ACTIVITY)
    async def model(self, request: ModelRequest) -> JSONObject:
        """One model attempt on the stored conversation, within ``request.timeout``."""
        template = self._template(request.agent)
        if request.writes:
            await asyncio.to_thread(self._store_batch, StoreBatch(request.writes))
        snapshot = await asyncio.to_thread(self._store.load, request.run_id)
        messages = () if snapshot is None else snapshot.messages
        if len(messages) != request.count:
            raise ApplicationError(
                f"the store holds {len(messages)} messages of run {request.run_id!r}, "
                f"the workflow {request.count}: the store is not the one the run saves to",
                type="StoreMismatch",
                non_retryable=True,
            )
        tools = template.registry.openai_tools(request.enabled)
        beat = asyncio.ensure_future(self._heartbeat())
        try:
            model = self._models[request.agent]
            response: ModelResponse = await _within(
                model.complete(tuple(messages), tools),
                request.timeout,
                model.name,
                activity.info().attempt,
            )
        except ModelError as error:
            raise _model_failure(error, template.model) from None
        finally:
            beat.cancel()
        return response.model_dump(mode="json")

    @activity.defn(name=TOOL_ACTIVITY)
    async def tool(self, request: ToolRequest) -> JSONObject:
        """Run one tool body (heartbeating), with the call's `ToolContext`.

        The body runs under its timeout as in one process; its failure (a timeout included)
        is retried by Temporal only if the tool is idempotent and lists it in ``retry_on``.
        The result and the failure carry the attempt (``activity.info().attempt``).
        """
        template = self._template(request.agent)
        declared = template.registry.get(request.tool)
        kwargs = declared.arguments.parse(
            request.call_id, json.dumps(request.arguments), ArgumentLimits()
        )
        if declared.context_parameter is not None:
            kwargs[declared.context_parameter] = ToolContext(
                request.run_id,
                request.turn,
                request.iteration,
                request.call_id,
                request.user_id,
                deps=template.deps,
            )
        attempt = activity.info().attempt
        beat = asyncio.ensure_future(self._heartbeat())
        try:
            value = await _run_body(declared, kwargs, request, template.cancel_grace)
        except Exception as error:
            retry = declared.idempotent and isinstance(error, declared.retry_on)
            raise to_failure(error, retryable=retry, attempt=attempt) from None
        finally:
            beat.cancel()
        content = value if isinstance(value, ToolContent) else None
        try:
            output, _ = json_output(value if content is None else content.value)
        except (TypeError, ValueError, RecursionError) as error:
            bad = ToolOutputError(declared.name, request.call_id, type(value).__name__, str(error))
            raise to_failure(bad, attempt=attempt) from None
        # As JSON text: the converter would sort an object's keys, and the model reads them.
        done: JSONObject = {"json": json.dumps(output, ensure_ascii=False), "attempt": attempt}
        if content is not None:  # media and the user's own content, as their parts' JSON
            done["content"] = content_json(content)
        return done

    async def _heartbeat(self) -> None:
        """Heartbeat every ``heartbeat_every`` seconds, or thrice per heartbeat timeout."""
        if activity.info().is_local:  # (a local activity has no heartbeat to send)
            return
        timeout = activity.info().heartbeat_timeout
        every = self._every if timeout is None else min(self._every, timeout.total_seconds() / 3)
        while True:
            activity.heartbeat()
            await asyncio.sleep(every)

    def all(self) -> list[Callable[..., Any]]:
        """The activity functions, to register with a worker."""
        return [self.store, self.model, self.tool]
