"""The connections of a `PostgresStore`: a small pool that never waits on an outage.

Each call takes an idle connection (checked first, without a round trip: see `_alive`) or,
if there is none, opens one itself, in one attempt bounded by ``connect_timeout``. So:

- **during an outage** a call fails at once, with `ServerUnreachable` (the server refused
  the connection), or after ``connect_timeout`` at most (no answer): it never waits for a
  background reconnection that the next try of the server would need;
- **once the server is back**, the first call finds the idle connections dead (each check
  fails at once), drops them and opens a new one: no stale connection is handed out and no
  backoff delays it.

A check costs no round trip: a server that ends a connection (a restart, a crash, an
administrator's ``pg_terminate_backend``) says so on its socket, which then reads as ready
on an idle connection; only then is the empty query sent, to tell that from a message that
left it usable. (An empty round trip before every call was a tenth of a save's time.)

``timeout`` bounds only the wait for a free connection when all ``max_size`` are in use by
other threads. psycopg_pool's `ConnectionPool` is not used: its callers wait in a queue for
connections that background workers open with an exponential backoff (1 s, 2 s, 4 s…), so a
call during an outage waited the whole pool timeout, and the first call after one waited
for the workers' next try (27 s, or a failure, after a 90 s outage).
"""

from __future__ import annotations

import select
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from agentfsm.stores._pg_watchdog import ServerSilent, Watchdog

Connection = psycopg.Connection[tuple[Any, ...]]

MIN_CONNECT_TIMEOUT = 2
"""libpq's least ``connect_timeout``, in seconds (a smaller one is taken as 2)."""


class ServerUnreachable(psycopg.OperationalError):
    """A new connection could not be opened: nothing of the call was sent."""


class AllConnectionsBusy(psycopg.OperationalError):
    """All ``max_size`` connections stayed in use by other threads for ``timeout`` s."""


class StaleConnection(psycopg.OperationalError):
    """A checked idle connection was lost during the call: the server ended it meanwhile.

    Its end had not reached the socket when it was checked (a ``pg_terminate_backend`` or a
    shutdown just before the call). The call may be made again, on a new connection, if it
    did not take effect (a read never did; a save's stamp tells).
    """


