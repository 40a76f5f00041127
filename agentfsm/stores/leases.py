"""Run leases: who drives a busy run, and until when.

A run is *busy* while a process drives one of its turns. That process holds the run's
*lease*: an owner id and an expiry, stored beside the run's snapshot and renewed while it
works. Another process that finds a busy run whose lease is live is refused with
`RunBusyError` (or waits, if asked); only an expired lease (its driver died or stalled) is
taken over, and the taking over is recorded in the run's log.

The lease follows the stored state, in the transaction of each save:

- A save of a **busy** snapshot through a `Hold` takes or renews the lease for the hold's
  owner (expiring ``duration`` seconds after the hold's clock reads now).
- A save of a snapshot **at rest** (any other state) clears the lease: a run at rest needs
  none.
- A save is refused with `RunBusyError`, writing nothing, while **another** owner's lease is
  live (a save without a hold: while anyone's is).

So a run is busy in the store only with the lease of the process that made it busy. Between
saves (a long model call, a long tool body), a background thread renews the leases of the
holds whose run is busy (every ``renew_every`` seconds of real time). Expiry is judged by the
hold's clock (an Agent's ``clock``: fake clocks in tests); a save without a hold judges by
``time.time()``. Processes sharing a store should have clocks that agree to well within a
lease's duration.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol, cast

from agentfsm import _checks
from agentfsm.errors import RunBusyError

__all__ = ["Hold", "Lease", "LeasePolicy", "lease_after_save", "settle"]

_log = logging.getLogger("agentfsm.stores")


@dataclass(frozen=True, slots=True)
class Lease:
    """A run's lease as a store holds it: who drives the run, and until when."""

    run_id: str
    """The run."""
    owner: str
    """The driver's owner id (`LeasePolicy.owner`)."""
    expires_at: float
    """When the lease expires unless renewed, in seconds since the epoch."""

    def live(self, now: float) -> bool:
        """Whether the lease still holds at ``now`` (it expires at ``expires_at``)."""
        return self.expires_at > now


_PROCESS: list[tuple[int, str]] = []
"""This process's pid and its part of owner ids (``host:pid:random``), made once per pid."""
_OWNERS = itertools.count(1)


def default_owner() -> str:
    """A new owner id, ``host:pid:random:n``: unique per Agent, and readable in the log.

    The random part tells two processes apart that had the same pid (a restarted worker).
    """
    pid = os.getpid()
    if not _PROCESS or _PROCESS[0][0] != pid:  # (first use, or a forked child)
        _PROCESS[:] = [(pid, f"{socket.gethostname()}:{pid}:{uuid.uuid4().hex[:6]}")]
    return f"{_PROCESS[0][1]}:{next(_OWNERS)}"


Sleep = Callable[[float], Awaitable[None]]
"""How a wait for a lease sleeps: ``await sleep(seconds)`` (a fake one in tests)."""


@dataclass(frozen=True, slots=True)
class LeasePolicy:
    """How an Agent holds the lease of its run on a store that keeps leases.

    Args:
        duration: Seconds a lease lasts unless renewed (15 by default): how long another
            process waits before it may take over the run of a driver that died.
        renew_every: Seconds of real time between two renewals while a turn works and
            saves nothing (a long model call or tool body); ``duration / 3`` by default.
            Every save of the busy run renews it too, in its own transaction.
        wait: Seconds `Agent.start` waits for another process's live lease on a restored
            busy run to be released or to expire before it raises `RunBusyError` (0: at
            once, the default).
        owner: The owner id the Agent holds leases under (``host:pid:random:n`` by default,
            new for each Agent).
        sleep: How the wait sleeps (``asyncio.sleep``; a fake one in tests).

    Raises:
        TypeError: An argument of the wrong kind.
        ValueError: A duration that is not a finite number > 0, ``renew_every`` not below
            ``duration``, or a negative ``wait``.
    """

    duration: float = 15.0
    renew_every: float | None = None
    wait: float = 0.0
    owner: str | None = None
    sleep: Sleep = field(default=asyncio.sleep, repr=False, compare=False)

    def __post_init__(self) -> None:
        _checks.seconds("duration", self.duration)
        _checks.seconds("renew_every", self.renew_every, optional=True)
        _checks.seconds("wait", self.wait, zero=True)
        _checks.text("owner", self.owner, optional=True)
        _checks.callable_or_none("sleep", self.sleep)
        if self.renew_every is not None and self.renew_every >= self.duration:
            raise ValueError(
                f"renew_every must be below duration ({self.duration!r} s), not "
                f"{self.renew_every!r}: a lease renewed less often expires while its run works"
            )

    @property
    def interval(self) -> float:
        """The seconds between two renewals (``renew_every``, or a third of ``duration``)."""
        return self.duration / 3 if self.renew_every is None else self.renew_every

    def hold(self, clock: Callable[[], float]) -> Hold:
        """A new `Hold` for an Agent whose clock is ``clock``."""
        return Hold(self.owner or default_owner(), self.duration, self.interval, clock)


