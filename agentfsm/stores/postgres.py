"""`PostgresStore`: a `RunStore` in a PostgreSQL database, shared by many processes.

Built on psycopg 3 and its connection pool (the ``postgres`` extra). The layout, the
migration and every statement live in ``agentfsm.stores._postgres_sql``; this module runs
them on psycopg's synchronous API, the one the Agent calls today.

- **A save is one transaction, in one round trip**: one prepared statement
  (`agentfsm.stores._pg_save`) updates the run's row only if its stored version is
  ``expected_version``, its seq the one the events follow and no other owner's lease is
  live, and only then appends the events, the snapshot's new messages and trace entries and
  a notification. Writers of one run, in any process, are serialised by the row's lock; a
  new run is created by an ``INSERT … ON CONFLICT DO NOTHING``, so of two creators one finds
  the other's row. A save the statement refused is handed to the ``agentfsm_save`` function
  the migration creates, which says why under the row's lock (`SnapshotConflictError`,
  `InvalidSaveError`, `RunBusyError`): a second round trip only for a refusal.
- **Durability** is PostgreSQL's: a committed save survives the death of the client at once,
  and with the server's defaults (``synchronous_commit=on``, ``fsync=on``) a crash of the
  server or the machine.
- **The schema is versioned.** An empty database gets agentfsm's tables from an explicit
  migration (under an advisory lock, so concurrent first openers do not race); a database
  of a newer schema version, or holding another application's tables, is refused untouched.
- **A lost connection** during a save is resolved: the save's stamp, read back, says whether
  it committed before the connection went (then `save` returns as if nothing happened).
- **An outage** is a `StoreError` at once: a call makes one connection attempt of its own,
  bounded by ``connect_timeout``, and never waits for a background reconnection; the first
  call once the server is back succeeds, as dead pooled connections are checked (without a
  round trip) and dropped, and a call on one whose end was not seen yet is made again on a
  new connection if it did not take effect (`agentfsm.stores._pg_pool`).
- **Watching.** `PostgresStore.watch` takes its run's watch lock and LISTENs before it
  reads, so it misses nothing (a save of a run nobody watches sends no notification:
  `agentfsm.stores._postgres_sql.WATCHED_RUN`); when its connection is lost (a server
  restart) it reconnects by itself and goes on after the last event it yielded.
- **Leases** (`LeasingStore`): a busy run's lease is two columns of its row, taken, renewed
  or cleared by the save function in the save's transaction (see `agentfsm.stores.leases`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import psycopg
from pydantic import ValidationError

from agentfsm import _checks as checks
from agentfsm.errors import (
    InvalidSaveError,
    SchemaVersionError,
    SnapshotConflictError,
    StoreCorruptError,
    StoreError,
    StoreWriteError,
)
from agentfsm.states.events import Event
from agentfsm.stores import _pg_save as one_statement
from agentfsm.stores import _pg_schema as schema
from agentfsm.stores import _pg_watch as watching
from agentfsm.stores import _postgres_sql as sql
from agentfsm.stores._credentials import redact, scrub
from agentfsm.stores._items import RecentWrites, Written, assemble, new_items
from agentfsm.stores._pg_exec import run
from agentfsm.stores._pg_pool import (
    MIN_CONNECT_TIMEOUT,
    AllConnectionsBusy,
    Connection,
    Connections,
    ServerUnreachable,
    StaleConnection,
)
from agentfsm.stores._pg_watchdog import ServerSilent
from agentfsm.stores.base import (
    ClosesOnExit,
    RunSummary,
    ThreadedAsync,
    check_save,
    run_arguments,
    save_arguments,
)
from agentfsm.stores.leases import Holds, HoldsHere, Lease, lease_of
from agentfsm.stores.snapshot import READABLE_SCHEMA_VERSIONS, Snapshot

_T = TypeVar("_T")

DEFAULT_CALL_TIMEOUT = 60.0
"""Seconds a `PostgresStore` call waits for the server's answer, by default."""


