"""`SQLiteStore`'s leases: read, held, renewed (the save takes and clears them itself).

A busy run's lease is two columns of its row in ``runs`` (file format 4): ``lease_owner``
and ``lease_expires``. `SQLiteStore.save` writes them in its own ``UPDATE`` (see
`agentfsm.stores.leases`); this mixin reads them, registers holds and renews a lease between
saves, in a transaction of its own.
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import AbstractContextManager
from typing import Any

from agentfsm.errors import StoreError
from agentfsm.stores._sqlite_layout import LEASED_FORMAT
from agentfsm.stores.base import run_arguments
from agentfsm.stores.leases import Holds, HoldsHere, Lease, lease_of


def lease_sql(file_format: int) -> str | None:
    """A run's lease: parameter ``(run_id,)``; None for a format that keeps none."""
    if file_format < LEASED_FORMAT:
        return None
    return "SELECT lease_owner, lease_expires FROM runs WHERE run_id = ?"


class SQLiteLeases(HoldsHere):
    """`LeasingStore`'s methods for `SQLiteStore` (its lock, connection and reads)."""

    __slots__ = ()

    _holds: Holds
    _lock: threading.RLock
    _reads: tuple[str, str, str | None]

    def _query(self, sql: str, *parameters: str | int) -> list[Any]:  # pragma: no cover
        raise NotImplementedError  # (SQLiteStore's)

    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]:  # pragma: no cover
        raise NotImplementedError  # (SQLiteStore's)

    def _check_writable(self, run_id: str) -> None:  # pragma: no cover
        raise NotImplementedError  # (SQLiteStore's)

    def _failure(
        self, exc: sqlite3.Error, run_id: str | None, writing: bool
    ) -> StoreError:  # pragma: no cover
        raise NotImplementedError  # (SQLiteStore's)

    def lease(self, run_id: str) -> Lease | None:
        """The run's lease, live or expired (see `LeasingStore.lease`)."""
        run_arguments(run_id)
        sql = self._reads[2]
        rows = [] if sql is None else self._query(sql, run_id)
        return lease_of(run_id, rows)

    def renew_lease(self, run_id: str, owner: str, expires_at: float) -> Lease | None:
        """Extend ``owner``'s lease on the run, in a transaction of its own.

        See `LeasingStore.renew_lease`.

        Raises:
            StoreWriteError: The store failed to write.
        """
        self._check_writable(run_id)
        with self._lock:
            try:
                with self._transaction() as conn:
                    conn.execute(
                        "UPDATE runs SET lease_expires = ? WHERE run_id = ? AND lease_owner = ?",
                        (expires_at, run_id, owner),
                    )
                    rows = conn.execute(
                        "SELECT lease_owner, lease_expires FROM runs WHERE run_id = ?", (run_id,)
                    ).fetchall()
            except sqlite3.Error as exc:
                raise self._failure(exc, run_id, writing=True) from exc
        return lease_of(run_id, rows)