class Hold:
    """An Agent's claim to drive a run through one store object, while one of its steps runs.

    Registered with `hold` on the store; each save of the run through that store then takes,
    renews or clears the run's lease for ``owner`` in its transaction (see the module
    docstring). Its fields mirror the lease as this process last wrote it.
    """

    __slots__ = ("busy", "clock", "due", "duration", "expires_at", "lost", "owner", "renew_every")

    def __init__(
        self, owner: str, duration: float, renew_every: float, clock: Callable[[], float]
    ) -> None:
        self.owner = owner
        """Who holds the lease."""
        self.duration = duration
        """Seconds a lease lasts from its last renewal."""
        self.renew_every = renew_every
        """Seconds of real time between two renewals by the background thread."""
        self.clock = clock
        """The clock expiry is judged by (seconds since the epoch)."""
        self.expires_at = 0.0
        """When the lease this hold last wrote (or, before any, the hold itself) expires."""
        self.busy = False
        """Whether the store holds the run busy under this hold's lease (renewals then due)."""
        self.due = 0.0
        """When (``time.monotonic``) the background thread renews it next."""
        self.lost: Lease | None = None
        """Another owner's lease, found by a renewal: the run was taken over."""

    def until(self) -> float:
        """The expiry of a lease taken or renewed now."""
        return self.clock() + self.duration

    def saved(self, owner: str | None, expires_at: float | None) -> None:
        """A save through this hold stored the lease ``(owner, expires_at)`` (None: none).

        (The renewing thread renews a busy hold every ``renew_every`` seconds whether or not
        saves renewed it meanwhile: a save costs no clock read for it.)
        """
        self.busy = owner == self.owner
        if self.busy and expires_at is not None:
            self.expires_at = expires_at


def lease_after_save(
    run_id: str,
    stored_owner: str | None,
    stored_expires: float | None,
    hold: Hold | None,
    busy: bool,
) -> tuple[str | None, float | None]:
    """The lease a save leaves stored, given the stored one (shared by every store).

    Args:
        run_id: The run saved.
        stored_owner: The owner of the stored lease (None: no lease).
        stored_expires: When the stored lease expires.
        hold: The hold the save is made through, or None.
        busy: Whether the saved snapshot is busy.

    Returns:
        The owner and expiry to store (both None: no lease).

    Raises:
        RunBusyError: Another owner's lease is live (for a save without a hold: anyone's).
    """
    now = time.time() if hold is None else hold.clock()
    if (
        stored_owner is not None
        and stored_expires is not None
        and stored_expires > now
        and (hold is None or stored_owner != hold.owner)
    ):
        raise RunBusyError(run_id, stored_owner, stored_expires)
    if not busy:
        return None, None
    if hold is None:
        return stored_owner, stored_expires
    return hold.owner, now + hold.duration


class _Renewable(Protocol):
    def renew_lease(self, run_id: str, owner: str, expires_at: float) -> Lease | None: ...


class Holds(dict[str, Hold]):
    """The holds registered with one store object, by run (each store keeps one).

    A dict (``get`` is the save's one look-up), changed only by `add` and `remove`.
    """

    __slots__ = ()

    def add(self, store: _Renewable, run_id: str, hold: Hold) -> None:
        """Register ``hold``; refused while another owner's hold on the run is live here.

        Raises:
            RunBusyError: Another Agent of this process holds the run (its lease is live).
        """
        other = self.get(run_id)
        if other is not None and other is not hold and other.owner != hold.owner:
            if other.expires_at > other.clock():
                raise RunBusyError(run_id, other.owner, other.expires_at)
            _RENEWER.remove(other)
        hold.expires_at = hold.until()
        hold.busy = False
        hold.lost = None
        self[run_id] = hold
        _RENEWER.add(store, run_id, hold)

    def remove(self, run_id: str, hold: Hold) -> None:
        """Unregister ``hold`` (nothing if it is not the run's hold here)."""
        if self.get(run_id) is hold:
            del self[run_id]
            _RENEWER.remove(hold)


class HoldsHere:
    """`LeasingStore.hold` and `unhold` for a store with a ``_lock`` and its `Holds`."""

    __slots__ = ()

    _lock: AbstractContextManager[bool]  # a threading.Lock or RLock
    _holds: Holds

    def hold(self, run_id: str, hold: Hold) -> None:
        """Make this store's saves of ``run_id`` through ``hold`` (see `LeasingStore.hold`)."""
        with self._lock:
            self._holds.add(cast(_Renewable, self), run_id, hold)

    def unhold(self, run_id: str, hold: Hold) -> None:
        """Stop making saves of ``run_id`` through ``hold``."""
        with self._lock:
            self._holds.remove(run_id, hold)


