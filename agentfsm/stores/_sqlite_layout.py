"""`SQLiteStore`'s file layout (its tables, its format, the migration to it) and connections.

Format 3 (this one) numbers each run (``runs.run_no``, the table's rowid, given in the order
runs are first saved) and keys its events and items by that number: each row's rowid is
``run_no * 2**32`` plus its ``seq`` (events), or plus its index (items: messages from 0,
trace entries from 2**31), and a CHECK keeps it equal to its columns. A run's rows are then
appended at the right edge of one B-tree per table, with integer keys and no second index,
instead of landing at a random place (a uuid) of WITHOUT ROWID trees whose interior pages
repeat every row's key and text: a 10-iteration run writes about 36 WAL pages instead of
53, the pages a checkpoint copies back halve, and SQLite's part of the turn's last save
costs about half.

Format 2 keyed events and items by the run's TEXT id; `migrate` rewrites such a file into
format 4 in one transaction, the first time a writable store opens it. Format 4 adds each
busy run's lease to its row in ``runs`` (``lease_owner``, ``lease_expires``: see
`agentfsm.stores.leases`), written by the save's own ``UPDATE``; `migrate` adds the two
columns to a file of format 3 (every run in it has no lease).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

FILE_FORMAT = 4
"""The layout of the database file this agentfsm writes (``PRAGMA user_version``).

It is bumped whenever the layout changes. Format 1 kept each snapshot whole in ``runs``;
format 2 keeps its messages and trace as rows of ``items``, keyed by the run's id; format 3
keys events and items by the run's number (``runs.run_no``); format 4 keeps leases in ``runs``.
"""

MIGRATED_FORMATS = (2, 3)
"""The older formats `migrate` rewrites into `FILE_FORMAT` (a read-only store reads them as
they are)."""

READABLE_FORMATS = (*MIGRATED_FORMATS, FILE_FORMAT)
"""Every format this agentfsm opens."""

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS runs (
        run_no INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL UNIQUE,
        schema_version INTEGER NOT NULL,
        version INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        state TEXT NOT NULL,
        turn INTEGER NOT NULL,
        snapshot TEXT NOT NULL,
        lease_owner TEXT,
        lease_expires REAL
    )""",
    """CREATE TABLE IF NOT EXISTS events (
        id INTEGER PRIMARY KEY,
        run_no INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        event TEXT NOT NULL,
        CHECK (seq BETWEEN 1 AND 4294967295 AND id = (run_no << 32) + seq)
    )""",
    """CREATE TABLE IF NOT EXISTS items (
        id INTEGER PRIMARY KEY,
        run_no INTEGER NOT NULL,
        kind TEXT NOT NULL,
        idx INTEGER NOT NULL,
        item TEXT NOT NULL,
        CHECK (kind IN ('m', 't') AND idx BETWEEN 0 AND 2147483647
            AND id = (run_no << 32) + (kind = 't') * 2147483648 + idx)
    )""",
    """CREATE TRIGGER IF NOT EXISTS events_append_only BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END""",
)
"""The tables and the trigger of a new file (and of a migrated one, word for word)."""

OUR_TABLES = {"runs", "events", "items", "events_append_only"}
"""The names in the schema of an agentfsm file of format 2, 3 or 4 (SQLite's own aside)."""

LEASED_FORMAT = 4
"""The first format that keeps leases (an older file, read only, has none)."""


_CORRUPT_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
_READ_ONLY_CODE = 8  # SQLITE_READONLY


def is_corruption(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says the file is damaged or not a database."""
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    if code is not None:
        return (code & 0xFF) in _CORRUPT_CODES
    text = str(exc)
    return "malformed" in text or "not a database" in text


def is_read_only(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says the connection may not write the file."""
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    if code is not None:
        return (int(code) & 0xFF) == _READ_ONLY_CODE
    return "readonly" in str(exc)


def connect_writing(path: Path) -> sqlite3.Connection:
    """A connection that writes (the store's default)."""
    return sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)


def connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection that cannot write the file (SQLite's ``mode=ro``)."""
    return sqlite3.connect(
        f"{path.absolute().as_uri()}?mode=ro",
        uri=True,
        timeout=30.0,
        isolation_level=None,
        check_same_thread=False,
    )


SPAN = 1 << 32
"""The rowids of one run's events (or items): from ``run_no * SPAN`` on, fewer than SPAN."""
_TRACE = 1 << 31  # (a run's trace entries, after its messages)


def first_key(run_no: int) -> int:
    """The lowest rowid a row of run ``run_no`` can have in ``events`` or ``items``."""
    return run_no * SPAN


def item_key(run_no: int, kind: str, idx: int) -> int:
    """The rowid of a run's item: its messages (kind ``m``), then its trace (``t``)."""
    return run_no * SPAN + (_TRACE if kind == "t" else 0) + idx


def kind_keys(run_no: int, kind: str) -> tuple[int, int]:
    """The first and the last rowid of a run's items of ``kind``."""
    first = item_key(run_no, kind, 0)
    return first, first + _TRACE - 1


def events_sql(file_format: int) -> str:
    """A run's events after a seq, in order: parameters ``(run_id, after_seq)``."""
    if file_format == 2:
        return "SELECT event FROM events WHERE run_id = ?1 AND seq > ?2 ORDER BY seq"
    return (
        "SELECT e.event FROM runs AS r JOIN events AS e ON e.id BETWEEN "
        "(r.run_no << 32) + ?2 + 1 AND (r.run_no << 32) + 4294967295 "
        "WHERE r.run_id = ?1 ORDER BY e.id"
    )


def items_sql(file_format: int) -> str:
    """A run's items, kind by kind in order: parameter ``(run_id,)``."""
    if file_format == 2:
        return "SELECT kind, item FROM items WHERE run_id = ? ORDER BY kind, idx"
    return (
        "SELECT i.kind, i.item FROM runs AS r JOIN items AS i ON i.id BETWEEN "
        "r.run_no << 32 AND (r.run_no << 32) + 4294967295 WHERE r.run_id = ? ORDER BY i.id"
    )


_FROM_FORMAT_2 = (
    "DROP TRIGGER events_append_only",
    "ALTER TABLE runs RENAME TO runs_format_2",
    "ALTER TABLE events RENAME TO events_format_2",
    "ALTER TABLE items RENAME TO items_format_2",
    *SCHEMA,
    # Runs are numbered in the order they were first saved (their format-2 rowid).
    "INSERT INTO runs (run_id, schema_version, version, seq, state, turn, snapshot) "
    "SELECT run_id, schema_version, version, seq, state, turn, snapshot FROM runs_format_2 "
    "ORDER BY rowid",
    "INSERT INTO events (id, run_no, seq, event) "
    "SELECT (runs.run_no << 32) + old.seq, runs.run_no, old.seq, old.event "
    "FROM events_format_2 AS old JOIN runs ON runs.run_id = old.run_id "
    "ORDER BY runs.run_no, old.seq",
    "INSERT INTO items (id, run_no, kind, idx, item) "
    "SELECT (runs.run_no << 32) + (old.kind = 't') * 2147483648 + old.idx, runs.run_no, "
    "old.kind, old.idx, old.item FROM items_format_2 AS old "
    "JOIN runs ON runs.run_id = old.run_id ORDER BY runs.run_no, old.kind, old.idx",
    "DROP TABLE events_format_2",
    "DROP TABLE items_format_2",
    "DROP TABLE runs_format_2",
)
_ORPHANS = (
    "SELECT (SELECT COUNT(*) FROM events WHERE run_id NOT IN (SELECT run_id FROM runs)) + "
    "(SELECT COUNT(*) FROM items WHERE run_id NOT IN (SELECT run_id FROM runs))"
)


class OrphanRowsError(Exception):
    """A format-2 file holds events or items of a run it has no row for (nothing migrated)."""

    def __init__(self, count: int) -> None:
        super().__init__(count)
        self.count = count


_FROM_FORMAT_3 = (
    "ALTER TABLE runs ADD COLUMN lease_owner TEXT",
    "ALTER TABLE runs ADD COLUMN lease_expires REAL",
)


def migrate(conn: sqlite3.Connection) -> bool:
    """Rewrite a file of an older format into `FILE_FORMAT`, in the caller's transaction.

    Format 2 is rewritten whole; format 3 gets the lease columns (no run has a lease).

    The caller holds ``BEGIN IMMEDIATE``: the format is read again under that lock, so of
    several processes opening the file together one migrates and the others find it done.
    Every run keeps its id, snapshot, events and items; the old tables are dropped (their
    pages are reused by later saves; the file does not shrink). A failure raises, and the
    caller's rollback leaves the file as it was.

    Returns:
        Whether the file was migrated (False: another process already had).

    Raises:
        OrphanRowsError: Events or items of a run with no row in ``runs`` (which format 3
            cannot key), found before anything is changed.
        sqlite3.Error: The database failed.
    """
    found = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if found not in MIGRATED_FORMATS:
        return False
    if found == 3:
        for statement in _FROM_FORMAT_3:
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version={FILE_FORMAT}")
        return True
    orphans = int(conn.execute(_ORPHANS).fetchone()[0])
    if orphans:
        raise OrphanRowsError(orphans)
    for statement in _FROM_FORMAT_2:
        conn.execute(statement)
    conn.execute(f"PRAGMA user_version={FILE_FORMAT}")
    return True
