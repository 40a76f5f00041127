"""A bound on how long a `PostgresStore` call waits for the server to answer.

A server that accepts a connection but never answers (a stopped or wedged backend, a
machine that froze, a proxy that lost its upstream but keeps the socket) leaves libpq
waiting for ever: the server's ``statement_timeout`` cannot fire in a server that does not
run, and TCP keepalives are answered by the kernel of a frozen process. So each call tells
a `Watchdog` its deadline; the watchdog's thread shuts down the socket of a call past its
deadline, which wakes the call at once with a lost connection (shut down from this side:
``shutdown(2)`` on a duplicate of the descriptor, which libpq still owns and closes). The
call then fails with `ServerSilent`.

What the server does with a statement it had received is not known then: it may still
run and commit it when it wakes (see `agentfsm.stores.postgres.PostgresStore.save`).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from contextlib import suppress
from typing import Any

import psycopg

Connection = psycopg.Connection[tuple[Any, ...]]


class ServerSilent(psycopg.OperationalError):
    """The server did not answer a call within its bound: the call's connection was shut.

    Args:
        bound: The bound, in seconds (``call_timeout``).
    """

    def __init__(self, bound: float) -> None:
        super().__init__(f"the server did not answer within {bound:g} s (call_timeout)")


class Watchdog:
    """Shuts the connection of a call still waiting for the server ``bound`` s after it began.

    Args:
        bound: Seconds a call may wait for the server.

    Its thread starts with the first call and ends with `stop`.
    """

    def __init__(self, bound: float) -> None:
        self.bound = bound
        self._due: dict[Connection, float] = {}
        self._shut: set[Connection] = set()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def begin(self, conn: Connection) -> None:
        """A call on ``conn`` begins now."""
        due = time.monotonic() + self.bound
        with self._lock:
            self._due[conn] = due
        if self._thread is None:
            self._start()

    def end(self, conn: Connection) -> bool:
        """The call on ``conn`` ended; whether the watchdog shut its connection meanwhile.

        (Once: a second end of the same call says False.)
        """
        with self._lock:
            self._due.pop(conn, None)
            if conn in self._shut:
                self._shut.discard(conn)
                return True
        return False

    def stop(self) -> None:
        """End the thread (a call that begins later starts none)."""
        self._stopped.set()

    def _start(self) -> None:
        with self._lock:
            if self._thread is None and not self._stopped.is_set():
                self._thread = threading.Thread(
                    target=self._watch, name="agentfsm-pg-watchdog", daemon=True
                )
                self._thread.start()

    def _watch(self) -> None:
        tick = min(1.0, self.bound / 4)
        while not self._stopped.wait(tick):
            now = time.monotonic()
            with self._lock:
                late = [conn for conn, due in self._due.items() if due <= now]
                for conn in late:
                    if conn not in self._shut:
                        self._shut.add(conn)
                        _shut_down(conn)


def _shut_down(conn: Connection) -> None:
    """Shut ``conn``'s socket both ways, from this side (libpq keeps its descriptor)."""
    with suppress(OSError, psycopg.Error, ValueError):
        duplicate = socket.socket(fileno=os.dup(conn.fileno()))
        try:
            duplicate.shutdown(socket.SHUT_RDWR)
        finally:
            duplicate.close()
