"""`NotifyFeed`: the live view's `ChangeFeed` for PostgreSQL, woken by LISTEN/NOTIFY.

While a `PostgresStore.listen` connection is open, every save that stores events sends a
notification in its own transaction, so it is heard when (and only if) it commits. The feed
keeps one connection LISTENing for the whole app (opened on the first wait, in the server's
event loop) and wakes every waiting stream on each notification; a stream then reads the
runs' marks again, so a run driven by another process shows up at once, with no polling.

Nothing is missed between a read and the wait: the feed listens *before* it reads the
marks, and a stream waits only for notifications that arrive after that read began. A save
that stores no event (a claim moves only a run's version) sends no notification; the
marks are read again every ``recheck`` seconds all the same, and whenever the listening
connection is lost (it is then opened again).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from contextlib import suppress
from typing import Any

import psycopg

from agentfsm.errors import StoreError
from agentfsm.serve.feed import Marks, store_marks
from agentfsm.stores.postgres import PostgresStore

DEFAULT_RECHECK = 5.0
"""Seconds after which a waiting stream reads the marks again with no notification."""


class NotifyFeed:
    """A `ChangeFeed` of a `PostgresStore`, woken by the notification each save sends.

    Args:
        store: The store to watch.
        recheck: Seconds after which the marks are read again with no notification (for
            saves with no event); must be positive.

    Raises:
        ValueError: ``recheck`` is not a positive number.
    """

    def __init__(self, store: PostgresStore, *, recheck: float = DEFAULT_RECHECK) -> None:
        if isinstance(recheck, bool) or not isinstance(recheck, (int, float)) or recheck <= 0:
            raise ValueError(f"recheck must be a positive number of seconds, not {recheck!r}")
        self.store = store
        """The store watched."""
        self.recheck = float(recheck)
        """Seconds between two reads of the marks when nothing is heard."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[asyncio.Event] | None = None

    def marks(self) -> Marks:
        """The runs' marks, read from the store now (one query)."""
        return store_marks(self.store)

    async def changed(self, seen: Mapping[str, tuple[int, int]]) -> Marks:
        """Wait until the marks differ from ``seen``; return the new marks.

        Raises:
            StoreError: The database cannot be reached.
        """
        while True:
            heard = await self._listening()  # listening before reading: nothing is missed
            now = await asyncio.to_thread(self.marks)
            if now != seen:
                return now
            with suppress(asyncio.TimeoutError):
                await asyncio.wait_for(heard.wait(), self.recheck)

    async def _listening(self) -> asyncio.Event:
        """The event the next notification sets, once the connection is LISTENing."""
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done() or self._loop is not loop:
            self._loop = loop
            self._ready = loop.create_future()
            self._task = loop.create_task(self._listen(self._ready))
        assert self._ready is not None
        return await asyncio.shield(self._ready)

    async def _listen(self, ready: asyncio.Future[asyncio.Event]) -> None:
        """LISTEN, then set (and replace) the current event at each notification."""
        try:
            conn: psycopg.AsyncConnection[tuple[Any, ...]] = await self.store.listen()
        except StoreError as error:  # every waiter gets it
            ready.set_exception(error)
            return
        heard = asyncio.Event()
        ready.set_result(heard)
        try:
            async with conn:
                async for _ in conn.notifies():
                    heard.set()
                    heard = asyncio.Event()
                    self._ready = asyncio.get_running_loop().create_future()
                    self._ready.set_result(heard)
        except psycopg.Error:
            pass  # the connection is gone: the waiters read again, the next wait reconnects
        finally:
            heard.set()

    async def aclose(self) -> None:
        """Stop listening (the app does this when it shuts down); harmless twice."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task
