"""How `SQLiteStore` writes a save's rows: a run's row, and multi-row inserts."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Sequence

INSERT_RUN = (
    "INSERT INTO runs (schema_version, version, seq, state, turn, snapshot, lease_owner, "
    "lease_expires, run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
UPDATE_RUN = (
    "UPDATE runs SET schema_version = ?, version = ?, seq = ?, state = ?, turn = ?, "
    "snapshot = ?, lease_owner = ?, lease_expires = ? WHERE run_id = ?"
)
"""A run's row: inserted by its first save, then updated in place (an ``INSERT OR REPLACE``
would delete the row and insert it again at the table's end, writing more pages)."""

_COLUMNS = {
    "events": "(id, run_no, seq, event)",
    "items": "(id, run_no, kind, idx, item)",
}
_CHUNKS = (64, 16, 4, 1)
"""The rows one INSERT writes: a save's rows go in chunks of these sizes, largest first."""


@functools.cache
def _insert_sql(table: str, width: int, rows: int) -> str:
    values = ",".join([f"({','.join('?' * width)})"] * rows)
    return f"INSERT INTO {table} {_COLUMNS[table]} VALUES {values}"


def insert_rows(conn: sqlite3.Connection, table: str, rows: Sequence[tuple[object, ...]]) -> None:
    """Insert ``rows`` into ``table`` with a few multi-row statements, not one per row.

    Each statement's step releases the GIL and takes it back, so a save made behind a busy
    run (in a worker thread) waits for the run's thread once per statement: 81 events are 3
    statements (64 + 16 + 1 rows), not 81. Four sizes keep the statements few and cached.
    """
    start = 0
    for size in _CHUNKS:
        while len(rows) - start >= size:
            chunk = rows[start : start + size]
            sql = _insert_sql(table, len(chunk[0]), size)
            conn.execute(sql, [value for row in chunk for value in row])
            start += size
