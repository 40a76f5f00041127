"""Write-behind hops: a save started in a worker thread, and the thread a SQLite store owns.

A durable run waits for a few hops per turn (its start, its input, its return: each must be
on disk before the caller hears of it). A hop through a `ThreadPoolExecutor` and
`asyncio.wrap_future` costs about twice what the same hop costs with one thread of the
store's own and a `Hop` that wakes the awaiting loop directly (a `concurrent.futures.Future`
takes a condition variable, its executor an idle semaphore, ``wrap_future`` two chained
futures): so a store whose saves are serialised anyway (`SQLiteStore`, under its lock) makes
them in its own `Lane`.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import threading
import weakref
from collections.abc import Callable, Generator
from concurrent.futures import CancelledError
from queue import SimpleQueue
from typing import Any

SaveOutcome = tuple[None, BaseException | None]
"""What a hop's saves give: ``(None, None)``, or what they raised (as a value, not raised)."""

_PENDING, _RUNNING, _DONE, _CANCELLED = range(4)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():  # (the awaiting task may have been cancelled meanwhile)
        waiter.set_result(None)


class Hop:
    """The outcome of saves started in a worker thread: awaited on the loop, or waited for.

    Like a `concurrent.futures.Future` of a `SaveOutcome` (``done``, ``cancel``,
    ``cancelled``, ``result``), and awaitable from an event loop, which the worker wakes with
    one ``call_soon_threadsafe`` when it ends (only if a task awaits it).
    """

    __slots__ = ("_event", "_lock", "_outcome", "_state", "_waiter")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = _PENDING
        self._outcome: SaveOutcome = (None, None)
        self._waiter: tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | None = None
        self._event: threading.Event | None = None

    def run(self, saves: Callable[[], object]) -> None:
        """Make ``saves`` (the worker's, once), unless the hop was cancelled first.

        What ``saves`` raises is its outcome, not raised (the run raises it on its thread).
        """
        with self._lock:
            if self._state == _CANCELLED:
                return
            self._state = _RUNNING
        outcome: SaveOutcome
        try:
            saves()
            outcome = (None, None)
        except BaseException as error:  # re-raised by the run that took the hop in
            outcome = (None, error)
        with self._lock:
            self._outcome, self._state = outcome, _DONE
            waiter, event = self._waiter, self._event
        if event is not None:
            event.set()
        if waiter is not None:
            loop, future = waiter
            with contextlib.suppress(RuntimeError):  # (a closed loop: nobody awaits it)
                loop.call_soon_threadsafe(_wake, future)

    def done(self) -> bool:
        """Whether the saves have ended (or were cancelled before they began)."""
        return self._state >= _DONE

    def cancelled(self) -> bool:
        """Whether the hop was cancelled before its saves began."""
        return self._state == _CANCELLED

    def cancel(self) -> bool:
        """Cancel the saves if they have not begun (True), else False; they never run then."""
        with self._lock:
            if self._state == _PENDING:
                self._state = _CANCELLED
                event = self._event
            else:
                return self._state == _CANCELLED
        if event is not None:
            event.set()
        return True

    def result(self, timeout: float | None = None) -> SaveOutcome:
        """Wait (blocking) for the saves' outcome.

        Raises:
            CancelledError: The hop was cancelled.
            TimeoutError: It did not end within ``timeout`` seconds.
        """
        with self._lock:
            if self._state < _DONE and self._event is None:
                self._event = threading.Event()
            event = self._event
        if event is not None and not event.wait(timeout):
            raise TimeoutError(f"the saves did not end within {timeout} seconds")
        if self._state == _CANCELLED:
            raise CancelledError()
        return self._outcome

    def __await__(self) -> Generator[Any, None, SaveOutcome]:
        """Wait for the saves' outcome without blocking the loop (cancelled: see `cancel`)."""
        if self._state < _DONE:
            loop = asyncio.get_running_loop()
            waiter: asyncio.Future[None] = loop.create_future()
            with self._lock:
                ended = self._state >= _DONE
                if not ended:
                    self._waiter = (loop, waiter)
            if not ended:
                try:
                    yield from waiter.__await__()
                except asyncio.CancelledError:
                    self.cancel()  # (as ``wrap_future``: saves not begun never run)
                    raise
                finally:
                    self._waiter = None
        if self._state == _CANCELLED:
            raise asyncio.CancelledError()
        return self._outcome


_STOP = None
_LANES: weakref.WeakSet[Lane] = weakref.WeakSet()
_PROCESS = [1]
"""Which process this is, counted by forks: a lane's thread runs in the process it began in."""

if hasattr(os, "register_at_fork"):  # (POSIX)
    os.register_at_fork(after_in_child=lambda: _PROCESS.__setitem__(0, _PROCESS[0] + 1))


class Lane:
    """One worker thread that makes the hops given to it, in order (started on first use).

    A forked child starts its own thread. Closed (or collected), it ends once the hops given
    before have been made; at the interpreter's exit every lane's given hops are made first
    (as a `ThreadPoolExecutor`'s are).
    """

    __slots__ = ("__weakref__", "_lock", "_process", "_queue", "_thread")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: SimpleQueue[tuple[Hop, Callable[[], object]] | None] = SimpleQueue()
        self._thread: threading.Thread | None = None
        self._process = 0

    def submit(self, hop: Hop, saves: Callable[[], object]) -> Hop:
        """Make ``saves`` in the lane's thread (after those given before), for ``hop``."""
        with self._lock:
            if self._process != _PROCESS[0]:
                # First use, or a forked child (its parent's thread is not here): its own.
                self._queue = SimpleQueue()
                thread = threading.Thread(
                    target=_work, args=(self._queue,), name="agentfsm-store-lane", daemon=True
                )
                thread.start()
                self._thread, self._process = thread, _PROCESS[0]
                _LANES.add(self)
                # A lane dropped unclosed (its store collected) ends its thread too.
                weakref.finalize(self, self._queue.put, _STOP)
            self._queue.put((hop, saves))
        return hop

    def close(self) -> None:
        """End the thread once the hops given before are made (closing twice is harmless)."""
        with self._lock:
            thread, self._thread = self._thread, None
            if thread is None or self._process != _PROCESS[0]:
                return
            self._process = 0
            self._queue.put(_STOP)
        if thread is not threading.current_thread():
            thread.join()


def _work(queue: SimpleQueue[tuple[Hop, Callable[[], object]] | None]) -> None:
    while (item := queue.get()) is not _STOP:
        hop, saves = item
        hop.run(saves)
        del item, hop, saves  # (nothing of the last hop is kept while the thread waits)


@atexit.register
def _close_lanes() -> None:
    for lane in list(_LANES):
        lane.close()
