"""The simulation's faults, and the one wrapper that brings the store's to any `RunStore`.

`FaultyStore` wraps the shared store (`MemoryStore`, `SQLiteStore`, `PostgresStore`, yours);
each simulated process reaches it through its own `ProcessStore`, which dies with the
process: after a crash, nothing the dead process still runs reaches the store. Every save
of a live process waits at a point of the scheduler, where the seed may strike: the save
fails before it commits, commits but its acknowledgement is lost, meets a conflict, the
process crashes before or after the commit, or the store is out for a few steps.

Over a store that keeps run leases, each process's handle is a `LeasingProcessStore`: it
keeps its Agents' holds itself (no background thread renews them: the simulation renews the
busy holds of the live processes when its clock moves, `LeasingProcessStore.renew`), and
makes each save through the process's hold, so a crashed process's lease stays in the store,
unrenewed, until it expires and another process takes the run over.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType

from agentfsm._compat import StrEnum
from agentfsm.errors import (
    ProcessCrashed,
    RunBusyError,
    SnapshotConflictError,
    StoreError,
    StoreWriteError,
)
from agentfsm.states.events import Event
from agentfsm.stores.base import LeasingStore, RunStore, RunSummary, leasing
from agentfsm.stores.leases import Hold, Lease, renew
from agentfsm.stores.snapshot import Snapshot

STORE_PATH = "(simulated store)"
"""The path `StoreWriteError`s of injected store faults name."""


class FaultKind(StrEnum):
    """A fault the seed may strike at a point."""

    CRASH = "crash"
    """The process dies there: its objects are dropped, its store handle refuses all."""
    CRASH_AFTER_COMMIT = "crash_after_commit"
    """At a save: the transaction commits, then the process dies before it hears so."""
    SAVE_FAILED = "save_failed"
    """At a save: the store fails before the commit (`StoreWriteError`, nothing written)."""
    ACK_LOST = "ack_lost"
    """At a save: the transaction commits, but the caller gets `StoreWriteError`."""
    CONFLICT = "conflict"
    """At a save: `SnapshotConflictError`, nothing written (another writer seemed first)."""
    TIMEOUT = "timeout"
    """At a model call or a tool body: it times out (`ModelCallError`, `TimeoutError`)."""
    OUTAGE = "outage"
    """The store refuses every call of every process for a few steps."""


SAVE_FAULTS = (
    FaultKind.SAVE_FAILED,
    FaultKind.ACK_LOST,
    FaultKind.CONFLICT,
    FaultKind.CRASH,
    FaultKind.CRASH_AFTER_COMMIT,
)
"""What may strike at a save."""
WORK_FAULTS = (FaultKind.TIMEOUT, FaultKind.CRASH)
"""What may strike at a model call or a tool body."""

Point = Callable[[str, str], Awaitable[FaultKind | None]]
"""A process's wait at a point: ``await point(label, run_id)`` gives the fault, or None."""


@dataclass(slots=True)
class FaultyStore:
    """The shared store under its faults, as every process of the simulation reaches it.

    Args:
        inner: The store that holds the runs: any `RunStore`.
        sync_fault: Draws the fault (or None) for a save made without an await (an Agent
            settling a step saves synchronously): the seed's choice, as at a point.
    """

    inner: RunStore
    """The real store; the checks read it directly, never through faults."""
    sync_fault: Callable[[], FaultKind | None] = field(default=lambda: None)
    """The fault (or None) for a synchronous save."""
    clock: Callable[[], float] | None = None
    """The simulation's clock: a save made without a hold is refused while the run's lease
    is live by it (the store itself would judge by ``time.time()``)."""
    outage: int = 0
    """Steps the store stays out (every call of every process refused)."""
    acknowledged: dict[str, tuple[int, tuple[Event, ...]]] = field(default_factory=dict)
    """Per run, the version a save acknowledged last and the events it acknowledged: no
    later state of the store may lose them."""

    def handle(self, process: str, point: Point, crash: Callable[[], None]) -> ProcessStore:
        """The store as the process ``process`` reaches it, until it crashes.

        Args:
            process: The process's name in the trace.
            point: Its wait at a point of the scheduler.
            crash: Kills the process (the simulation's: drops its objects, cancels its tasks).

        Returns:
            A `LeasingProcessStore` if the shared store keeps leases, else a `ProcessStore`.
        """
        if leasing(self.inner) is not None:
            return LeasingProcessStore(self, process, point, crash)
        return ProcessStore(self, process, point, crash)

    def acknowledge(self, snapshot: Snapshot, events: Sequence[Event]) -> None:
        """Note that a save of ``snapshot`` with ``events`` was acknowledged to its caller."""
        _, before = self.acknowledged.get(snapshot.run_id, (0, ()))
        self.acknowledged[snapshot.run_id] = (snapshot.version, before + tuple(events))


