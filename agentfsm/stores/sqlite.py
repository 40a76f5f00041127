"""`SQLiteStore`: a durable `RunStore` in one SQLite file, with the standard library's sqlite3.

Layout (file format 4, kept in ``PRAGMA user_version``; see `_sqlite_layout`):

- ``runs``: one row per run, numbered (``run_no``) in the order runs are first saved — its
  id, its latest snapshot as JSON but for its messages and trace, the snapshot's
  ``schema_version``, and ``version``, ``seq``, ``state``, ``turn`` for listing; and a busy
  run's lease (``lease_owner``, ``lease_expires``), set by the save's own ``UPDATE``.
- ``items``: the snapshot's messages (kind ``m``) and trace entries (kind ``t``), one row
  each, keyed by ``(run_no, kind, idx)`` (folded into the rowid). Both only grow between
  saves of a run (a reset is the exception), so a save writes just the new ones: its cost
  does not grow with the conversation.
- ``events``: the append-only event log, keyed by ``(run_no, seq)`` (folded into the
  rowid); a trigger refuses any ``UPDATE`` of it.

A file of format 2 (keyed by the run's id) or 3 (no leases) is migrated to format 4 by the
first writable store that opens it, in one transaction; a read-only store reads it as it is.

Each save is one ``BEGIN IMMEDIATE`` transaction, so concurrent writers (threads or
processes) are serialised by SQLite and the version check and the writes are atomic.

Durability: the file is in WAL mode. With ``synchronous="FULL"`` (the default) every
committed save is fsynced before `save` returns, so it survives a process crash *and* a
power loss or OS crash. ``synchronous="NORMAL"`` skips that fsync (WAL stays consistent):
a committed save survives a process crash (SIGKILL) but the last saves may be lost, never
half-applied, on power loss; it is faster on disks where fsync is slow. `SQLiteStore.save_many`
makes several saves, each its own transaction, durable together by the last one's fsync.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import ValidationError

from agentfsm import _checks as checks
from agentfsm.errors import (
    SchemaVersionError,
    SnapshotConflictError,
    StoreCorruptError,
    StoreError,
    StoreWriteError,
)
from agentfsm.states.events import Event
from agentfsm.stores import _sqlite_open as opening
from agentfsm.stores._items import (
    ITEMS,
    RecentWrites,
    Written,
    assemble,
    core_json,
    event_json,
    new_items,
)
from agentfsm.stores._lane import Lane
from agentfsm.stores._sqlite_layout import (
    FILE_FORMAT,
    MIGRATED_FORMATS,
    SCHEMA,
    SPAN,
    OrphanRowsError,
    connect_read_only,
    connect_writing,
    events_sql,
    first_key,
    is_corruption,
    is_read_only,
    item_key,
    items_sql,
    kind_keys,
    migrate,
)
from agentfsm.stores._sqlite_leases import SQLiteLeases, lease_sql
from agentfsm.stores._sqlite_rows import INSERT_RUN, UPDATE_RUN, insert_rows
from agentfsm.stores.base import (
    ClosesOnExit,
    RunSummary,
    ThreadedAsync,
    check_save,
    run_arguments,
    save_arguments,
)
from agentfsm.stores.leases import Holds, lease_after_save
from agentfsm.stores.snapshot import READABLE_SCHEMA_VERSIONS, Snapshot
from agentfsm.stores.watch import PollingWatch

DEFAULT_PATH = Path(".agentfsm") / "runs.db"
"""Where `SQLiteStore` keeps its file by default, relative to the working directory."""


def _checked_path(path: object) -> Path:
    """The store's file, once ``path`` is known to name one (not a directory)."""
    if path is None:
        return Path.cwd() / DEFAULT_PATH
    if not isinstance(path, (str, os.PathLike)) or isinstance(path, bytes):
        checks.refuse_type("path", path, "a file path (str or os.PathLike) or None")
    where = Path(path)
    if str(path) == "" or where.is_dir():
        raise ValueError(
            f"path must name a SQLite file (created if missing), not {checks.given(path)}: "
            f"{'it is a directory' if str(path) else 'it is empty'}"
        )
    return where


