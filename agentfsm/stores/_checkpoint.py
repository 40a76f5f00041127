"""Checkpoints of a SQLite store's WAL, made in a worker thread, off the saves' path.

By default SQLite checkpoints a WAL file (copies its pages back into the database file) once
it holds 1000 pages, inside the commit that crosses that size: the save that happens to do
so waits for every page to be copied and, on ``synchronous="FULL"``, for two more fsyncs
(milliseconds, every twenty runs or so of a 10-iteration run; that save's run waits for it).
`SQLiteStore` turns that off on its own connection and hands the checkpoints to a
`Checkpointer`: a connection of its own, used in a worker thread, in SQLite's ``PASSIVE``
mode, which never waits for the saves and never makes them wait (one checkpoint and one
writer work at once in WAL mode; a commit appends after the frames being copied). Its
copying and fsyncs run in SQLite, without the GIL, so on a machine with a free core they
cost the run nothing.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from concurrent.futures import Future
from pathlib import Path

from agentfsm.stores.base import _workers

CHECKPOINT_FRAMES = 1000
"""About how many WAL pages the saves write between two checkpoints (SQLite's default)."""

SQLITE_DEFAULT = 1000
"""SQLite's own ``wal_autocheckpoint``: given back to the store's connection if one fails."""

PAGE = 1024
"""Row bytes counted as one WAL page: with the B-tree pages a save touches besides its rows
(two, counted per save), this is within a page or two of what a save writes."""


class Checkpointer:
    """Checkpoints a SQLite file's WAL in a worker thread once the saves wrote about 1000 pages.

    Args:
        path: The database file (in WAL mode).
        synchronous: The store's ``synchronous`` level: a checkpoint fsyncs as the store's
            own connection would have (``FULL``: the WAL before, the file after).
    """

    def __init__(self, path: Path, synchronous: str) -> None:
        self._path = path
        self._synchronous = synchronous
        self._lock = threading.Lock()  # held while a checkpoint runs, and by close
        self._pages = 0
        self._running: Future[None] | None = None
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self.failed = False
        """A checkpoint failed: the store's own connection checkpoints again, as by default."""

    def wrote(self, row_bytes: int, conn: sqlite3.Connection) -> bool:
        """A save committed ``row_bytes`` bytes of rows: checkpoint once enough was written.

        Args:
            row_bytes: The bytes of the rows the save wrote.
            conn: The store's connection (in the thread that saved, under the store's lock).

        Returns:
            False once a checkpoint failed: ``conn`` then checkpoints in its commits again,
            as SQLite does by default, and this is done with.
        """
        if self.failed:
            with contextlib.suppress(sqlite3.Error):  # (the next save says what is wrong)
                conn.execute(f"PRAGMA wal_autocheckpoint={SQLITE_DEFAULT}")
            return False
        self._pages += row_bytes // PAGE + 2
        running = self._running
        if self._pages < CHECKPOINT_FRAMES or (running is not None and not running.done()):
            return True
        self._pages = 0
        self._running = _workers().submit(self._checkpoint)
        return True

    def _checkpoint(self) -> None:
        with self._lock:
            if self._closed:
                return
            try:
                if self._conn is None:
                    self._conn = sqlite3.connect(
                        self._path, timeout=30.0, isolation_level=None, check_same_thread=False
                    )
                    self._conn.execute(f"PRAGMA synchronous={self._synchronous}")
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.Error:
                self.failed = True  # (the WAL only grows meanwhile: nothing is lost)
                self._close()

    def close(self) -> None:
        """Wait for a checkpoint running, and close the connection; closing twice is harmless."""
        with self._lock:
            self._close()

    def _close(self) -> None:
        self._closed = True
        if self._conn is not None:
            self._conn.close()
            self._conn = None
