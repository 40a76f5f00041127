"""Where the live view learns that runs changed: a `ChangeFeed`, polled from SQLite by seq.

Each run is marked by the ``seq`` of its last stored event and its snapshot ``version``
(a save with no event, such as a claim, moves only the version). A stream waits on the feed
until the marks differ from the ones it has shown, then reads what is new from the store
(the event log after the ``seq`` it has). SQLite can tell nobody when another process
commits, so `PollingFeed` reads the marks every ``interval`` seconds; a store that can push
(PostgreSQL's LISTEN/NOTIFY) implements `ChangeFeed` by waking on a notification instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol, runtime_checkable

from agentfsm.stores.base import RunStore

Marks = dict[str, tuple[int, int]]
"""Every stored run's mark: run id → (``seq`` of its last event, snapshot ``version``)."""

DEFAULT_INTERVAL = 0.25
"""Seconds between two polls of a SQLite store: a change shows within about this long."""


@runtime_checkable
class ChangeFeed(Protocol):
    """Tells the live view when runs changed (new events, a new snapshot, a new run)."""

    def marks(self) -> Marks:
        """The runs' marks now."""
        ...

    async def changed(self, seen: Mapping[str, tuple[int, int]]) -> Marks:
        """Wait until the runs' marks differ from ``seen``; return the new marks.

        Returns at once if they already differ.
        """
        ...


def store_marks(store: RunStore) -> Marks:
    """The marks of every run of ``store``, from its run list (one query on SQLite)."""
    return {run.run_id: (run.seq, run.version) for run in store.list_runs()}


class PollingFeed:
    """A `ChangeFeed` that reads a store's run list every ``interval`` seconds.

    Args:
        store: The store to watch (opened read-only is enough).
        interval: Seconds between two reads; must be positive.
        sleep: Waits that many seconds (injectable, so tests need no real time).

    Raises:
        ValueError: ``interval`` is not a positive number.
    """

    def __init__(
        self,
        store: RunStore,
        interval: float = DEFAULT_INTERVAL,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval <= 0:
            raise ValueError(f"interval must be a positive number of seconds, not {interval!r}")
        self.store = store
        """The store watched."""
        self.interval = float(interval)
        """Seconds between two reads."""
        self._sleep = sleep

    def marks(self) -> Marks:
        """The runs' marks, read from the store now."""
        return store_marks(self.store)

    async def changed(self, seen: Mapping[str, tuple[int, int]]) -> Marks:
        """Poll the store until the marks differ from ``seen``; return the new marks."""
        while True:
            now = self.marks()
            if now != seen:
                return now
            await self._sleep(self.interval)