class Connections:
    """Up to ``max_size`` connections to one database, shared by the store's threads.

    Args:
        conninfo: The database's libpq URL or key=value string.
        min_size: Connections opened at once (by the constructor) and kept.
        max_size: The most connections open at a time; a thread beyond waits.
        timeout: Seconds a call waits for a free connection before `AllConnectionsBusy`.
        connect_timeout: Seconds one connection attempt may take (whole, at least 2).
        check: Check an idle connection before handing it out (see `_alive`).
        call_timeout: Seconds a call may wait for the server before its connection is shut
            and it fails with `ServerSilent` (None: no bound); see
            `agentfsm.stores._pg_watchdog`.

    Raises:
        ServerUnreachable: One of the first ``min_size`` connections cannot be opened.
    """

    def __init__(
        self,
        conninfo: str,
        *,
        min_size: int,
        max_size: int,
        timeout: float,
        connect_timeout: int,
        check: bool,
        call_timeout: float | None = None,
    ) -> None:
        self._conninfo = conninfo
        self._watchdog = None if call_timeout is None else Watchdog(call_timeout)
        self._max_size = max_size
        self._timeout = timeout
        self._connect_timeout = connect_timeout
        self._check = check
        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)  # (a call waits on it when all are in use)
        self._in_use = 0
        self._waiting = 0
        self._idle: list[Connection] = []
        self._prepared: dict[Connection, set[bytes]] = {}  # (dropped with their connection)
        self._closed = False
        try:
            for _ in range(min_size):
                self._idle.append(self.connect())
        except BaseException:
            self.close()
            raise

    def connect(self) -> Connection:
        """A new autocommit connection, in one attempt bounded by ``connect_timeout``.

        Raises:
            ServerUnreachable: The attempt failed (the message is the driver's).
        """
        try:
            return psycopg.connect(
                self._conninfo,
                autocommit=True,
                connect_timeout=self._connect_timeout,
                client_encoding="utf8",  # (what `agentfsm.stores._pg_exec` sends)
            )
        except psycopg.OperationalError as exc:
            raise ServerUnreachable(str(exc).strip()) from None

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        """A live connection for one call, given back (or dropped if broken) after it.

        Raises:
            AllConnectionsBusy: No connection was free within ``timeout`` s.
            ServerUnreachable: No idle connection was alive and a new one cannot be opened.
            StaleConnection: The (checked, idle) connection was lost during the call.
            ServerSilent: The server did not answer within ``call_timeout``.
        """
        conn, checked = self._take()
        if self._watchdog is not None:
            self._watchdog.begin(conn)
        try:
            yield conn
        except psycopg.OperationalError as exc:
            silent = self._end(conn)
            if silent is not None:
                raise silent from exc
            if checked and conn.broken and not isinstance(exc, StaleConnection):
                raise StaleConnection(str(exc).strip()) from exc
            raise
        finally:
            self._end(conn)
            self._give_back(conn)

    def _end(self, conn: Connection) -> ServerSilent | None:
        """End the watchdog's watch of the call on ``conn``: the error, if it shut ``conn``.

        A connection it shut is closed here (it is dropped, not given back).
        """
        watchdog = self._watchdog
        if watchdog is None or not watchdog.end(conn):
            return None
        conn.close()
        return ServerSilent(watchdog.bound)

    def prepared(self, conn: Connection) -> set[bytes]:
        """The names of the statements prepared on ``conn`` (`agentfsm.stores._pg_exec`).

        A connection is used by one call at a time, so its set is too; it is forgotten when
        the connection is dropped.
        """
        names = self._prepared.get(conn)
        if names is None:
            names = self._prepared[conn] = set()
        return names

    def _drop(self, conn: Connection) -> None:
        """Close ``conn`` (taken out of the pool) and forget its prepared statements."""
        self._prepared.pop(conn, None)
        conn.close()

    def _take(self) -> tuple[Connection, bool]:
        """A connection, and whether it is an idle one that was checked; counted in use."""
        with self._lock:
            if self._in_use >= self._max_size:
                self._wait_for_one()
            if self._closed:
                raise psycopg.OperationalError("the store is closed")
            self._in_use += 1
            conn = self._idle.pop() if self._idle else None
        try:
            while conn is not None:
                if not self._check:
                    return conn, False
                if _alive(conn):
                    return conn, True
                self._drop(conn)
                with self._lock:
                    if self._closed:
                        raise psycopg.OperationalError("the store is closed")
                    conn = self._idle.pop() if self._idle else None
            return self.connect(), False
        except BaseException:
            with self._lock:
                self._release()
            raise

    def _wait_for_one(self) -> None:
        """Wait (holding the lock) until a call gives its connection back, or time out."""
        self._waiting += 1
        try:
            if not self._freed.wait_for(
                lambda: self._in_use < self._max_size or self._closed, self._timeout
            ):
                raise AllConnectionsBusy(
                    f"all {self._max_size} connections stayed in use for {self._timeout} s"
                )
        finally:
            self._waiting -= 1

    def _release(self) -> None:
        """One call fewer in use (the lock is held): a waiting call may go on."""
        self._in_use -= 1
        if self._waiting:
            self._freed.notify()

    def _give_back(self, conn: Connection) -> None:
        broken = conn.closed or conn.broken
        dropped: list[Connection] = []
        with self._lock:
            self._release()
            if not broken and not self._closed and _idle(conn):
                self._idle.append(conn)
                return
            if broken:
                # The server most likely restarted or cut its connections: the idle ones
                # are dropped too, rather than failing (or checking) one call each.
                dropped, self._idle = self._idle, []
        self._drop(conn)
        for other in dropped:
            self._drop(other)

    def close(self) -> None:
        """Close every idle connection; one in use is closed when it is given back.

        A call waiting for a connection fails at once (the store is closed).
        """
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            self._freed.notify_all()
        if self._watchdog is not None:
            self._watchdog.stop()
        for conn in idle:
            self._drop(conn)


def _idle(conn: Connection) -> bool:
    """Whether ``conn`` is in no transaction (a call always ends its own)."""
    return conn.pgconn.transaction_status == TransactionStatus.IDLE


def _alive(conn: Connection) -> bool:
    """Whether the idle ``conn`` is usable: nothing arrived on it, or it answers a query.

    An idle connection receives nothing unless the server ends it (its farewell, then the
    end of the stream) or, rarely, reports a setting: so one with nothing to read is up, as
    far as anything short of a round trip can tell, and one with something to read is asked
    an empty query (psycopg_pool's check_connection), which fails if it is gone.
    """
    if conn.closed or conn.broken:
        return False
    try:
        if not _readable(conn.fileno()):
            return True
        conn.execute("")
    except (psycopg.Error, OSError, ValueError):
        return False
    return True


def _readable(fd: int) -> bool:
    """Whether the socket ``fd`` has something to read (or its end), without waiting."""
    if hasattr(select, "poll"):  # (no limit on the descriptor's number, unlike select)
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([fd], [], [], 0)[0])  # pragma: no cover - Windows
