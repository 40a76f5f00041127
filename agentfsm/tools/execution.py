"""Running one tool body: awaited or called, under its timeout, retried when that is safe.

A body's `Exception` is returned as data (`Attempted.error`), never raised; a
`BaseException` that is not an `Exception` (cancellation, KeyboardInterrupt, SystemExit)
always propagates. A sync body with a timeout runs in a daemon thread of its own: Python
cannot stop a thread, so after its timeout the body runs on and its outcome is dropped, but
the round, the event loop and interpreter exit do not wait for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import NamedTuple

from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt
from tenacity.wait import WaitBaseT

from agentfsm.errors import ToolTimeoutError
from agentfsm.tools.spec import Tool

PLAIN_VALUES = frozenset({str, int, float, bool, type(None), dict, list, tuple})
"""Types a body's value may have that are never awaitable (checked before the slow test)."""

Sleep = Callable[[float], Awaitable[None]]
"""How retries wait: ``await sleep(seconds)``; inject a fake one in tests."""


@dataclass(frozen=True, slots=True)
class RetrySettings:
    """How an idempotent tool's retryable failures are retried (shared by all tools)."""

    max_attempts: int
    """Tries in all, the first included."""
    wait: WaitBaseT
    """Tenacity's wait strategy between tries."""
    sleep: Sleep
    """Where the waiting happens."""
    cancel_grace: float
    """Seconds a timed-out async body is given to finish cancelling."""


class Attempted(NamedTuple):
    """What running a body produced: its value or its exception, and how many tries.

    (A named tuple: one is made per call, and it builds in a third of a frozen dataclass's
    time.)
    """

    value: object
    """What the body returned (None if it raised)."""
    error: Exception | None
    """What the last try raised, or None."""
    attempts: int
    """How many times the body was started."""


class Tried(NamedTuple):
    """A body's value, with how many times it was started elsewhere.

    A body that retries outside this process (a Temporal activity, retried by the server)
    returns its value as ``Tried(value, attempts)``, or raises an exception whose
    `TRIED_ATTRIBUTE` holds the attempts, so the `ToolResult` records the real count.
    """

    value: object
    """What the body returned."""
    attempts: int
    """How many times the body was started."""


_new_tuple = tuple.__new__
"""``tuple.__new__``: ``_new_tuple(Attempted, (value, error, attempts))`` is
``Attempted(value, error, attempts)`` without the Python-level ``__new__`` a named tuple's
constructor runs (a third of its cost; a property test pins the two equal)."""

TRIED_ATTRIBUTE = "agentfsm_attempts"
"""The attribute of a body's exception that says how many times it was started elsewhere."""


async def execute(
    tool: Tool[..., object], kwargs: dict[str, object], call_id: str, retry: RetrySettings
) -> Attempted:
    """Run ``tool``'s body with ``kwargs``, retrying only when the tool allows it.

    `start` is the entry: it runs a plain body (no timeout, no retries) itself.
    """
    if not (tool.idempotent and tool.retry_on and retry.max_attempts > 1):
        try:
            value = await _once(tool, kwargs, call_id, retry.cancel_grace)
        except Exception as exc:  # the body's failure: data for the model, not a crash
            return Attempted(None, exc, getattr(exc, TRIED_ATTRIBUTE, 1))
        return Attempted(value, None, 1)
    retrying = AsyncRetrying(
        stop=stop_after_attempt(retry.max_attempts),
        wait=retry.wait,
        retry=retry_if_exception_type(tool.retry_on),
        sleep=retry.sleep,
        reraise=True,
    )
    attempts = 0
    try:
        async for attempt in retrying:
            with attempt:
                attempts += 1
                value = await _once(tool, kwargs, call_id, retry.cancel_grace)
    except Exception as exc:  # the last try's failure, or a failure that is not retryable
        return Attempted(None, exc, attempts)
    return Attempted(value, None, attempts)