class PostgresStore(HoldsHere, ThreadedAsync, ClosesOnExit):
    """Keeps runs in a PostgreSQL database: durable, atomic, shared by many processes.

    Args:
        url: The database, as a libpq URL (``postgresql://user:password@host:5432/db``) or
            key=value string. Its password never appears in the store's ``repr``, ``url``,
            errors or log lines.
        create: Create agentfsm's tables if the database is empty (the migration to the
            current schema version); with False an empty database is an error and is left
            empty.
        min_size: The connections the pool opens at once and keeps; the store is returned
            once they are open. With ``min_size == max_size`` the pool never opens one in
            the background while runs go on.
        max_size: The most connections the store's pool opens (threads beyond wait).
        timeout: Seconds a call waits for a free connection while all ``max_size`` are in
            use by other threads, before it fails. It is no wait for the server: see
            ``connect_timeout``.
        connect_timeout: Seconds one attempt to open a connection may take (whole seconds,
            at least 2: libpq's least). A call that needs a new connection makes one
            attempt: while the server is down it fails at once (refused) or after this
            (no answer), with a `StoreError`.
        check_connections: Check each pooled connection before use (no round trip: its
            socket, and an empty query only if the server sent something), and make a call
            again on a new connection if its connection turns out lost and the call did
            not take effect, so that after the server restarts or drops connections no call
            fails; with False a lost connection fails one call (with nothing written) and
            the pool's idle connections are dropped with it.
        call_timeout: Seconds a call may wait for the server's answer (None: no bound). A
            server that accepts a connection but never answers (a stopped or wedged
            backend, a frozen machine) then fails the call with a `StoreError` instead of
            blocking it for ever: its connection is closed, and a save's
            `StoreWriteError` says whether it may still be stored (``outcome_known``).
            The server's own ``statement_timeout`` bounds slow statements; this bounds a
            server that does not run at all.

    Raises:
        StoreError: The database cannot be reached, or (``create=False``) is empty.
        StoreCorruptError: The database holds another application's tables.
        SchemaVersionError: Its agentfsm schema is of a version this agentfsm does not know.
    """

    def __init__(
        self,
        url: str,
        *,
        create: bool = True,
        min_size: int = 1,
        max_size: int = 8,
        timeout: float = 30.0,
        connect_timeout: int = 5,
        check_connections: bool = True,
        call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
    ) -> None:
        self.url = redact(url)
        """Where the runs are, its password masked."""
        if not 1 <= min_size <= max_size:
            raise ValueError(
                f"PostgresStore needs 1 <= min_size <= max_size, got min_size={min_size!r}, "
                f"max_size={max_size!r}"
            )
        checks.seconds("timeout", timeout)
        checks.whole("connect_timeout", connect_timeout, minimum=MIN_CONNECT_TIMEOUT)
        checks.seconds("call_timeout", call_timeout, optional=True)
        self._conninfo = url
        self.connect_timeout = connect_timeout
        """Seconds one attempt to open a connection may take."""
        self._lock = threading.Lock()
        self._written = RecentWrites()
        self._holds = Holds()
        self._closed = False
        try:
            # direct: its error is clear
            with psycopg.connect(url, autocommit=True, connect_timeout=connect_timeout) as conn:
                schema.prepare(conn, self.url, create=create)
            self._pool = Connections(
                url,
                min_size=min_size,
                max_size=max_size,
                timeout=timeout,
                connect_timeout=connect_timeout,
                check=check_connections,
                call_timeout=call_timeout,
            )
        except psycopg.Error as exc:
            # not chained: a driver's message about a malformed URL may quote it whole
            raise StoreError(
                f"cannot open the run store {self.url!r}: {scrub(str(exc), url)}"
            ) from None

    def __repr__(self) -> str:
        return f"PostgresStore({self.url!r})"

    def _failure(
        self, exc: psycopg.Error, run_id: str | None, writing: bool, *, known: bool = True
    ) -> StoreError:
        detail = scrub(str(exc).strip(), self._conninfo)
        if isinstance(exc, ServerUnreachable):
            detail = f"cannot reach the database ({detail})"
        if (exc.sqlstate or "").startswith("XX"):  # data or index corrupted, internal error
            return StoreCorruptError(self.url, f"the database reports damage ({detail})", run_id)
        if writing and run_id is not None:
            return StoreWriteError(run_id, self.url, detail, outcome_known=known)
        return StoreError(f"cannot use the run store {self.url!r}: {detail}")

    def save(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        """Append ``events`` and store ``snapshot`` in one transaction (see `RunStore.save`)."""
        save_arguments(snapshot, events, expected_version)
        run_id = snapshot.run_id
        try:
            check_save(snapshot, events, expected_version, one_statement.follows(snapshot, events))
        except InvalidSaveError:
            self._refuse(snapshot, events, expected_version)
            raise  # pragma: no cover - what fails here fails against the stored seq too
        with self._lock:
            written = self._written.get(run_id)
        if written is not None and written.version != expected_version:
            written = None  # what this store wrote is not what the save continues
        stamp = one_statement.new_stamp()
        hold = self._holds.get(run_id)
        lease = one_statement.lease_arguments(hold)
        outcome, actual, stored_seq, leased = self._write(
            snapshot, events, expected_version, written, stamp, lease
        )
        if outcome != "saved":
            self._forget(run_id)
            one_statement.refusal(
                outcome, snapshot, events, expected_version, (actual, stored_seq), leased
            )
        with self._lock:
            self._written[run_id] = Written.of(snapshot, stamp)
        if hold is not None:
            hold.saved(*leased)

    def _write(
        self,
        snapshot: Snapshot,
        events: Sequence[Event],
        expected_version: int | None,
        written: Written | None,
        stamp: str,
        lease: tuple[str | None, float, float],
    ) -> tuple[str, int | None, int, tuple[str | None, float | None]]:
        """`_save`, again with every item if stale; a lost connection resolved by the stamp.

        Raises:
            StoreError: The save failed, or its outcome cannot be known (nothing assumed).
        """
        run_id = snapshot.run_id
        again = True  # once, after a checked connection was found lost mid-call
        while True:
            try:
                saved = self._save(snapshot, events, expected_version, written, stamp, lease)
                if saved[0] == "stale":  # another store wrote that version: write every item
                    saved = self._save(snapshot, events, expected_version, None, stamp, lease)
            except (ServerUnreachable, AllConnectionsBusy) as exc:  # nothing was sent
                self._forget(run_id)
                raise self._failure(exc, run_id, writing=True) from exc
            except psycopg.OperationalError as exc:
                # The connection failed: the commit may have happened before it did. The
                # stamp, unique to this save, says whether it did.
                committed = self._committed(snapshot, stamp)
                if committed:
                    held = (lease[0], lease[2]) if snapshot.state == "busy" else (None, None)
                    return "saved", None, 0, held
                if again and committed is False and isinstance(exc, StaleConnection):
                    again = False  # it did not commit: the server ended an idle connection
                    continue
                self._forget(run_id)
                # Not committed yet is not never: a server that did not answer may still
                # run what it received; one that could not be asked is not known either.
                known = committed is False and not isinstance(exc, ServerSilent)
                raise self._failure(exc, run_id, writing=True, known=known) from exc
            except psycopg.Error as exc:
                self._forget(run_id)
                raise self._failure(exc, run_id, writing=True) from exc
            return saved

    def _save(
        self,
        snapshot: Snapshot,
        events: Sequence[Event],
        expected_version: int | None,
        written: Written | None,
        stamp: str,
        lease: tuple[str | None, float, float],
    ) -> tuple[str, int | None, int, tuple[str | None, float | None]]:
        """The save statement, or if it wrote nothing the save function, which says why.

        Returns:
            The outcome (``saved``, ``busy``, ``conflict``, ``invalid`` or ``stale``), the
            stored version and seq (those of a refusal), and the stored lease.
        """
        changes = new_items(snapshot, written)
        given: dict[str, Any] = {  # (the same for the statement and the function)
            "expected_version": expected_version,
            "known_seq": one_statement.follows(snapshot, events),
            "known_stamp": None if written is None else written.stamp,
            "stamp": stamp,
            "lease": lease,
        }
        fast = one_statement.arguments(snapshot, events, changes, **given)
        save = one_statement.statement(expected_version, changes)
        with self._pool.connection() as conn:
            stored = one_statement.lease_row(run(conn, save, fast, self._pool.prepared(conn)))
            if stored is not None:
                return "saved", snapshot.version, snapshot.seq, stored
            # Refused (or raced): the function checks again under the row's lock and says
            # why, or saves if the stored run now is the one this save continues.
            arguments = sql.save_arguments(snapshot, events, changes, **given)
            row = conn.execute(sql.SAVE, arguments).fetchone()
        if row is None:  # pragma: no cover - the function always returns one row
            raise psycopg.ProgrammingError("agentfsm_save returned no row")
        return str(row[0]), row[1], int(row[2]), (row[3], row[4])

    def _committed(self, snapshot: Snapshot, stamp: str) -> bool | None:
        """Whether the save of ``snapshot`` stamped ``stamp`` is stored (None: unknown)."""
        try:
            rows = self._read(sql.SELECT_STAMP, snapshot.run_id)
        except StoreError:
            return None
        return bool(rows) and tuple(rows[0]) == (snapshot.version, stamp)

    def _refuse(
        self, snapshot: Snapshot, events: Sequence[Event], expected_version: int | None
    ) -> None:
        """Raise the conflict, if any, or what does not continue the stored run, if so."""
        rows = self._read(sql.SELECT_RUN, snapshot.run_id)
        actual, stored_seq = (None, 0) if not rows else rows[0]
        if actual != expected_version:
            raise SnapshotConflictError(snapshot.run_id, expected_version, actual)
        check_save(snapshot, events, expected_version, stored_seq)

    def _forget(self, run_id: str) -> None:
        with self._lock:
            self._written.pop(run_id, None)

    def _read(self, statement: str, *parameters: str | int) -> list[tuple[Any, ...]]:
        try:
            return self._again(lambda conn: conn.execute(statement, parameters).fetchall())
        except psycopg.Error as exc:
            run_id = str(parameters[0]) if parameters else None
            raise self._failure(exc, run_id, writing=False) from exc

    def _again(self, call: Callable[[Connection], _T]) -> _T:
        """``call`` on a pooled connection; once more on another if that one was found lost.

        Only for a call that may be made twice (a read, a delete, a lease renewal).
        """
        try:
            with self._pool.connection() as conn:
                return call(conn)
        except StaleConnection:
            with self._pool.connection() as conn:
                return call(conn)

    def load(self, run_id: str) -> Snapshot | None:
        """The run's latest snapshot, or None.

        Raises:
            SchemaVersionError: The snapshot was written by a newer agentfsm.
            StoreCorruptError: The snapshot cannot be read.
        """
        run_arguments(run_id)
        rows = self._read(sql.LOAD, run_id)  # one statement: one committed state
        if not rows:
            return None
        schema_version, core, stamp, messages, trace = rows[0]
        if schema_version not in READABLE_SCHEMA_VERSIONS:
            raise SchemaVersionError(self.url, run_id, schema_version, READABLE_SCHEMA_VERSIONS)
        try:
            snapshot = Snapshot.model_validate_json(assemble(core, {"m": messages, "t": trace}))
        except ValidationError as exc:
            raise StoreCorruptError(
                self.url, f"its snapshot is not a valid Snapshot ({exc})", run_id
            ) from exc
        with self._lock:
            self._written[run_id] = Written.of(snapshot, stamp)
        return snapshot

    def events(self, run_id: str, after_seq: int = 0) -> list[Event]:
        """The run's events after ``after_seq``, in order.

        Raises:
            StoreCorruptError: An event cannot be read.
        """
        run_arguments(run_id, after_seq)
        return self._events(run_id, self._read(sql.EVENTS, run_id, after_seq))

    def _events(self, run_id: str, rows: list[tuple[Any, ...]]) -> list[Event]:
        try:
            return [Event.model_validate_json(row[0]) for row in rows]
        except ValidationError as exc:
            raise StoreCorruptError(
                self.url, f"an event is not a valid Event ({exc})", run_id
            ) from exc

    def list_runs(self) -> list[RunSummary]:
        """Every stored run, ordered by run id."""
        return [RunSummary(*row) for row in self._read(sql.LIST_RUNS)]

    def lease(self, run_id: str) -> Lease | None:
        """The run's lease, live or expired (see `LeasingStore.lease`)."""
        run_arguments(run_id)
        return lease_of(run_id, self._read(sql.LEASE, run_id))

    def renew_lease(self, run_id: str, owner: str, expires_at: float) -> Lease | None:
        """Extend ``owner``'s lease on the run, in one statement (`LeasingStore.renew_lease`).

        Raises:
            StoreWriteError: The database failed the write.
        """
        arguments = {"until": expires_at, "run": run_id, "owner": owner}
        try:
            rows = self._again(lambda conn: conn.execute(sql.RENEW, arguments).fetchall())
        except psycopg.Error as exc:
            raise self._failure(exc, run_id, writing=True) from exc
        return lease_of(run_id, rows)

    def delete(self, run_id: str) -> None:
        """Remove the run and its events, in one transaction; no error if it is not stored."""
        run_arguments(run_id)

        def delete(conn: Connection) -> None:
            with conn.transaction():
                for statement in sql.DELETE_RUN:
                    conn.execute(statement, (run_id,))

        try:
            self._again(delete)
        except psycopg.Error as exc:
            raise self._failure(exc, run_id, writing=True) from exc
        finally:
            self._forget(run_id)

    def watch(
        self,
        run_id: str,
        after_seq: int = 0,
        *,
        timeout: float | None = None,
        reconnect_timeout: float = watching.RECONNECT_TIMEOUT,
    ) -> Iterator[Event]:
        """The run's events after ``after_seq`` as they are stored, by any process.

        It takes the run's watch lock and LISTENs on its own connection first (a save of a
        run nobody watches sends no notification), then reads what is stored, then reads
        again at each notification of the run: an event committed at any moment is yielded
        exactly once, in order. When its connection is lost (the server restarted), it
        reconnects by itself, at once and then after 0.1 s, 0.2 s… (at most
        ``RECONNECT_DELAY`` s apart), LISTENs again and reads on after the last event it
        yielded: each event is still yielded once, in order.

        Args:
            run_id: The run to watch (it need not exist yet).
            after_seq: Yield only events after this one.
            timeout: Stop after this many seconds without a new event; None: never stop
                (close the generator, or break out of the loop, to stop watching).
            reconnect_timeout: Seconds to keep trying to reconnect after the connection is
                lost (never beyond ``timeout``) before raising `StoreError`.

        Raises:
            StoreError: The database cannot be reached (at the start), or not again within
                ``reconnect_timeout`` once the connection was lost.
        """
        run_arguments(run_id, after_seq)
        checks.seconds("timeout", timeout, optional=True, zero=True)
        checks.seconds("reconnect_timeout", reconnect_timeout)
        key = sql.run_key(run_id)
        try:
            listener = watching.listener(self._conninfo, self.connect_timeout, run_id)
        except psycopg.Error as exc:
            raise self._failure(exc, run_id, writing=False) from None
        last = after_seq
        idle_since = time.monotonic()
        try:
            while True:
                try:
                    for event in self._events(run_id, self._rows_after(run_id, last)):
                        yield event
                        last = event.seq
                        idle_since = time.monotonic()
                    deadline = None if timeout is None else idle_since + timeout
                    if not watching.wait(listener, key, last, deadline):
                        return
                except psycopg.OperationalError as exc:
                    listener.close()
                    give_up = time.monotonic() + reconnect_timeout
                    if timeout is not None:
                        give_up = min(give_up, idle_since + timeout)
                    listener = self._reconnect(run_id, exc, give_up, reconnect_timeout)
                except psycopg.Error as exc:  # pragma: no cover - the server's own refusal
                    raise self._failure(exc, run_id, writing=False) from exc
        finally:
            listener.close()

    def _rows_after(self, run_id: str, after_seq: int) -> list[tuple[Any, ...]]:
        """The run's event rows after ``after_seq``; a lost connection is raised as it is."""
        try:
            return self._again(
                lambda conn: conn.execute(sql.EVENTS, (run_id, after_seq)).fetchall()
            )
        except psycopg.OperationalError:
            raise  # (the watch reconnects)
        except psycopg.Error as exc:
            raise self._failure(exc, run_id, writing=False) from exc

    def _reconnect(
        self, run_id: str, lost: psycopg.Error, give_up: float, reconnect_timeout: float
    ) -> psycopg.Connection[tuple[Any, ...]]:
        try:
            return watching.reconnect(self._conninfo, self.connect_timeout, run_id, give_up, lost)
        except psycopg.OperationalError as exc:
            raise StoreError(
                f"the watch of run {run_id!r} in {self.url!r} lost its connection and could "
                f"not reconnect within {reconnect_timeout} s (or its timeout): "
                f"{scrub(str(exc).strip(), self._conninfo)}"
            ) from None

    async def listen(self) -> psycopg.AsyncConnection[tuple[Any, ...]]:
        """A new asynchronous connection, already LISTENing to every save of the store.

        Each committed save that stores events sends one notification on it (its payload
        is `agentfsm.stores._postgres_sql.notice`), in commit order, as long as it is open
        (a second connection of its own makes every save notify: a save of a run nobody
        watches or listens to sends none). Close it when done.

        Raises:
            StoreError: The database cannot be reached (the password masked).
        """
        try:
            return await watching.listening(self._conninfo, self.connect_timeout)
        except psycopg.Error as exc:
            raise self._failure(exc, None, writing=False) from None

    def close(self) -> None:
        """Close the pool's connections; closing twice is harmless."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._pool.close()
