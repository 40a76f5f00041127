"""The Agent's synchronous facade, and `SyncRunner`, the event loop behind it.

One loop per Agent, kept across calls, so clients bound to a loop (the openai client's
HTTP connections) keep working from one call to the next; released by `close`. A released
loop that is clean (nothing left on it: no task, no callback, no async generator, no
executor, no handler or factory of its own) is kept idle for the next Agent's facade, in
any thread, instead of being closed: making and closing a loop (a socket pair, an epoll
instance, a run of ``shutdown_asyncgens``) is most of what a synchronous run costs beyond
the async one. Any other loop is closed, as before.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from agentfsm.agent.vocabulary import DecisionLike, TurnOutcome
    from agentfsm.llm.settings import SettingsLike

T = TypeVar("T")

IDLE_LOOPS = 4
"""At most this many clean event loops are kept idle for the next facades (in all threads)."""

_idle: list[asyncio.AbstractEventLoop] = []
"""The clean loops released by closed facades, none running, none closed."""
_idle_lock = threading.Lock()
_held: set[asyncio.AbstractEventLoop] = set()
"""The loops facades hold: reachable from here, so that garbage collection finalizes a
dropped facade's runner (which releases its loop) before the loop's own sockets, however
old the loop is."""
_forked: list[asyncio.AbstractEventLoop] = []
"""A forked child's inherited idle loops: never used (their epoll instance and sockets are
the parent's too) and never closed (closing would unregister them from the parent's)."""


def _after_fork() -> None:  # pragma: no cover - runs in a forked child
    _forked.extend(_idle)
    _idle.clear()


def close_idle_loops() -> None:
    """Close the loops kept idle (at interpreter exit; a later facade makes new ones)."""
    with _idle_lock:
        idle = tuple(_idle)
        _idle.clear()
    for loop in idle:
        loop.close()


os.register_at_fork(after_in_child=_after_fork)
atexit.register(close_idle_loops)


def _take_loop() -> asyncio.AbstractEventLoop:
    """An idle clean loop, or a new one (held until released)."""
    with _idle_lock:
        loop = _idle.pop() if _idle else None
    if loop is None:
        loop = asyncio.new_event_loop()
    _held.add(loop)
    return loop


def _is_clean(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether nothing of a past run is left on ``loop`` (so the next one cannot tell).

    Only asyncio's own loops qualify: what is left on them is read from their internals.
    """
    return (
        isinstance(loop, asyncio.BaseEventLoop)
        and not loop.is_closed()
        and not loop.is_running()
        and not loop.get_debug()
        and loop.get_exception_handler() is None
        and loop.get_task_factory() is None
        and not asyncio.all_tasks(loop)
        and not getattr(loop, "_ready", True)
        and not getattr(loop, "_scheduled", True)
        and not getattr(loop, "_asyncgens", True)
        and getattr(loop, "_default_executor", True) is None
    )


def _keep_idle(loop: asyncio.AbstractEventLoop) -> bool:
    """Keep ``loop`` idle for the next facade, if it is clean and there is room."""
    _held.discard(loop)
    if _is_clean(loop):
        with _idle_lock:
            if len(_idle) < IDLE_LOOPS:
                _idle.append(loop)
                return True
    return False


def _release_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Keep ``loop`` idle for the next facade if it is clean and there is room, else close it."""
    if not _keep_idle(loop) and not loop.is_closed():
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


class SyncRunner:
    """Runs coroutines to completion on a private event loop, created on first use."""

    __slots__ = ("_loop",)

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None

    def run(self, coroutine: Coroutine[object, object, T]) -> T:
        """Run ``coroutine`` and return its result.

        Raises:
            RuntimeError: Called from inside a running event loop, where the ``a``-prefixed
                async method must be awaited instead.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            coroutine.close()
            raise RuntimeError(
                "this synchronous Agent method was called inside a running event loop; "
                "await its async form (e.g. `await agent.asubmit(...)`) instead"
            )
        if self._loop is None or self._loop.is_closed():
            _held.discard(self._loop)  # (closed by someone else: let it go)
            self._loop = _take_loop()
        return run_once(self._loop, coroutine)

    def close(self) -> None:
        """Release the loop: kept idle for another facade if clean, else closed.

        A later `run` takes another loop.
        """
        loop, self._loop = self._loop, None
        if loop is not None:
            _release_loop(loop)

    def __del__(self) -> None:
        # Garbage collection may run this inside another event loop, where nothing can be
        # awaited: the loop is kept idle if clean, else only its resources are released.
        loop, self._loop = self._loop, None
        if loop is None or _keep_idle(loop):
            return
        if not loop.is_closed() and not loop.is_running():
            loop.close()