class SQLiteStore(SQLiteLeases, ThreadedAsync, PollingWatch, ClosesOnExit):
    """Keeps runs in one SQLite file: durable, atomic, safe for several processes.

    It keeps each busy run's lease (`LeasingStore`), renewed in the save's transaction.

    A file that is not agentfsm's is refused before anything is written to it: no table,
    no journal mode, no ``user_version`` is changed, no ``-wal`` or ``-shm`` file is left
    beside it, read-only or not (`agentfsm.stores._sqlite_open`). So is a file of another
    layout version (`SchemaVersionError`, naming both versions). A file on a read-only
    place (a read-only file system, a file or folder no one may write) is read with
    ``read_only=True``; without it, it is refused as read-only.

    Args:
        path: The database file; ``.agentfsm/runs.db`` under the working directory by
            default. Its parent directory is created (unless ``read_only``).
        synchronous: ``"FULL"`` (durable across power loss) or ``"NORMAL"`` (durable
            across process crashes only); see the module docstring.
        connect: Opens the connection (for tests that inject faults); it should pass
            ``check_same_thread=False`` if the store is shared between threads.
        read_only: Only read: the file must exist and is never written (its journal mode
            included); `save` and `delete` raise `StoreError`. SQLite may leave the
            (empty) ``-wal`` and ``-shm`` files of agentfsm's file beside it: it needs them
            to read a file in WAL mode while others write it. On a read-only place, a file
            with no ``-wal`` beside it is read as it is (``immutable``): it must not change
            meanwhile (no one can write it there).

    Raises:
        TypeError: An argument of the wrong type.
        ValueError: ``path`` is a directory, or ``synchronous`` is not FULL or NORMAL.
        StoreError: The file cannot be opened (or, ``read_only``, does not exist); or it is
            on a read-only place and ``read_only`` is False (the message says so).
        StoreCorruptError: The file is not a SQLite database, or not one of agentfsm's.
        SchemaVersionError: The file was written in another layout version.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
        connect: Callable[[Path], sqlite3.Connection] | None = None,
        read_only: bool = False,
    ) -> None:
        where = _checked_path(path)
        checks.choice("synchronous", synchronous, ("FULL", "NORMAL"))
        checks.callable_or_none("connect", connect)
        checks.flag("read_only", read_only)
        self.path = where
        """The database file."""
        self.read_only = read_only
        """Whether this store only reads its file."""
        if read_only and not where.is_file():
            raise StoreError(f"cannot open the run store {str(where)!r} read-only: no such file")
        seen = opening.look(where)  # refuses a foreign file before it is opened at all
        if seen is not None:
            opening.check_layout(where, seen)
        if not read_only:
            try:
                where.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the run store {str(where)!r}: {exc}") from exc
        fixed = opening.read_only_place(where)
        if fixed is not None and not read_only and connect is None:
            raise StoreError(
                f"cannot open the run store {str(where)!r} to write: it is on a read-only "
                f"place ({fixed}); open it with read_only=True to read it, or move it to a "
                "place that can be written"
            )
        self._synchronous = synchronous
        self._lock = threading.RLock()  # (held by save_many around its saves)
        self._written = RecentWrites()
        self._holds = Holds()
        self.lane = Lane()
        """The thread write-behind makes this store's saves in (`start_saves`)."""
        opener = connect or (connect_read_only if read_only else connect_writing)
        if connect is None and fixed is not None and opening.readable_in_place(where):
            opener = opening.connect_immutable  # (read_only: SQLite could make no -shm there)
        try:
            self._conn = opener(self.path)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the run store {str(where)!r}: {exc}") from exc
        self._closed = False
        self._conn.isolation_level = None  # transactions are begun explicitly
        try:
            self._open(synchronous)
        except BaseException:
            self._conn.close()
            raise

    def _open(self, synchronous: str) -> None:
        # Read-only probes first: a foreign, corrupt or other-version file is refused
        # before any write, the journal mode included.
        seen = opening.probe(self._conn, self.path)
        opening.check_layout(self.path, seen)
        file_format = seen.file_format
        self._reads = (events_sql(file_format), items_sql(file_format), lease_sql(file_format))
        if self.read_only:
            if file_format == 0:
                raise StoreCorruptError(str(self.path), "it holds no agentfsm run database")
            return
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(f"PRAGMA synchronous={synchronous}")
        if file_format != FILE_FORMAT and self._lay_out(file_format):
            self._reads = (
                events_sql(FILE_FORMAT),
                items_sql(FILE_FORMAT),
                lease_sql(FILE_FORMAT),
            )

    def _lay_out(self, file_format: int) -> bool:
        """Create the tables of a new file, or migrate a file of an older format.

        Under the write lock, so that of several processes opening the file together one
        does it and the others find it done.

        Returns:
            False if the file is of an older format and the connection cannot write it (a
            ``mode=ro`` connection, as the web view's): it is read as it is.
        """
        try:
            with self._transaction() as conn:
                if int(conn.execute("PRAGMA user_version").fetchone()[0]) == 0:
                    for statement in SCHEMA:
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version={FILE_FORMAT}")
                else:
                    migrate(conn)
        except OrphanRowsError as exc:
            raise StoreCorruptError(
                str(self.path),
                f"{exc.count} events or items belong to no stored run, so it cannot be "
                f"migrated to file format {FILE_FORMAT} (nothing was changed)",
            ) from exc
        except sqlite3.Error as exc:
            if file_format in MIGRATED_FORMATS and is_read_only(exc):
                return False
            raise self._failure(exc, None, writing=True) from exc
        return True

    def _check_writable(self, run_id: str) -> None:
        if self.read_only:
            raise StoreWriteError(run_id, str(self.path), "the store was opened read_only=True")

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
            self._conn.execute("COMMIT")
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

    def _failure(self, exc: sqlite3.Error, run_id: str | None, writing: bool) -> StoreError:
        if is_corruption(exc):
            return StoreCorruptError(str(self.path), f"the database is damaged ({exc})", run_id)
        if writing and run_id is not None:
            return StoreWriteError(run_id, str(self.path), str(exc))
        return StoreError(f"cannot use the run store {str(self.path)!r}: {exc}")

    def save(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        """Append ``events`` and store ``snapshot`` in one transaction (see `RunStore.save`)."""
        save_arguments(snapshot, events, expected_version)
        run_id = snapshot.run_id
        self._check_writable(run_id)
        hold = self._holds.get(run_id)
        with self._lock:
            try:
                with self._transaction() as conn:
                    row = conn.execute(
                        "SELECT version, seq, run_no, lease_owner, lease_expires FROM runs "
                        "WHERE run_id = ?",
                        (run_id,),
                    ).fetchone()
                    actual, stored_seq = (None, 0) if row is None else (row[0], row[1])
                    lease = lease_after_save(
                        run_id,
                        None if row is None else row[3],
                        None if row is None else row[4],
                        hold,
                        snapshot.state == "busy",
                    )
                    if actual != expected_version:
                        raise SnapshotConflictError(run_id, expected_version, actual)
                    check_save(snapshot, events, expected_version, stored_seq)
                    values = (
                        snapshot.schema_version,
                        snapshot.version,
                        snapshot.seq,
                        snapshot.state,
                        snapshot.turn,
                        core_json(snapshot),
                        *lease,
                        run_id,
                    )
                    if row is None:  # (an INSERT into a rowid table always sets lastrowid)
                        run_no = cast(int, conn.execute(INSERT_RUN, values).lastrowid)
                    else:
                        run_no = row[2]
                        conn.execute(UPDATE_RUN, values)
                    first = first_key(run_no)
                    rows = [(first + e.seq, run_no, e.seq, event_json(e)) for e in events]
                    insert_rows(conn, "events", rows)
                    self._write_items(
                        conn, snapshot, expected_version, run_no, stored=row is not None
                    )
            except sqlite3.Error as exc:
                self._written.pop(run_id, None)
                raise self._failure(exc, run_id, writing=True) from exc
            except BaseException:
                self._written.pop(run_id, None)
                raise
            self._remember(snapshot)
        if hold is not None:
            hold.saved(*lease)

    def save_many(self, saves: Sequence[tuple[Snapshot, Sequence[Event], int | None]]) -> None:
        """Make each ``(snapshot, events, expected_version)`` save in order, one fsync for all.

        Each is made by `save`, its own transaction: atomic, and kept by a crash of the
        process as soon as it commits. On ``synchronous="FULL"`` all but the last commit
        without an fsync (as on ``NORMAL``), and the last one's fsync makes them all durable
        across a power loss before this returns (the WAL is one file, written in order); no
        other save of this store runs in between. The first save that raises ends them:
        those before it are made durable before it is raised. Write-behind hands a run's
        batches to this (`agentfsm.stores.base.start_saves`).

        Raises:
            TypeError: ``saves`` is not a list or tuple of such triples (nothing is saved).
            SnapshotConflictError: A save's stored version is not its expected version.
            InvalidSaveError: A save does not continue the stored run.
            StoreWriteError: The store failed to write a save.
        """
        if not isinstance(saves, (list, tuple)) or not all(
            isinstance(save, tuple) and len(save) == 3 and isinstance(save[0], Snapshot)
            for save in saves
        ):
            checks.refuse_type(
                "saves", saves, "a list or tuple of (snapshot, events, expected_version) tuples"
            )
        for snapshot, _, _ in saves[:1]:
            self._check_writable(snapshot.run_id)
        deferred = self._synchronous == "FULL" and len(saves) > 1
        committed = 0
        with self._lock:
            try:
                for snapshot, events, expected_version in saves:
                    if deferred and committed in (0, len(saves) - 1):
                        self._pragma(snapshot.run_id, committed < len(saves) - 1)
                    self.save(snapshot, events, expected_version=expected_version)
                    committed += 1
            except BaseException:
                if deferred:
                    self._settle(committed)
                raise

    def _pragma(self, run_id: str, deferred: bool) -> None:
        """Commit without an fsync from now on (``deferred``), or as the store was opened."""
        try:
            self._conn.execute(f"PRAGMA synchronous={'NORMAL' if deferred else 'FULL'}")
        except sqlite3.Error as exc:
            raise self._failure(exc, run_id, writing=True) from exc

    def _settle(self, committed: int) -> None:
        """After a failed save of `save_many`: fsync again, and what committed without it.

        Rewriting ``user_version`` with its own value writes the file's first page, so that
        commit appends to the WAL and fsyncs it, with every commit before it.
        """
        try:
            self._conn.execute("PRAGMA synchronous=FULL")
            if committed:
                with self._transaction() as conn:
                    conn.execute(f"PRAGMA user_version={FILE_FORMAT}")
        except sqlite3.Error:
            pass  # (the save's own error is what the caller hears of)

    def _write_items(
        self,
        conn: sqlite3.Connection,
        snapshot: Snapshot,
        expected_version: int | None,
        run_no: int,
        *,
        stored: bool,
    ) -> None:
        """Write the messages and trace entries the stored run does not have yet.

        A run not ``stored`` yet has no item rows (a save and a delete write or remove all of
        a run's rows together): its first save only inserts.
        """
        run_id = snapshot.run_id
        written = self._written.get(run_id)
        if written is not None and written.version != expected_version:
            written = None  # what we wrote is not what is stored (or the run is new)
        rows: list[tuple[object, ...]] = []
        for change in new_items(snapshot, written):
            if change.rewrite and stored:
                conn.execute(
                    "DELETE FROM items WHERE id BETWEEN ? AND ?", kind_keys(run_no, change.kind)
                )
            kind, start = change.kind, change.start
            first = item_key(run_no, kind, start)
            rows += [(first + n, run_no, kind, start + n, r) for n, r in enumerate(change.rows)]
        # Both kinds in the same statements (their keys are disjoint): one INSERT per chunk
        # of rows, not per chunk of each kind (the turn's last save: 3 statements, not 6).
        insert_rows(conn, "items", rows)

    def _remember(self, snapshot: Snapshot) -> None:
        self._written[snapshot.run_id] = Written.of(snapshot)

    def load(self, run_id: str) -> Snapshot | None:
        """The run's latest snapshot, or None.

        Raises:
            SchemaVersionError: The snapshot was written by a newer agentfsm.
            StoreCorruptError: The snapshot, or the file, cannot be read.
        """
        run_arguments(run_id)
        with self._lock:
            try:
                with self._reading() as conn:
                    row = conn.execute(
                        "SELECT schema_version, snapshot FROM runs WHERE run_id = ?", (run_id,)
                    ).fetchall()
                    items = conn.execute(
                        self._reads[1],
                        (run_id,),
                    ).fetchall()
            except sqlite3.Error as exc:
                raise self._failure(exc, run_id, writing=False) from exc
        if not row:
            return None
        schema_version, core = row[0]
        if schema_version not in READABLE_SCHEMA_VERSIONS:
            raise SchemaVersionError(
                str(self.path), run_id, schema_version, READABLE_SCHEMA_VERSIONS
            )
        parts: dict[str, list[str]] = {kind: [] for kind in ITEMS.values()}
        for kind, item in items:
            parts.setdefault(kind, []).append(item)
        text = assemble(core, parts)
        try:
            snapshot = Snapshot.model_validate_json(text)
        except ValidationError as exc:
            raise StoreCorruptError(
                str(self.path), f"its snapshot is not a valid Snapshot ({exc})", run_id
            ) from exc
        with self._lock:
            self._remember(snapshot)
        return snapshot

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: its queries see one committed state of the file."""
        self._conn.execute("BEGIN")
        try:
            yield self._conn
        finally:
            if self._conn.in_transaction:
                self._conn.execute("COMMIT")

    def events(self, run_id: str, after_seq: int = 0) -> list[Event]:
        """The run's events after ``after_seq``, in order.

        Raises:
            StoreCorruptError: An event, or the file, cannot be read.
        """
        run_arguments(run_id, after_seq)
        rows = self._query(
            self._reads[0],
            run_id,
            max(0, min(after_seq, SPAN - 1)),
        )
        try:
            return [Event.model_validate_json(row[0]) for row in rows]
        except ValidationError as exc:
            raise StoreCorruptError(
                str(self.path), f"an event is not a valid Event ({exc})", run_id
            ) from exc

    def list_runs(self) -> list[RunSummary]:
        """Every stored run, ordered by run id."""
        rows = self._query("SELECT run_id, state, turn, seq, version FROM runs ORDER BY run_id")
        return [RunSummary(*row) for row in rows]

    def delete(self, run_id: str) -> None:
        """Remove the run and its events, in one transaction; no error if it is not stored."""
        run_arguments(run_id)
        self._check_writable(run_id)
        with self._lock:
            try:
                with self._transaction() as conn:
                    row = conn.execute(
                        "SELECT run_no FROM runs WHERE run_id = ?", (run_id,)
                    ).fetchone()
                    if row is not None:
                        keys = (first_key(row[0]), first_key(row[0]) + SPAN - 1)
                        conn.execute("DELETE FROM events WHERE id BETWEEN ? AND ?", keys)
                        conn.execute("DELETE FROM items WHERE id BETWEEN ? AND ?", keys)
                        conn.execute("DELETE FROM runs WHERE run_no = ?", row)
                self._written.pop(run_id, None)
            except sqlite3.Error as exc:
                raise self._failure(exc, run_id, writing=True) from exc

    def _query(self, sql: str, *parameters: str | int) -> list[Any]:
        # Rows are untyped (typeshed: Any); each caller reads its own columns.
        with self._lock:
            try:
                return list(self._conn.execute(sql, parameters).fetchall())
            except sqlite3.Error as exc:
                run_id = str(parameters[0]) if parameters else None
                raise self._failure(exc, run_id, writing=False) from exc

    def close(self) -> None:
        """Close the connection (WAL is checkpointed by SQLite); closing twice is harmless.

        Saves started behind a run before are made first.
        """
        self.lane.close()
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()