def lease_of(run_id: str, rows: Iterable[Sequence[object]]) -> Lease | None:
    """The lease in a store's ``(owner, expires_at)`` row(s): the first with both set."""
    for row in rows:
        owner, expires_at = row[0], row[1]
        if owner is not None and expires_at is not None:
            return Lease(run_id, str(owner), float(cast(float, expires_at)))
    return None


def renew(store: _Renewable, run_id: str, hold: Hold) -> None:
    """Renew the lease of ``hold`` (a busy run's), as the background thread does."""
    if not hold.busy:
        return
    stored = store.renew_lease(run_id, hold.owner, hold.until())
    if stored is None:
        hold.busy = False  # (the run came to rest meanwhile: no lease to renew)
    elif stored.owner == hold.owner:
        hold.expires_at = stored.expires_at
    else:
        hold.busy = False
        hold.lost = stored


STOP_WAIT = 2.0
"""Seconds `settle` waits for a stopped renewing thread to end (it may be mid-renewal)."""

IDLE = 1.0
"""Seconds the renewing thread waits with no hold before it ends by itself."""


class _Renewer:
    """The process's one thread that renews the leases of busy holds between saves.

    `add` starts it when none runs; with no hold left it ends by itself after `IDLE`
    seconds, so a run's steps, each of which registers and unregisters its hold, do not
    start a thread each (a thread start and join per step cost more than the step). `settle`
    ends an idle thread at once and waits for it (tests that count threads call it). Each
    thread has its own stop flag: an `add` right after a stop starts a new thread while the
    old one ends.
    """

    def __init__(self) -> None:
        self.lock = threading.Condition(threading.Lock())
        self.entries: dict[Hold, tuple[_Renewable, str]] = {}
        self.thread: threading.Thread | None = None
        self.stop: list[bool] = [False]
        """The running thread's stop flag (a new one for each thread)."""
        self.wake_at = 0.0

    def add(self, store: _Renewable, run_id: str, hold: Hold) -> None:
        with self.lock:
            hold.due = time.monotonic() + hold.renew_every
            self.entries[hold] = (store, run_id)
            if self.thread is None:
                self.stop = stop = [False]
                self.thread = threading.Thread(
                    target=self._run, args=(stop,), name="agentfsm-leases", daemon=True
                )
                self.thread.start()
            elif hold.due < self.wake_at:
                self.lock.notify_all()

    def remove(self, hold: Hold) -> None:
        with self.lock:
            self.entries.pop(hold, None)

    def settle(self, timeout: float) -> None:
        with self.lock:
            thread = self.thread if not self.entries else None
            if thread is not None:
                self.thread = None
                self.stop[0] = True
                self.lock.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self, stop: list[bool]) -> None:
        with self.lock:
            idle_since: float | None = None
            while not stop[0]:
                now = time.monotonic()
                if not self.entries:
                    idle_since = now if idle_since is None else idle_since
                    if now - idle_since >= IDLE:
                        self.thread = None  # (under the lock: the next add starts one)
                        return
                    self.wake_at = idle_since + IDLE
                    self.lock.wait(self.wake_at - now)
                    continue
                idle_since = None
                due = [(h, e) for h, e in self.entries.items() if h.due <= now]
                if not due:
                    self.wake_at = min(h.due for h in self.entries)
                    self.lock.wait(self.wake_at - now)
                    continue
                for hold, _ in due:
                    hold.due = now + hold.renew_every
                self.lock.release()
                try:
                    for hold, (store, run_id) in due:
                        try:
                            renew(store, run_id, hold)
                        except Exception:  # the next save reports the store's trouble
                            _log.warning(
                                "could not renew the lease of run %r", run_id, exc_info=True
                            )
                finally:
                    self.lock.acquire()


_RENEWER = _Renewer()


def settle(timeout: float = STOP_WAIT) -> None:
    """End the renewing thread now if no hold is registered, waiting at most ``timeout``.

    With no hold it ends by itself within `IDLE` seconds; this is for a caller that must
    see no thread left (a test counting threads). Call it holding no store's lock (a
    renewal in progress may need it).
    """
    _RENEWER.settle(timeout)


def _after_fork() -> None:  # pragma: no cover - runs in a forked child
    global _RENEWER
    _RENEWER = _Renewer()  # (the parent's thread and holds are not the child's)


if hasattr(os, "register_at_fork"):  # (POSIX)
    os.register_at_fork(after_in_child=_after_fork)
