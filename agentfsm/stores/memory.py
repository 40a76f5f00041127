"""`MemoryStore`: a `RunStore` in a dict, for tests and runs that need no durability."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from agentfsm.errors import SnapshotConflictError
from agentfsm.states.events import Event
from agentfsm.stores.base import (
    ClosesOnExit,
    RunSummary,
    check_save,
    run_arguments,
    save_arguments,
)
from agentfsm.stores.leases import Holds, HoldsHere, Lease, lease_after_save
from agentfsm.stores.snapshot import Snapshot
from agentfsm.stores.watch import PollingWatch

_NO_LEASE: tuple[None, None] = (None, None)


class MemoryStore(HoldsHere, PollingWatch, ClosesOnExit):
    """Keeps runs in memory, with the same guarantees as any `RunStore` but durability.

    Snapshots and events are frozen models and are stored as given, not copied. A lock
    makes each save atomic across threads. It keeps each busy run's lease too
    (`LeasingStore`), for the Agents of one process that share it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshots: dict[str, Snapshot] = {}
        self._events: dict[str, list[Event]] = {}
        self._leases: dict[str, tuple[str, float]] = {}  # (owner, expires_at) by run
        self._holds = Holds()

    def save(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        """Append ``events`` and store ``snapshot`` atomically (see `RunStore.save`)."""
        save_arguments(snapshot, events, expected_version)
        run_id = snapshot.run_id
        with self._lock:
            hold = self._holds.get(run_id)
            owner, until = self._leases.get(run_id, _NO_LEASE)
            owner, until = lease_after_save(run_id, owner, until, hold, snapshot.state == "busy")
            stored = self._snapshots.get(run_id)
            actual = None if stored is None else stored.version
            if actual != expected_version:
                raise SnapshotConflictError(run_id, expected_version, actual)
            log = self._events.get(run_id, [])
            check_save(snapshot, events, expected_version, log[-1].seq if log else 0)
            self._events[run_id] = log
            log.extend(events)
            self._snapshots[run_id] = snapshot
            if owner is None or until is None:
                self._leases.pop(run_id, None)
            else:
                self._leases[run_id] = (owner, until)
        if hold is not None:
            hold.saved(owner, until)

    def load(self, run_id: str) -> Snapshot | None:
        """The run's latest snapshot, or None."""
        run_arguments(run_id)
        with self._lock:
            return self._snapshots.get(run_id)

    def events(self, run_id: str, after_seq: int = 0) -> list[Event]:
        """The run's events after ``after_seq``, in order."""
        run_arguments(run_id, after_seq)
        with self._lock:
            # seq n is at index n - 1, since the log is contiguous from 1.
            return self._events.get(run_id, [])[max(after_seq, 0) :]

    def list_runs(self) -> list[RunSummary]:
        """Every stored run, ordered by run id."""
        with self._lock:
            snapshots = sorted(self._snapshots.values(), key=lambda s: s.run_id)
        return [RunSummary(s.run_id, s.state, s.turn, s.seq, s.version) for s in snapshots]

    def delete(self, run_id: str) -> None:
        """Forget the run; no error if it is not stored."""
        run_arguments(run_id)
        with self._lock:
            self._snapshots.pop(run_id, None)
            self._events.pop(run_id, None)
            self._leases.pop(run_id, None)

    def lease(self, run_id: str) -> Lease | None:
        """The run's lease, live or expired (see `LeasingStore.lease`)."""
        run_arguments(run_id)
        with self._lock:
            lease = self._leases.get(run_id)
        return None if lease is None else Lease(run_id, *lease)

    def renew_lease(self, run_id: str, owner: str, expires_at: float) -> Lease | None:
        """Extend ``owner``'s lease on the run (see `LeasingStore.renew_lease`)."""
        with self._lock:
            lease = self._leases.get(run_id)
            if lease is None:
                return None
            if lease[0] == owner:
                lease = self._leases[run_id] = (owner, expires_at)
        return Lease(run_id, *lease)

    def close(self) -> None:
        """Nothing to release: the runs stay in memory until the store is dropped."""