class ProcessStore:
    """One process's way to the shared store: a `RunStore` that dies with the process.

    Its ``asave`` waits at a point where the seed may strike a fault (`SAVE_FAULTS`); its
    ``save`` (the Agent's synchronous saves, when it settles a step) draws one at once.
    """

    def __init__(
        self, shared: FaultyStore, process: str, point: Point, crash: Callable[[], None]
    ) -> None:
        self.shared = shared
        """The store every process shares."""
        self.process = process
        """The process's name."""
        self.alive = True
        """False once the process crashed: every call raises `ProcessCrashed`."""
        self._point = point
        self._crash = crash

    def _reachable(self, run_id: str) -> None:
        if not self.alive:
            raise ProcessCrashed(f"process {self.process} crashed (run {run_id!r})")
        if self.shared.outage > 0:
            raise StoreWriteError(run_id, STORE_PATH, "the store is out (simulated outage)")

    def _strike(
        self,
        fault: FaultKind | None,
        snapshot: Snapshot,
        events: Sequence[Event],
        expected_version: int | None,
    ) -> None:
        run_id = snapshot.run_id
        self._reachable(run_id)
        inner = self.shared.inner
        if fault is FaultKind.SAVE_FAILED:
            raise StoreWriteError(run_id, STORE_PATH, "the save failed before its commit")
        if fault is FaultKind.CONFLICT:
            stored = inner.load(run_id)
            raise SnapshotConflictError(
                run_id, expected_version, None if stored is None else stored.version
            )
        if fault is FaultKind.CRASH:
            self._die(run_id)
        self._commit(snapshot, events, expected_version)
        if fault is FaultKind.CRASH_AFTER_COMMIT:
            self._die(run_id)
        if fault is FaultKind.ACK_LOST:
            raise StoreWriteError(run_id, STORE_PATH, "the save's acknowledgement was lost")
        self.shared.acknowledge(snapshot, events)

    def _commit(
        self, snapshot: Snapshot, events: Sequence[Event], expected_version: int | None
    ) -> None:
        self.shared.inner.save(snapshot, events, expected_version=expected_version)

    def _die(self, run_id: str) -> None:
        self._crash()
        raise ProcessCrashed(f"process {self.process} crashed saving run {run_id!r}")

    async def asave(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        """Wait at a ``save`` point, then save, or strike the fault the seed chose there."""
        self._reachable(snapshot.run_id)
        fault = await self._point("save", snapshot.run_id)
        self._strike(fault, snapshot, events, expected_version)

    def save(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        """Save now (no await), or strike the fault the seed draws for it."""
        self._reachable(snapshot.run_id)
        self._strike(self.shared.sync_fault(), snapshot, events, expected_version)

    def load(self, run_id: str) -> Snapshot | None:
        """The shared store's ``load``, unless the process crashed or the store is out."""
        self._reachable(run_id)
        return self.shared.inner.load(run_id)

    def events(self, run_id: str, after_seq: int = 0) -> list[Event]:
        """The shared store's ``events``, unless the process crashed or the store is out."""
        self._reachable(run_id)
        return self.shared.inner.events(run_id, after_seq)

    def list_runs(self) -> list[RunSummary]:
        """The shared store's ``list_runs``, unless the process crashed or the store is out."""
        self._reachable("")
        return self.shared.inner.list_runs()

    def delete(self, run_id: str) -> None:
        """The shared store's ``delete``, unless the process crashed or the store is out."""
        self._reachable(run_id)
        self.shared.inner.delete(run_id)

    def close(self) -> None:
        """Nothing: the shared store outlives the process."""

    def __enter__(self) -> ProcessStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class LeasingProcessStore(ProcessStore):
    """A process's handle on a shared store that keeps run leases (a `LeasingStore`).

    It keeps the holds its Agents register (``hold``), and makes each of its saves through
    the run's hold there: the save registers it with the shared store for its one
    synchronous transaction only, so no other process's save goes through it and the
    store's renewing thread never sees it. Renewals happen when the simulation calls
    `renew` (as its clock moves), never in real time: the seed decides them. A crashed
    process's handle refuses everything, renewals too, so its leases expire. A save without
    a hold is refused while the run's lease is live by the simulation's clock
    (`FaultyStore.clock`), as the store refuses it by ``time.time()``.
    """

    def __init__(
        self, shared: FaultyStore, process: str, point: Point, crash: Callable[[], None]
    ) -> None:
        super().__init__(shared, process, point, crash)
        self.holds: dict[str, Hold] = {}
        """The holds of this process's Agents, by run."""

    @property
    def _leasing(self) -> LeasingStore:
        store = leasing(self.shared.inner)
        assert store is not None  # (made only over a store that keeps leases)
        return store

    def hold(self, run_id: str, hold: Hold) -> None:
        """Register ``hold`` in this process (refused if the process crashed; no I/O).

        Raises:
            ProcessCrashed: The process crashed.
            RunBusyError: Another Agent of this process holds the run (its hold is live).
        """
        if not self.alive:
            raise ProcessCrashed(f"process {self.process} crashed (run {run_id!r})")
        other = self.holds.get(run_id)
        live = other is not None and other.expires_at > other.clock()
        if other is not None and live and other is not hold and other.owner != hold.owner:
            raise RunBusyError(run_id, other.owner, other.expires_at)
        hold.expires_at = hold.until()
        hold.busy = False
        hold.lost = None
        self.holds[run_id] = hold

    def unhold(self, run_id: str, hold: Hold) -> None:
        """Unregister ``hold`` (nothing if it is not the run's hold here)."""
        if self.holds.get(run_id) is hold:
            del self.holds[run_id]

    def lease(self, run_id: str) -> Lease | None:
        """The shared store's ``lease``, unless the process crashed or the store is out."""
        self._reachable(run_id)
        return self._leasing.lease(run_id)

    def renew_lease(self, run_id: str, owner: str, expires_at: float) -> Lease | None:
        """The shared store's ``renew_lease``, unless the process crashed or the store is out."""
        self._reachable(run_id)
        return self._leasing.renew_lease(run_id, owner, expires_at)

    def renew(self) -> None:
        """Renew the leases of this process's busy holds, as a renewing thread would.

        A renewal the store refuses (an outage; a crashed process) is skipped, as the
        renewing thread skips it: the lease may then expire.
        """
        for run_id, hold in sorted(self.holds.items()):
            with contextlib.suppress(StoreError, ProcessCrashed):
                renew(self, run_id, hold)

    def _commit(
        self, snapshot: Snapshot, events: Sequence[Event], expected_version: int | None
    ) -> None:
        run_id = snapshot.run_id
        hold = self.holds.get(run_id)
        store = self._leasing
        if hold is None:
            lease = store.lease(run_id)
            clock = self.shared.clock
            if lease is not None and clock is not None and lease.live(clock()):
                raise RunBusyError(run_id, lease.owner, lease.expires_at)
            super()._commit(snapshot, events, expected_version)
            return
        kept = (hold.expires_at, hold.busy, hold.lost)
        store.hold(run_id, hold)  # (for this one transaction: see the class docstring)
        hold.expires_at, hold.busy, hold.lost = kept
        try:
            store.save(snapshot, events, expected_version=expected_version)
        finally:
            store.unhold(run_id, hold)
