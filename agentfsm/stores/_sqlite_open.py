"""Opening `SQLiteStore`'s file: what it is, seen without a trace, and where it can be read.

**A first look leaves no trace.** Before the store opens its connection, `look` reads the
file's layout version and table names through a connection opened with SQLite's
``immutable=1``: no lock is taken, no ``-wal`` or ``-shm`` file is created (an ordinary
connection, even a ``mode=ro`` one, creates both beside a file in WAL mode and may leave
them there), and nothing is written. So a file of another application is refused by
`check_layout` byte-identical, with nothing left beside it, whether the store was to write
it or only read it.

That look reads the main file only. Where a ``-wal`` file with content lies beside it, the
look may miss the last changes, so a file it finds empty is looked at again by the store's
own connection (as before anything is written, still).

**A read-only place** (a read-only file system, or a file or folder no one may write, root
included) is named: a store that would write there is refused with a `StoreError` saying
so. ``read_only=True`` reads it; a file in WAL mode there is read with ``immutable=1`` when
no ``-wal`` is left beside it (no one can write it there), since SQLite cannot create the
``-shm`` file a ``mode=ro`` connection needs.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from agentfsm.errors import SchemaVersionError, StoreCorruptError, StoreError
from agentfsm.stores._sqlite_layout import FILE_FORMAT, OUR_TABLES, READABLE_FORMATS, is_corruption


@dataclass(frozen=True, slots=True)
class Look:
    """What a file is: its layout version and the names in its schema (SQLite's aside)."""

    file_format: int
    """``PRAGMA user_version`` (0 for a new file, or a file of something else)."""
    names: frozenset[str]
    """Its tables, indexes, views and triggers."""


def connect_immutable(path: Path) -> sqlite3.Connection:
    """A connection that reads the file as it is, with no lock and no file beside it."""
    return sqlite3.connect(
        f"{path.absolute().as_uri()}?immutable=1",
        uri=True,
        isolation_level=None,
        check_same_thread=False,
    )


def probe(conn: sqlite3.Connection, path: Path) -> Look:
    """The file's layout, read on ``conn`` without writing anything.

    Raises:
        StoreCorruptError: It is not a SQLite database (or a damaged one).
        StoreError: It cannot be read (say, a place it cannot be read from).
    """
    try:
        file_format = int(conn.execute("PRAGMA user_version").fetchone()[0])
        names = frozenset(
            str(row[0])
            for row in conn.execute("SELECT name FROM sqlite_master")
            if not str(row[0]).startswith("sqlite_")
        )
    except sqlite3.Error as exc:
        if is_corruption(exc):
            raise StoreCorruptError(
                str(path), f"it is not a readable SQLite database ({exc})"
            ) from exc
        where = read_only_place(path)
        hint = f" (it is on a read-only place: {where})" if where else ""
        raise StoreError(f"cannot read the run store {str(path)!r}: {exc}{hint}") from exc
    return Look(file_format, names)


def look(path: Path) -> Look | None:
    """The file's layout, seen without a trace; None if it is no file, or is empty.

    None too where the look cannot be trusted to be whole: an empty-looking file beside a
    ``-wal`` file with content (the store's own connection looks again).

    Raises:
        StoreCorruptError: It is not a SQLite database.
        StoreError: It cannot be read.
    """
    if not path.is_file() or path.stat().st_size == 0:
        return None
    try:
        conn = connect_immutable(path)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read the run store {str(path)!r}: {exc}") from exc
    try:
        seen = probe(conn, path)
    finally:
        conn.close()
    if seen.file_format == 0 and not seen.names and _wal_has_content(path):
        return None
    return seen


def check_layout(path: Path, seen: Look) -> None:
    """Refuse a file that is not an agentfsm run database of a format this one reads.

    A new file (format 0, nothing in it) passes. A file of format 0 holding anything is
    another application's, even if its tables have agentfsm's names (agentfsm sets the
    format in the very transaction that creates its tables).

    Raises:
        SchemaVersionError: agentfsm's tables, of another layout version.
        StoreCorruptError: A database of something else.
    """
    file_format, names = seen.file_format, seen.names
    if file_format not in (0, *READABLE_FORMATS) and names <= OUR_TABLES:
        raise SchemaVersionError(str(path), None, file_format, READABLE_FORMATS)
    ours = file_format in READABLE_FORMATS and names >= OUR_TABLES
    if not ours and (names or file_format != 0):
        raise StoreCorruptError(
            str(path),
            f"it is a SQLite database of something else (user_version {file_format}, "
            f"tables {sorted(names)!r}), expected agentfsm's run database (file format "
            f"{FILE_FORMAT}, tables {sorted(OUR_TABLES)!r})",
        )


def read_only_place(path: Path) -> str | None:
    """Why the store's file, or its folder, cannot be written (None: it can).

    It asks the system (``access``), which also answers for root: a read-only file system
    or an immutable file (``chattr +i``) cannot be written by root either, while file modes
    do not stop root (a 0444 file in a 0555 folder is written by root).
    """
    folder = path.parent
    if path.exists() and not os.access(path, os.W_OK):
        return f"the file {str(path)!r} cannot be written"
    if folder.is_dir() and not os.access(folder, os.W_OK):
        return f"its folder {str(folder)!r} cannot be written (SQLite writes its journal there)"
    return None


def readable_in_place(path: Path) -> bool:
    """Whether a file on a read-only place is to be read with ``immutable=1``.

    So it is when no ``-wal`` file with content lies beside it: then the main file is the
    whole database, and no one can change it there. (With one, ``mode=ro`` is tried, which
    reads it if its ``-shm`` file is there too.)
    """
    return not _wal_has_content(path)


def _wal_has_content(path: Path) -> bool:
    wal = path.with_name(path.name + "-wal")
    return wal.is_file() and wal.stat().st_size > 0
