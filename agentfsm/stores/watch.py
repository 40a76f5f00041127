"""Watching a run: its events, as they are stored, from any process.

`PostgresStore.watch` is woken by the database (LISTEN/NOTIFY); `SQLiteStore.watch` and
`MemoryStore.watch` poll by ``seq`` with `poll_events`, whose sleep and clock are injected
so tests need not wait.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Protocol, runtime_checkable

from agentfsm.states.events import Event
from agentfsm.stores.base import RunStore

POLL_INTERVAL = 0.05
"""Seconds between two reads of a polling watch, by default."""


@runtime_checkable
class WatchableStore(RunStore, Protocol):
    """A `RunStore` whose runs can be watched as they are stored (every store shipped)."""

    def watch(
        self, run_id: str, after_seq: int = 0, *, timeout: float | None = None
    ) -> Iterator[Event]:
        """The run's events after ``after_seq``, in order, each once, as they are stored.

        Args:
            run_id: The run to watch (it need not exist yet).
            after_seq: Yield only the events after this one.
            timeout: Stop after this many seconds without a new event; None: never (close
                the generator, or break out of the loop, to stop watching).
        """
        ...


def poll_events(
    read: Callable[[str, int], list[Event]],
    run_id: str,
    after_seq: int = 0,
    *,
    timeout: float | None = None,
    interval: float = POLL_INTERVAL,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[Event]:
    """Yield ``read(run_id, seq)``'s events as they appear, reading every ``interval`` s.

    Args:
        read: A store's ``events`` method.
        run_id: The run to watch.
        after_seq: Yield only the events after this one.
        timeout: Stop after this many seconds (by ``clock``) without a new event.
        interval: Seconds to ``sleep`` between two reads that found nothing new.
        sleep: Waits that many seconds (injected by tests).
        clock: Seconds, monotonic (injected by tests).
    """
    last = after_seq
    idle_since = clock()
    while True:
        new = read(run_id, last)
        for event in new:
            yield event
            last = event.seq
        if new:
            idle_since = clock()
        if timeout is not None and clock() - idle_since >= timeout:
            return
        if not new:
            sleep(interval)


class PollingWatch:
    """`watch` by polling the store's own ``events`` by seq: for SQLite and memory stores."""

    __slots__ = ()

    def events(self, run_id: str, after_seq: int = 0) -> list[Event]:
        """The run's stored events after ``after_seq`` (the store's own method)."""
        raise NotImplementedError

    def watch(
        self,
        run_id: str,
        after_seq: int = 0,
        *,
        timeout: float | None = None,
        interval: float = POLL_INTERVAL,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> Iterator[Event]:
        """The run's events after ``after_seq`` as they are stored, by any process, polling by seq.

        Args:
            run_id: The run to watch (it need not exist yet).
            after_seq: Yield only the events after this one.
            timeout: Stop after this many seconds without a new event; None: never.
            interval: Seconds between two reads that found nothing new.
            sleep: Waits between reads (injected by tests).
            clock: A monotonic clock for ``timeout`` (injected by tests).
        """
        return poll_events(
            self.events, run_id, after_seq, timeout=timeout, interval=interval, sleep=sleep,
            clock=clock,
        )  # fmt: skip
