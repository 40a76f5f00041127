"""Write-behind: a run's saves started in a worker thread and not awaited (group commit).

Write-behind, on a store whose saves run in worker threads (`writes_behind`: SQLite,
PostgreSQL): where durability is not needed for correctness (a step boundary; a model call
or an idempotent tool body once `_behind` holds: all a crash could lose since the last
awaited save is replayable), `_write_behind` starts the save of the batch and the run goes
on; one save is in flight at a time, and the next takes everything produced meanwhile, with
the newest snapshot, in one transaction. Its events are delivered once it has committed.
`_commit` still waits for all to be stored and told: before a non-idempotent tool body, the
first effect of a call (its input), after a non-idempotent body, and the return to the
caller. A failed save surfaces at the next point, and nothing after it is stored or told.

`WriteBehind` is `RunRecord`'s base: the saves in flight, and how they are taken in.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

from agentfsm.agent.vocabulary import AgentEvent
from agentfsm.fsm import Emitter
from agentfsm.states.events import Event
from agentfsm.stores._lane import Hop
from agentfsm.stores.base import RunStore, start_saves
from agentfsm.stores.snapshot import Snapshot

Save = tuple[Snapshot, tuple[Event, ...], int | None]
"""One transaction: a snapshot, the events it appends, and the version it expects stored."""


class Pending:
    """The saves of a flight, taken by its worker when it begins; replaceable until then.

    A busy event loop holds the worker back (it waits for the GIL), so a flight often has
    not begun when the run reaches its next point: its saves are then replaced, in the same
    hop, rather than the flight cancelled and another started (a hop costs more than a
    save's snapshot).
    """

    __slots__ = ("_begun", "_lock", "_saves")

    def __init__(self, saves: tuple[Save, ...]) -> None:
        self._lock = threading.Lock()
        self._saves = saves
        self._begun = False

    @property
    def begun(self) -> bool:
        """Whether the worker has taken the saves (read without the lock).

        Once True, it stays True; while False, the flight cannot have ended, so the run need
        not ask its future (whose lock costs more than this).
        """
        return self._begun

    def take(self) -> tuple[Save, ...]:
        """The saves to make (the worker's, once): they can no longer be replaced."""
        with self._lock:
            self._begun = True
            return self._saves

    def replace(self, saves: tuple[Save, ...]) -> bool:
        """Make ``saves`` instead, if the worker has not taken them yet (else False)."""
        with self._lock:
            if self._begun:
                return False
            self._saves = saves
            return True


class InFlight(NamedTuple):
    """Saves started by `RunRecord._write_behind`, running in a worker thread."""

    future: Hop
    pending: Pending
    """Where its worker takes its saves from (replaceable until it begins)."""
    saves: tuple[Save, ...]
    """Its transactions, in order (started again, with more, if it is replaced unbegun)."""
    events: int
    """How many of the batch's first events it stores."""
    told: int
    """How many of the first undelivered items are told once it has committed."""


class Point(NamedTuple):
    """A model call's point, kept while a save was in flight: saved next, on its own."""

    save: Save
    told: int
    """How many of the first undelivered items are told once it has committed."""


class WriteBehind:
    """The saves a run has in flight on a store that writes behind; `RunRecord` holds it."""

    __slots__ = ("_claim_due", "_flight", "_queued", "_saved", "_store_failed", "_version")

    store: RunStore | None
    _emitter: Emitter
    _version: int
    _claim_due: bool
    _store_failed: bool
    _unsaved: list[Event]
    _undelivered: list[AgentEvent]
    _flight: InFlight | None
    _queued: Point | None
    _saved: Snapshot | None

    def _snapshot(self, seq: int, version: int) -> Snapshot:  # pragma: no cover - RunRecord's
        raise NotImplementedError

    def _deliver(self, item: AgentEvent) -> None:  # pragma: no cover - Delivery's
        raise NotImplementedError

    def _tell_first(self, told: int) -> None:
        """Deliver the first ``told`` undelivered items (stored), in order."""
        items = self._undelivered[:told]
        del self._undelivered[:told]
        for index, item in enumerate(items):
            try:
                self._deliver(item)
            except BaseException:
                self._undelivered[:0] = items[index + 1 :]
                raise

    def _launch(
        self, store: RunStore, before: tuple[Save, ...] = (), *, into: InFlight | None = None
    ) -> bool:
        """Start saving (after ``before``) the batch and a claim, in one worker's hop.

        With ``into``, a flight not begun yet: its saves are replaced by these, in its hop
        (False, and nothing changed, if it has begun meanwhile).
        """
        version = self._version + 1 + len(before)
        events = tuple(self._unsaved[sum(len(save[1]) for save in before) :])
        seq = events[-1].seq if events else self._emitter.seq
        saves = (*before, (self._snapshot(seq, version), events, version - 1 or None))
        if into is not None:
            if not into.pending.replace(saves):
                return False
            told = len(self._undelivered)
            self._flight = into._replace(saves=saves, events=len(self._unsaved), told=told)
        else:
            self._start(store, saves, len(self._undelivered))
        self._claim_due = False
        return True

    def _start(self, store: RunStore, saves: tuple[Save, ...], told: int) -> None:
        events = sum(len(save[1]) for save in saves)
        pending = Pending(saves)
        self._flight = InFlight(start_saves(store, pending.take), pending, saves, events, told)

    def _take_in(self, flight: InFlight, *, tell: bool) -> None:
        """The save in flight has ended: its events are stored (and told if ``tell``).

        Raises:
            BaseException: What the store raised (nothing after it is saved or told), or
                what a listener raised.
        """
        self._flight = None
        _, error = flight.future.result()
        if error is not None:
            self._store_failed = True
            self._queued = None
            try:
                raise error
            finally:
                del error  # (no reference cycle through this frame)
        self._saved = flight.saves[-1][0]
        self._version = self._saved.version
        del self._unsaved[: flight.events]
        if tell and flight.told:
            queued = self._queued
            if queued is not None:
                self._queued = queued._replace(told=queued.told - flight.told)
            self._tell_first(flight.told)

    def _write_behind(self, *, keep: bool = False) -> None:
        """Start saving what waits, not awaited; tell what a finished save stored.

        With a save still in flight, the next one takes all produced meanwhile, from the
        state it is started in; but a model call's point (``keep``) is kept as it is.

        Raises:
            BaseException: What a save that ended raised, or what a listener raised.
        """
        flight, store = self._flight, self.store
        if flight is not None:
            if (
                keep
                and not flight.pending.begun
                and store is not None
                and self._queued is None
                and self._launch(store, into=flight)
            ):
                # Not begun yet (a busy loop holds the worker back): one save of all up to
                # this model call replaces its saves (a claim included), in its hop.
                return
            if not (flight.pending.begun and flight.future.done()):
                if keep and len(self._unsaved) > flight.events:
                    events = tuple(self._unsaved[flight.events :])
                    version = flight.saves[-1][0].version
                    snapshot = self._snapshot(events[-1].seq, version + 1)
                    self._queued = Point((snapshot, events, version), len(self._undelivered))
                return
            self._take_in(flight, tell=True)
        if self._queued is not None and store is not None:
            self._start(store, (self._queued.save,), self._queued.told)
            self._queued = None
        elif store is not None and (self._unsaved or self._claim_due):
            self._launch(store)
        else:  # only trace entries wait, after stored events (or the store was taken away)
            self._claim_due = False
            self._tell_first(len(self._undelivered))
