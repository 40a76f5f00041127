"""The connection of a `PostgresStore.watch`: LISTEN, wait for a notification, reconnect.

A watch has a connection of its own that holds the run's watch lock (so that its saves
notify: `agentfsm.stores._postgres_sql.WATCHED_RUN`) and LISTENs on the store's channel (the
reads go through the store's pool, so no notification arrives while a query runs on it). When that
connection is lost (the server restarted or cut it), `reconnect` opens a new one, trying
at once and then after 0.1 s, 0.2 s, 0.4 s… at most `RECONNECT_DELAY` s apart, until a
deadline; the watch then reads on after the last event it yielded.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import suppress
from typing import Any

import psycopg

from agentfsm.stores import _postgres_sql as sql

RECONNECT_TIMEOUT = 300.0
"""Seconds a watch keeps trying to reconnect after its connection is lost, by default."""

RECONNECT_DELAY = 2.0
"""The longest pause, in seconds, between two of a watch's attempts to reconnect."""

LOCK_TIMEOUT = 60
"""Seconds a watch waits for its run's watch lock (behind a save in flight) before failing."""

QUEUE_TIMEOUT = 10.0
"""Seconds `listening` waits for its lock request to be granted or queued by the server."""

Connection = psycopg.Connection[tuple[Any, ...]]


def listener(conninfo: str, connect_timeout: int, run_id: str) -> Connection:
    """A new connection watching ``run_id``: its saves notify, and it LISTENs to them.

    It takes the run's watch lock first, which waits for a save of the run in flight that
    does not notify (a few ms): once it has the lock, every save of the run notifies. A
    save held up longer (in a server that stopped running) fails it after `LOCK_TIMEOUT`.

    Raises:
        psycopg.Error: It cannot be opened (one attempt, ``connect_timeout`` s at most).
    """
    conn = psycopg.connect(conninfo, autocommit=True, connect_timeout=connect_timeout)
    try:
        conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{LOCK_TIMEOUT}s",))
        conn.execute(sql.WATCH_RUN, (sql.watch_key(run_id),))
        conn.execute(sql.LISTEN)
    except BaseException:
        conn.close()
        raise
    return conn


def reconnect(
    conninfo: str, connect_timeout: int, run_id: str, give_up: float, lost: psycopg.Error
) -> Connection:
    """A new `listener`, tried with a bounded backoff until ``give_up`` (monotonic seconds).

    Raises:
        psycopg.OperationalError: The last attempt's error (``lost`` if none was made)
            once ``give_up`` has passed.
    """
    delay = 0.0
    error = lost
    while True:
        time.sleep(max(0.0, min(delay, give_up - time.monotonic())))
        try:
            return listener(conninfo, connect_timeout, run_id)
        except psycopg.OperationalError as exc:
            error = exc
        if time.monotonic() >= give_up:
            raise error
        delay = min(max(delay * 2, 0.1), RECONNECT_DELAY)


def wait(listener: Connection, key: str, last: int, deadline: float | None) -> bool:
    """Wait for a notification of events of the run ``key`` after ``last``; False: timed out.

    Raises:
        psycopg.OperationalError: The connection was lost.
    """
    while True:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            return False
        for note in listener.notifies(timeout=remaining, stop_after=1):
            notified, seq = sql.parse_notice(note.payload)
            if notified == key and seq > last:
                return True


class Listening(psycopg.AsyncConnection[tuple[Any, ...]]):
    """An asynchronous connection LISTENing to every save of the store (`listening`).

    Beside it, a connection of its own holds (or queues for) the lock of
    `agentfsm.stores._postgres_sql.WATCHED_ALL`, so that every save notifies while this one
    is open; closing this one closes that one.
    """

    _holder: psycopg.AsyncConnection[tuple[Any, ...]] | None = None
    _holding: asyncio.Task[object] | None = None

    async def __aexit__(self, *exc_info: Any) -> None:
        """Close it and its lock's connection, even when the server had ended it."""
        try:
            await super().__aexit__(*exc_info)
        finally:
            await self.close()

    async def close(self) -> None:
        """Close it, and the connection holding the lock (which is released with it)."""
        await self._release()
        await super().close()

    async def _release(self) -> None:
        holding, self._holding = self._holding, None
        holder, self._holder = self._holder, None
        if holding is not None:
            holding.cancel()
            with suppress(asyncio.CancelledError, psycopg.Error):
                await holding
        if holder is not None:
            with suppress(psycopg.Error):
                await holder.close()


async def listening(conninfo: str, connect_timeout: int) -> Listening:
    """A new `Listening` connection: every save notifies it from now on, until it is closed.

    The lock is requested on a second connection, which waits for it if another listener
    has it; it returns once the request is granted or queued (either way the saves notify),
    and then LISTENs.

    Raises:
        psycopg.Error: A connection cannot be opened (the password is the caller's to mask).
    """
    conn = await Listening.connect(conninfo, autocommit=True, connect_timeout=connect_timeout)
    try:
        holder = conn._holder = await psycopg.AsyncConnection.connect(
            conninfo, autocommit=True, connect_timeout=connect_timeout
        )
        conn._holding = asyncio.ensure_future(holder.execute(sql.WATCH_ALL))
        deadline = time.monotonic() + QUEUE_TIMEOUT
        pid = holder.info.backend_pid
        while not await _queued(conn, pid):
            if conn._holding.done():
                conn._holding.result()  # (raises what the request failed with)
            if time.monotonic() > deadline:
                raise psycopg.OperationalError(
                    f"the lock that makes every save notify was not requested within "
                    f"{QUEUE_TIMEOUT} s"
                )
            await asyncio.sleep(0.001)
        await conn.execute(sql.LISTEN)
    except BaseException:
        await conn.close()
        raise
    return conn


async def _queued(conn: psycopg.AsyncConnection[tuple[Any, ...]], pid: int) -> bool:
    row = await (await conn.execute(sql.WATCH_ALL_QUEUED, (pid,))).fetchone()
    return bool(row and row[0])