def run_once(loop: asyncio.AbstractEventLoop, coroutine: Coroutine[object, object, T]) -> T:
    """``loop.run_until_complete(coroutine)``, in one pass of ``loop`` when that is enough.

    `run_until_complete` makes the coroutine a task with a done callback that stops the loop,
    so a coroutine that ends in its first step still takes two passes of the loop (two polls
    of its selector: two system calls) and the callback. Here the loop is stopped before it
    runs: `run_forever` makes one pass (one poll, the task's first step) and returns. A task
    that is not done then (it awaits something), or whose step left callbacks ready (which
    `run_until_complete` would run before returning), goes on in `run_until_complete`.
    The coroutine runs in a task on the running ``loop`` either way.
    """
    if loop.is_running():  # (in another thread: refused as run_until_complete refuses it)
        return loop.run_until_complete(coroutine)
    task = loop.create_task(coroutine)
    try:
        loop.stop()
        loop.run_forever()
        if not task.done() or getattr(loop, "_ready", True):
            return loop.run_until_complete(task)
    except BaseException:
        if task.done() and not task.cancelled():
            task.exception()  # (retrieved here: it propagates, so it is never logged)
        raise
    return task.result()


def run_inline(coroutine: Coroutine[object, object, T]) -> T:
    """Run ``coroutine`` to its end here and now, for a call made from inside a step.

    The calls allowed mid-step (`submit` while busy, `cancel`, `pause`) and the refusals of
    the others finish without waiting for anything, so they need no event loop of their own
    (the Agent's loop is busy running the step that called them).

    Raises:
        RuntimeError: The coroutine had to wait for something.
    """
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coroutine.close()
    raise RuntimeError(
        "a synchronous Agent method called from inside a step of its run had to wait; "
        "await its async form there instead"
    )


class _AsyncCore(Protocol):
    """What the facade needs of the Agent: its runner, its step depth and its async methods."""

    _sync: SyncRunner | None
    """Made by the first synchronous call (an Agent used from async code needs none)."""
    _depth: int

    async def astart(
        self, text: str | None = None, *, settings: SettingsLike | None = None, deps: object = None
    ) -> TurnOutcome: ...
    async def asubmit(
        self, text: str, *, settings: SettingsLike | None = None, deps: object = None
    ) -> TurnOutcome: ...
    async def aresolve_action(self, decisions: Mapping[str, DecisionLike]) -> TurnOutcome: ...
    async def aprovide_input(self, text: str) -> TurnOutcome: ...
    async def acancel(self) -> TurnOutcome: ...
    async def apause(self) -> TurnOutcome: ...
    async def aresume(self) -> TurnOutcome: ...
    async def aexpire(self) -> TurnOutcome: ...
    async def ashutdown(self) -> TurnOutcome: ...


class SyncFacade:
    """The Agent's synchronous methods: each runs its ``a``-prefixed async twin to the end."""

    __slots__ = ()

    def start(
        self: _AsyncCore,
        text: str | None = None,
        *,
        settings: SettingsLike | None = None,
        deps: object = None,
    ) -> TurnOutcome:
        """`astart`, for synchronous code: with ``text``, start and submit it in one step."""
        if settings is None and deps is None:  # (a subclass's astart may take neither)
            return _run(self, self.astart(text))
        return _run(self, self.astart(text, settings=settings, deps=deps))

    def submit(
        self: _AsyncCore, text: str, *, settings: SettingsLike | None = None, deps: object = None
    ) -> TurnOutcome:
        """`asubmit`, for synchronous code: ``settings`` and ``deps`` are this turn's."""
        if settings is None and deps is None:  # (a subclass's asubmit may take neither)
            return _run(self, self.asubmit(text))
        return _run(self, self.asubmit(text, settings=settings, deps=deps))

    def resolve_action(self: _AsyncCore, decisions: Mapping[str, DecisionLike]) -> TurnOutcome:
        """`aresolve_action`, for synchronous code."""
        return _run(self, self.aresolve_action(decisions))

    def provide_input(self: _AsyncCore, text: str) -> TurnOutcome:
        """`aprovide_input`, for synchronous code."""
        return _run(self, self.aprovide_input(text))

    def cancel(self: _AsyncCore) -> TurnOutcome:
        """`acancel`, for synchronous code."""
        return _run(self, self.acancel())

    def pause(self: _AsyncCore) -> TurnOutcome:
        """`apause`, for synchronous code."""
        return _run(self, self.apause())

    def resume(self: _AsyncCore) -> TurnOutcome:
        """`aresume`, for synchronous code."""
        return _run(self, self.aresume())

    def expire(self: _AsyncCore) -> TurnOutcome:
        """`aexpire`, for synchronous code."""
        return _run(self, self.aexpire())

    def shutdown(self: _AsyncCore) -> TurnOutcome:
        """`ashutdown`, for synchronous code; also closes the facade's event loop."""
        try:
            return _run(self, self.ashutdown())
        finally:
            if not self._depth and self._sync is not None:
                self._sync.close()

    def close(self: _AsyncCore) -> None:
        """Close the synchronous facade's event loop (the run itself is not shut down).

        Raises:
            RuntimeError: Called from inside a step of the run, whose loop is running it.
        """
        if self._depth:
            raise RuntimeError("Agent.close() was called from inside a step of its run")
        if self._sync is not None:
            self._sync.close()


def _run(agent: _AsyncCore, coroutine: Coroutine[object, object, T]) -> T:
    # Inside a step of the run (a listener, a tool, a hook, all on the Agent's own loop),
    # the call is run inline: it either takes effect at once or is refused.
    if agent._depth:
        return run_inline(coroutine)
    runner = agent._sync
    if runner is None:
        runner = agent._sync = SyncRunner()
    return runner.run(coroutine)
