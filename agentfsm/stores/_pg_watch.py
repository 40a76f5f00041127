"""The connection of a `PostgresStore.watch`: LISTEN, wait for a notification, reconnect.

A watch has a connection of its own that LISTENs on the store's channel (the reads go
through the store's pool, so no notification arrives while a query runs on it). When that
connection is lost (the server restarted or cut it), `reconnect` opens a new one, trying
at once and then after 0.1 s, 0.2 s, 0.4 s… at most `RECONNECT_DELAY` s apart, until a
deadline; the watch then reads on after the last event it yielded.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg

from agentfsm.stores import _postgres_sql as sql

RECONNECT_TIMEOUT = 300.0
"""Seconds a watch keeps trying to reconnect after its connection is lost, by default."""

RECONNECT_DELAY = 2.0
"""The longest pause, in seconds, between two of a watch's attempts to reconnect."""

Connection = psycopg.Connection[tuple[Any, ...]]


def listener(conninfo: str, connect_timeout: int) -> Connection:
    """A new connection LISTENing to every save of the store.

    Raises:
        psycopg.Error: It cannot be opened (one attempt, ``connect_timeout`` s at most).
    """
    conn = psycopg.connect(conninfo, autocommit=True, connect_timeout=connect_timeout)
    try:
        conn.execute(sql.LISTEN)
    except BaseException:
        conn.close()
        raise
    return conn


def reconnect(
    conninfo: str, connect_timeout: int, give_up: float, lost: psycopg.Error
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
            return listener(conninfo, connect_timeout)
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
