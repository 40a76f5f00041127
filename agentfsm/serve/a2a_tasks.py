"""`SQLiteTaskStore`: the A2A tasks a server has answered, kept across its restarts.

The run behind a task is in the run store; the A2A SDK also keeps the task itself (its id,
context, history, artifacts and last status) and must find it again when the next message
of the task arrives, possibly at a server started since. This store keeps each task as its
protocol-buffer bytes in one SQLite table, written through on every save.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

from a2a.server.context import ServerCallContext
from a2a.server.owner_resolver import OwnerResolver, resolve_user_scope
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types import ListTasksRequest, ListTasksResponse, Task

__all__ = ["SQLiteTaskStore", "task_store_path"]

_SCHEMA = """CREATE TABLE IF NOT EXISTS a2a_tasks (
    owner TEXT NOT NULL,
    task_id TEXT NOT NULL,
    context_id TEXT NOT NULL,
    task BLOB NOT NULL,
    PRIMARY KEY (owner, task_id)
)"""


def task_store_path(run_store_path: str | os.PathLike[str]) -> Path:
    """Where the A2A tasks of a SQLite run store are kept: beside it, ``<name>.a2a.db``."""
    path = Path(run_store_path)
    return path.with_name(f"{path.stem}.a2a.db")


class SQLiteTaskStore(TaskStore):
    """An A2A `TaskStore` in one SQLite file (see the module).

    Args:
        path: The database file; created with its folder if missing.
        owner_resolver: Whose tasks a request may see (the SDK's default: the
            authenticated user's).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        owner_resolver: OwnerResolver = resolve_user_scope,
    ) -> None:
        self.path = Path(path)
        """The database file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._owner = owner_resolver
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(_SCHEMA)

    async def save(self, task: Task, context: ServerCallContext) -> None:
        """Save (or replace) ``task`` for the request's owner."""
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO a2a_tasks VALUES (?, ?, ?, ?)",
                (self._owner(context), task.id, task.context_id, task.SerializeToString()),
            )

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        """The task ``task_id`` of the request's owner, or None."""
        with self._lock:
            row = self._conn.execute(
                "SELECT task FROM a2a_tasks WHERE owner = ? AND task_id = ?",
                (self._owner(context), task_id),
            ).fetchone()
        return None if row is None else Task.FromString(row[0])

    async def list(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        """The owner's tasks, filtered and paged as the SDK's in-memory store does it."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT task FROM a2a_tasks WHERE owner = ?", (self._owner(context),)
            ).fetchall()
        page = InMemoryTaskStore(owner_resolver=self._owner)
        for (blob,) in rows:
            await page.save(Task.FromString(blob), context)
        return await page.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Forget the task ``task_id`` of the request's owner."""
        with self._lock:
            self._conn.execute(
                "DELETE FROM a2a_tasks WHERE owner = ? AND task_id = ?",
                (self._owner(context), task_id),
            )

    def close(self) -> None:
        """Close the database file."""
        with self._lock:
            self._conn.close()
