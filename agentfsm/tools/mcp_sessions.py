"""One kept session per MCP server, on an event loop of its own thread.

The SDK's sessions live inside the task that opened them, and an Agent's steps may run in
different event loops (its synchronous facade, ``asyncio.run``, an application's loop). So
every kept session lives on one event loop, on a daemon thread of its own (started at the
first use); an operation from any loop or thread is sent there and awaited. A session is
opened at its server's first operation, shared by every operation after it, opened anew
after it died (the operation in flight gets the error; the next one opens a new session),
and closed by `Session.close`, or at interpreter exit.

A stdio server's stderr (its start-up banner, its logs) goes to the ``agentfsm.tools.mcp``
logger, line by line, at INFO, never to the application's terminal.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import logging
import os
import threading
import weakref
from collections.abc import Callable, Coroutine
from typing import IO, Any, TypeVar

import mcp

T = TypeVar("T")

logger = logging.getLogger("agentfsm.tools.mcp")

_CLOSING = 10.0
"""Seconds a session may take to close (the SDK gives a stdio server 2 s to exit, then
kills it)."""

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_open: weakref.WeakSet[Session] = weakref.WeakSet()


def _host() -> asyncio.AbstractEventLoop:
    """The loop every kept session lives on (its thread is started at the first call)."""
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(
                target=loop.run_forever, name="agentfsm-mcp-sessions", daemon=True
            ).start()
            _loop = loop
        return _loop


async def on_host(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` on the sessions' loop and await its outcome from any loop.

    Cancelling the caller cancels it there too.
    """
    loop = _host()
    with contextlib.suppress(RuntimeError):
        if asyncio.get_running_loop() is loop:
            return await coroutine
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, loop))


def on_host_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """`on_host`, for synchronous code (blocks until it is done)."""
    future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(coroutine, _host())
    return future.result()


class _StderrLog:
    """A pipe for a server process's stderr, read by a thread into the logger."""

    def __init__(self, prefix: str) -> None:
        read, write = os.pipe()
        self.file: IO[str] = os.fdopen(write, "w")
        reader = threading.Thread(
            target=self._read,
            args=(os.fdopen(read, errors="replace"), prefix),
            name=f"agentfsm-mcp-stderr-{prefix}",
            daemon=True,
        )
        reader.start()

    @staticmethod
    def _read(lines: IO[str], prefix: str) -> None:
        with lines:
            for line in lines:
                logger.info("MCP server %r (stderr): %s", prefix, line.rstrip("\n"))

    def close(self) -> None:
        """Close this end (the reader stops once the process's end is closed too)."""
        self.file.close()


Connect = Callable[[IO[str] | None], mcp.Client]
"""A new SDK client for the server (given the stderr file for a stdio server, else None)."""


class Session:
    """The kept session of one server (every method runs on the sessions' loop).

    Args:
        prefix: The server's prefix, for its stderr's log lines.
        connect: Makes an SDK client for a new session.
        stdio: Whether the server is a stdio subprocess (its stderr is logged).
    """

    def __init__(self, prefix: str, connect: Connect, stdio: bool) -> None:
        self._prefix = prefix
        self._connect = connect
        self._stdio = stdio
        self._current: tuple[mcp.Client, asyncio.Event, asyncio.Task[None]] | None = None
        self._opening: asyncio.Lock | None = None
        self.opened = 0
        """How many sessions were opened (for a stdio server: processes started)."""

    @property
    def is_open(self) -> bool:
        """Whether a session is kept open (and has not ended)."""
        return self._current is not None and not self._current[2].done()

    async def client(self) -> mcp.Client:
        """The session's client: the kept one, or a new one if there is none or it died."""
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            current = self._current
            if current is not None and not current[2].done():
                return current[0]
            self._current = None
            ready: asyncio.Future[mcp.Client] = asyncio.get_running_loop().create_future()
            stop = asyncio.Event()
            task = asyncio.create_task(self._keep(ready, stop))
            client = await ready
            self._current = (client, stop, task)
            self.opened += 1
            _open.add(self)
            return client

    async def _keep(self, ready: asyncio.Future[mcp.Client], stop: asyncio.Event) -> None:
        """Open a session, hand it over, and keep it until ``stop`` (all in this one task)."""
        errlog = _StderrLog(self._prefix) if self._stdio else None
        try:
            async with self._connect(None if errlog is None else errlog.file) as client:
                ready.set_result(client)
                await stop.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                logger.debug("MCP server %r: its session ended: %r", self._prefix, exc)
        finally:
            if not ready.done():  # cancelled while opening
                ready.cancel()
            if errlog is not None:
                errlog.close()

    async def drop(self) -> None:
        """Close the kept session, if there is one (the next operation opens a new one)."""
        current, self._current = self._current, None
        if current is None:
            return
        _, stop, task = current
        stop.set()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(task, _CLOSING)


def close_all() -> None:
    """Close every kept session (at interpreter exit)."""
    loop = _loop
    if loop is None or loop.is_closed() or not loop.is_running():
        return
    for session in list(_open):
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(session.drop(), loop).result(_CLOSING + 1)


def _after_fork() -> None:  # pragma: no cover - runs in a forked child
    """A forked child has no sessions' thread: its sessions are the parent's, not its own."""
    global _loop, _lock
    _loop, _lock = None, threading.Lock()
    for session in list(_open):
        session._current, session._opening = None, None
    _open.clear()


atexit.register(close_all)
os.register_at_fork(after_in_child=_after_fork)