def start(
    tool: Tool[..., object], kwargs: dict[str, object], call_id: str, retry: RetrySettings
) -> Attempted | Awaitable[Attempted]:
    """`execute`, with no coroutine when none is needed: what a call of ``tool`` produced.

    A tool with no timeout and no retries whose body returns a plain value (not an
    awaitable) has its `Attempted` at once; any other call returns `execute`'s coroutine
    (or, for a body that returned an awaitable, one that awaits it), for the caller to
    await. Either way the outcome is `execute`'s, and the body has started once when this
    returns, as ``await execute(...)`` would start it.
    """
    function = tool.function
    if (
        tool.timeout is not None
        or function is None
        or (tool.idempotent and tool.retry_on and retry.max_attempts > 1)
    ):
        return execute(tool, kwargs, call_id, retry)
    try:
        value = function(**kwargs)
    except Exception as exc:  # the body's failure: data for the model, not a crash
        return Attempted(None, exc, getattr(exc, TRIED_ATTRIBUTE, 1))
    if type(value) not in PLAIN_VALUES and inspect.isawaitable(value):
        return settled(value)
    return _new_tuple(Attempted, (value, None, 1))


async def settled(awaitable: Awaitable[object]) -> Attempted:
    """What an awaitable a body returned came to, as `execute` takes it."""
    try:
        value = await awaitable
    except Exception as exc:
        return Attempted(None, exc, getattr(exc, TRIED_ATTRIBUTE, 1))
    if type(value) is Tried:
        return Attempted(value.value, None, value.attempts)
    return Attempted(value, None, 1)


async def run_once(
    tool: Tool[..., object], kwargs: dict[str, object], call_id: str, cancel_grace: float
) -> object:
    """One try of ``tool``'s body under its timeout, as `execute` makes it (no retries).

    A sync body with a timeout runs in a daemon thread; one without runs in the caller's
    thread. A timeout raises `ToolTimeoutError`; the body's own exception propagates.
    """
    return await _once(tool, kwargs, call_id, cancel_grace)


async def _once(
    tool: Tool[..., object], kwargs: dict[str, object], call_id: str, grace: float
) -> object:
    function = tool.function
    if function is None:  # pragma: no cover - client-side tools never reach execution
        raise TypeError(f"tool {tool.name!r} has no body")
    if tool.timeout is None:
        value = function(**kwargs)
        return await value if inspect.isawaitable(value) else value
    if tool.is_async:
        return await _async_with_timeout(tool, function, kwargs, call_id, grace)
    return await _thread_with_timeout(tool, function, kwargs, call_id)


async def _async_with_timeout(
    tool: Tool[..., object],
    function: Callable[..., object],
    kwargs: dict[str, object],
    call_id: str,
    grace: float,
) -> object:
    timeout = tool.timeout
    task = asyncio.ensure_future(_awaited(function, kwargs))
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
    finally:
        # Also when the round itself is cancelled: the body must not outlive it.
        if not task.done():
            task.cancel()
    if task in done:
        return task.result()
    # Give the body a moment to run its cleanup; a body that ignores cancellation is left
    # to the event loop, which cancels it again when it closes.
    await asyncio.wait({task}, timeout=grace)
    if task.done() and not task.cancelled():
        task.exception()  # retrieved, so asyncio does not log it as never retrieved
    raise ToolTimeoutError(tool.name, call_id, timeout or 0.0)


async def _awaited(function: Callable[..., object], kwargs: dict[str, object]) -> object:
    value = function(**kwargs)
    return await value if inspect.isawaitable(value) else value


async def _thread_with_timeout(
    tool: Tool[..., object],
    function: Callable[..., object],
    kwargs: dict[str, object],
    call_id: str,
) -> object:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[object] = loop.create_future()

    def settle(value: object, error: BaseException | None) -> None:
        if future.done():  # timed out (and cancelled) before the body finished
            return
        if error is None:
            future.set_result(value)
        elif isinstance(error, StopIteration):  # a future refuses it, as a coroutine would
            future.set_exception(RuntimeError(f"tool body raised {error!r}"))
        else:
            future.set_exception(error)

    def work() -> None:
        try:
            value, error = function(**kwargs), None
        except BaseException as exc:  # handed over and re-raised in the round, not swallowed
            value, error = None, exc
        # RuntimeError: the loop has closed, so nobody waits for this outcome any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, value, error)

    # The body sees the caller's context (its current span, its context variables), as in
    # asyncio.to_thread: a thread of its own would start with an empty one.
    context = contextvars.copy_context()
    threading.Thread(
        target=context.run, args=(work,), name=f"agentfsm-tool-{tool.name}", daemon=True
    ).start()
    try:
        done, _ = await asyncio.wait({future}, timeout=tool.timeout)
    finally:
        if not future.done():
            future.cancel()
    if future in done:
        return future.result()
    raise ToolTimeoutError(tool.name, call_id, tool.timeout or 0.0)
