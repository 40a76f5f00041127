"""`RunStore`: where runs persist, as snapshots plus an append-only event log.

`RunStore` is synchronous. A store whose writes wait on a disk or a server (SQLite, which
fsyncs; PostgreSQL) is also an `AsyncRunStore`: ``asave`` and ``aload`` run the same code in
a worker thread, so an async `Agent` awaits its saves without blocking the event loop.
`MemoryStore` answers in microseconds and is called directly.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol, TypeVar, runtime_checkable

from agentfsm import _checks
from agentfsm.errors import InvalidSaveError
from agentfsm.states.events import Event
from agentfsm.stores._lane import Hop, Lane
from agentfsm.stores.leases import Hold, Lease
from agentfsm.stores.snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One stored run, as `RunStore.list_runs` lists it."""

    run_id: str
    """The run's identifier."""
    state: str
    """RunLifecycle's state in its latest snapshot."""
    turn: int
    """Its turn count."""
    seq: int
    """The ``seq`` of its last stored event."""
    version: int
    """The version of its latest snapshot."""


@runtime_checkable
class RunStore(Protocol):
    """Stores runs: the latest snapshot of each and its append-only event log.

    Guarantees every implementation keeps (the conformance suite in
    ``agentfsm.testing.store_conformance`` checks them):

    - ``save`` is atomic: the events and the snapshot are both stored, or neither.
    - Optimistic concurrency: ``save`` stores only if the stored version is
      ``expected_version``; otherwise it raises `SnapshotConflictError` and writes nothing.
    - The event log is append-only and contiguous: ``seq`` 1, 2, 3, … with no gap.

    All methods are synchronous; a store is a context manager that closes itself.
    """

    def save(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        """Append ``events`` to the run's log and store ``snapshot``, in one transaction.

        Args:
            snapshot: The run's new snapshot; its ``version`` is ``expected_version + 1``
                (1 for a new run) and its ``seq`` that of the last event (of ``events``,
                or already stored).
            events: The events since the stored snapshot, in order; the first one's
                ``seq`` is the stored ``seq + 1``. May be empty.
            expected_version: The version the caller loaded, or None for a new run.

        Raises:
            SnapshotConflictError: The stored version is not ``expected_version``.
            InvalidSaveError: The snapshot and events do not continue the stored run.
            StoreWriteError: The store failed to write (nothing was written).
        """
        ...

    def load(self, run_id: str) -> Snapshot | None:
        """The run's latest snapshot, or None if no such run is stored."""
        ...

    def events(self, run_id: str, after_seq: int = 0) -> list[Event]:
        """The run's events whose ``seq`` is above ``after_seq``, in order (empty if none)."""
        ...

    def list_runs(self) -> list[RunSummary]:
        """Every stored run, ordered by run id."""
        ...

    def delete(self, run_id: str) -> None:
        """Remove the run, its snapshot and its events; no error if it is not stored."""
        ...

    def close(self) -> None:
        """Release the store's resources; closing twice is harmless."""
        ...

    def __enter__(self) -> RunStore: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


@runtime_checkable
class AsyncRunStore(RunStore, Protocol):
    """A `RunStore` whose saves and loads can also be awaited without blocking the loop.

    ``asave`` and ``aload`` keep every guarantee of ``save`` and ``load``. Cancelled while the
    write runs, ``asave`` still waits for it to finish before it raises `CancelledError`, so
    whoever reads the store next sees the write's outcome (stored or not), never a write
    still in flight.
    """

    async def asave(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        """``save``, awaited: the same transaction, off the event loop."""
        ...

    async def aload(self, run_id: str) -> Snapshot | None:
        """``load``, awaited, off the event loop."""
        ...


@runtime_checkable
class LeasingStore(RunStore, Protocol):
    """A `RunStore` that keeps each busy run's lease: who drives it, and until when.

    Guarantees (the conformance suite checks them; see `agentfsm.stores.leases`):

    - A save of a busy snapshot through a registered `Hold` takes or renews the lease for
      the hold's owner, in the save's transaction; a save of a snapshot at rest clears it.
    - A save is refused with `RunBusyError`, writing nothing, while another owner's lease
      is live (a save without a hold: while anyone's is).
    - ``renew_lease`` extends only the owner's own lease, and creates none.
    - ``delete`` removes the run's lease with the run.
    """

    def lease(self, run_id: str) -> Lease | None:
        """The run's stored lease, live or expired (None: no lease, or no such run)."""
        ...

    def hold(self, run_id: str, hold: Hold) -> None:
        """From now on, make this store's saves of ``run_id`` through ``hold`` (no I/O).

        Raises:
            RunBusyError: Another owner's hold on the run, through this store object, is
                live (another Agent of this process drives it).
        """
        ...

    def unhold(self, run_id: str, hold: Hold) -> None:
        """Stop making saves of ``run_id`` through ``hold`` (nothing if it is not its hold)."""
        ...

    def renew_lease(self, run_id: str, owner: str, expires_at: float) -> Lease | None:
        """Set the expiry of ``owner``'s lease on the run to ``expires_at``, if it holds it.

        Returns:
            The stored lease afterwards: ``owner``'s renewed one, another owner's (nothing
            was changed: the run was taken over), or None (no lease: nothing was changed).
        """
        ...


def leasing(store: RunStore | None) -> LeasingStore | None:
    """``store`` if it keeps leases (also behind `DelegatingStore` wrappers), else None."""
    inner: object = store
    while isinstance(inner, DelegatingStore):
        inner = inner.inner
    if inner is None or getattr(inner, "renew_lease", None) is None:
        return None
    return store  # type: ignore[return-value]  # (its innermost store keeps leases)


T = TypeVar("T")


_WORKERS: list[ThreadPoolExecutor] = []
"""The worker threads stores block in (created on first use, shared by every store)."""


def _workers() -> ThreadPoolExecutor:
    if not _WORKERS:
        _WORKERS.append(ThreadPoolExecutor(thread_name_prefix="agentfsm-store"))
    return _WORKERS[0]


if hasattr(os, "register_at_fork"):  # (POSIX)
    # A forked child has none of its parent's threads: it starts workers of its own.
    os.register_at_fork(after_in_child=_WORKERS.clear)


def _outcome(function: Callable[[], T]) -> tuple[T, None] | tuple[None, BaseException]:
    """``function()``'s result, or what it raised, as a value (see `off_loop`)."""
    try:
        return function(), None
    except BaseException as error:  # re-raised by off_loop, on the event loop's thread
        return None, error


async def off_loop(function: Callable[[], T]) -> T:
    """Run ``function`` in a worker thread; if cancelled meanwhile, wait for it, then raise.

    One hop to the thread and one back, nothing more (no task, no shield, no context copy):
    a durable run awaits one per save. What ``function`` raises comes back as a value and is
    raised here, so its traceback holds no worker's frame, and through it no future and no
    event loop (a reference cycle that would keep a loop alive until a garbage collection).

    Args:
        function: A blocking call (a store's write or read).

    Returns:
        What ``function`` returned.
    """
    working = _workers().submit(_outcome, function)
    try:
        result, error = await asyncio.wrap_future(working)
    except asyncio.CancelledError:
        if not working.cancelled():  # (a call cancelled before it began never runs)
            # The thread cannot be stopped: let it finish, so the store holds a known outcome.
            await asyncio.wait({asyncio.wrap_future(working)})
        raise
    finally:
        del working
    if error is not None:
        try:
            raise error
        finally:
            del error  # (no cycle through this frame either)
    return result  # type: ignore[return-value]  # (None only with an error)


def save_arguments(snapshot: object, events: object, expected_version: object) -> None:
    """Refuse a save whose arguments are of the wrong kind, before anything is read or written.

    Values of the right kind are the store's to judge: a version that is not the stored one
    (0 included) is a `SnapshotConflictError`, as the conformance suite says.

    Raises:
        TypeError: ``snapshot`` is not a `Snapshot`, ``events`` not a list or tuple of
            `Event`, or ``expected_version`` neither an int nor None.
    """
    if not isinstance(snapshot, Snapshot):
        _checks.refuse_type("snapshot", snapshot, "a Snapshot (Agent.snapshot())")
    if not isinstance(events, (list, tuple)):
        _checks.refuse_type("events", events, "a list of the Events to append")
    for index, event in enumerate(events):
        if not isinstance(event, Event):
            _checks.refuse_type(f"events[{index}]", event, "an Event")
    if expected_version is not None and not _checks.is_whole(expected_version):
        _checks.refuse_type("expected_version", expected_version, "an int or None")


def run_arguments(run_id: object, after_seq: object = 0) -> None:
    """Refuse a run id that is not a str, or an ``after_seq`` that is not an int.

    (A negative ``after_seq`` reads the whole log, as 0 does: the conformance suite says so.)

    Raises:
        TypeError: Either of the wrong kind.
    """
    if type(run_id) is not str:
        _checks.text("run_id", run_id, empty=True)
    if not _checks.is_whole(after_seq):
        _checks.refuse_type("after_seq", after_seq, "an int (the seq the events come after)")


def check_save(
    snapshot: Snapshot,
    events: Sequence[Event],
    expected_version: int | None,
    stored_seq: int,
) -> None:
    """Refuse a save that does not continue the stored run (shared by every store).

    Args:
        snapshot: The snapshot to store.
        events: The events to append.
        expected_version: The version the stored run has (checked by the caller).
        stored_seq: The ``seq`` of the run's last stored event (0 if none).

    Raises:
        InvalidSaveError: Naming the first thing that does not fit.
    """
    run_id = snapshot.run_id
    version = 1 if expected_version is None else expected_version + 1
    if snapshot.version != version:
        raise InvalidSaveError(
            run_id, f"the snapshot has version {snapshot.version}, expected {version}"
        )
    seq = stored_seq
    for event in events:
        if event.run_id != run_id:
            raise InvalidSaveError(run_id, f"event {event.seq} belongs to run {event.run_id!r}")
        if event.seq != seq + 1:
            raise InvalidSaveError(
                run_id, f"event seq {event.seq} does not follow seq {seq}, expected {seq + 1}"
            )
        seq = event.seq
    if snapshot.seq != seq:
        raise InvalidSaveError(
            run_id, f"the snapshot has seq {snapshot.seq}, but its last event has seq {seq}"
        )


_Closing = TypeVar("_Closing", bound="ClosesOnExit")


class ClosesOnExit:
    """``with store:`` gives the store and closes it on the way out (any store's mixin)."""

    __slots__ = ()

    def close(self) -> None:
        """Release what the store holds (overridden by each store)."""

    def __enter__(self: _Closing) -> _Closing:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class ThreadedAsync:
    """``asave`` and ``aload`` for a store whose I/O blocks.

    Its own ``save`` and ``load``, each run in a worker thread by `off_loop`.
    """

    __slots__ = ()

    def save(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        """The store's own blocking save."""
        raise NotImplementedError

    def load(self, run_id: str) -> Snapshot | None:
        """The store's own blocking load."""
        raise NotImplementedError

    async def asave(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        """`save` in a worker thread, awaited (see `AsyncRunStore.asave`)."""
        await off_loop(lambda: self.save(snapshot, events, expected_version=expected_version))

    async def aload(self, run_id: str) -> Snapshot | None:
        """`load` in a worker thread, awaited (see `AsyncRunStore.aload`)."""
        return await off_loop(lambda: self.load(run_id))


class DelegatingStore(ClosesOnExit):
    """A `RunStore` that hands every call to ``inner``.

    Subclass it to intercept one call (the testing kit's fault injection, the crash tests'
    dying store).
    """

    def __init__(self, inner: RunStore) -> None:
        self.inner = inner
        """The store every call goes to."""

    def save(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        """``inner.save``."""
        self.inner.save(snapshot, events, expected_version=expected_version)

    def load(self, run_id: str) -> Snapshot | None:
        """``inner.load``."""
        return self.inner.load(run_id)

    def events(self, run_id: str, after_seq: int = 0) -> list[Event]:
        """``inner.events``."""
        return self.inner.events(run_id, after_seq)

    def list_runs(self) -> list[RunSummary]:
        """``inner.list_runs``."""
        return self.inner.list_runs()

    def delete(self, run_id: str) -> None:
        """``inner.delete``."""
        self.inner.delete(run_id)

    def close(self) -> None:
        """``inner.close``."""
        self.inner.close()

    def lease(self, run_id: str) -> Lease | None:
        """``inner.lease`` (a store that keeps leases: see `LeasingStore`)."""
        return self.inner.lease(run_id)  # type: ignore[attr-defined, no-any-return]

    def hold(self, run_id: str, hold: Hold) -> None:
        """``inner.hold``."""
        self.inner.hold(run_id, hold)  # type: ignore[attr-defined]

    def unhold(self, run_id: str, hold: Hold) -> None:
        """``inner.unhold``."""
        self.inner.unhold(run_id, hold)  # type: ignore[attr-defined]

    def renew_lease(self, run_id: str, owner: str, expires_at: float) -> Lease | None:
        """``inner.renew_lease``."""
        return self.inner.renew_lease(run_id, owner, expires_at)  # type: ignore[attr-defined, no-any-return]


def writes_behind(store: RunStore) -> bool:
    """Whether ``store``'s saves may run in a worker thread while the run goes on.

    True for a store whose blocking ``save`` already runs in worker threads
    (`ThreadedAsync`: SQLite, PostgreSQL), also behind `DelegatingStore` wrappers; a
    `MemoryStore` (or any other store) is saved from the event loop, as before.
    """
    while isinstance(store, DelegatingStore):
        store = store.inner
    return isinstance(store, ThreadedAsync)


def start_saves(
    store: RunStore,
    saves: Sequence[tuple[Snapshot, Sequence[Event], int | None]]
    | Callable[[], Sequence[tuple[Snapshot, Sequence[Event], int | None]]],
) -> Hop:
    """Start ``store.save`` of each ``(snapshot, events, expected_version)`` in a worker thread.

    The saves begin at once (not when the event loop next runs), so a run that goes on
    computing overlaps them; each is its own transaction, in order, and the first that
    raises ends them. What it raises is the hop's outcome, not raised (see `off_loop`). A
    store with a ``save_many`` (`SQLiteStore.save_many`) is given them all at once: on
    ``synchronous="FULL"`` one fsync makes them durable together; a store with a ``lane``
    of its own (`SQLiteStore`, whose saves are serialised anyway) makes them in its thread,
    a cheaper hop than the shared workers'.
    ``saves`` may be a callable: the worker calls it when it begins, and saves what it gives
    (so saves not begun yet can be replaced without starting another hop).
    """

    def save_all() -> None:
        group = saves() if callable(saves) else saves
        many = getattr(store, "save_many", None)  # (SQLite's: one fsync for them all)
        if many is not None:
            many(group)
            return
        for snapshot, events, expected_version in group:
            store.save(snapshot, events, expected_version=expected_version)

    hop = Hop()
    lane = getattr(store, "lane", None)
    if isinstance(lane, Lane):
        return lane.submit(hop, save_all)
    _workers().submit(hop.run, save_all)
    return hop
