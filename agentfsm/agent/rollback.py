"""After a failed save, the run is exactly what the store holds (I12), even when it cannot be read.

A save the store refuses leaves the Agent at the store's latest snapshot: read back at once
if the store answers, else the last snapshot the Agent knows stored (`_saved`: every save and
every restore keeps it), so an outage (a PostgreSQL server stopped) that refuses the read too
still leaves the run as stored, never ``busy`` with events nobody stored. What the failed call
produced is dropped; the same call made again once the store is back does the same thing.

A save may also have committed although it raised (its acknowledgement was lost with the
connection): the store then holds a newer version than the Agent went back to. So when the
read-back failed, the run is *unsure* (`_unsure`): the next call into it reads the store first
(`_recheck`), takes up what it holds if it is newer, and only then acts, so that no decision
is applied twice. If the store still cannot be read, that call raises what it raised and
changes nothing.

`StoredRun` is a base of `RunRecord`, between it and `WriteBehind`.
"""

from __future__ import annotations

from agentfsm.agent.behind import WriteBehind
from agentfsm.fsm import RunData
from agentfsm.states.names import RunState
from agentfsm.stores.snapshot import Snapshot

__all__ = ["StoredRun"]


class StoredRun(WriteBehind):
    """The last snapshot known stored, and how a run goes back to what its store holds."""

    __slots__ = ("_cancel_requested", "_pause_requested", "_restored", "_unsure")

    _data: RunData
    _cancel_requested: bool
    _pause_requested: bool
    _restored: bool
    """Restored from the store and not taken up yet: `start` takes it up (claims it)."""
    _saved: Snapshot | None
    """The last snapshot this run saved or was restored from (None: nothing stored yet)."""
    _unsure: bool
    """A save failed and the store could not be read back: it may hold a newer version."""

    def _fresh(self) -> None:  # pragma: no cover - RunRecord's
        raise NotImplementedError

    def _restore(self, snapshot: Snapshot) -> None:  # pragma: no cover - RunRecord's
        raise NotImplementedError

    def _reload(self) -> None:
        """After a failed save: be exactly what the store holds (nothing unsaved is kept).

        Never raises for the store: if it cannot be read, the run goes back to the last
        snapshot it knows stored, and is unsure until `_recheck` reads the store.
        """
        flight = self._flight
        if flight is not None and not flight.future.cancel():
            _, error = flight.future.result()  # (what the store holds: wait for its outcome)
            if error is None:  # it committed: the store holds its last snapshot
                self._saved = flight.saves[-1][0]
            del error
        self._flight = self._queued = None
        store = self.store
        unsure = False
        try:
            stored = store.load(self._data.run_id) if store is not None else None
        except Exception:  # (an outage refuses the read too: go back to what was saved)
            stored, unsure = self._saved, True
        if stored is None:
            self._fresh()
        else:
            self._restore(stored)
        self._unsure = unsure
        self._cancel_requested = self._pause_requested = False

    def _recheck(self) -> bool:
        """Before a call, when unsure: take up what the store holds if it is newer.

        Returns:
            Whether the run changed (the store held another version than the run's).

        Raises:
            StoreError: The store still cannot be read; nothing changed.
        """
        store = self.store
        stored = store.load(self._data.run_id) if store is not None else None
        self._unsure = False
        if (0 if stored is None else stored.version) == self._version:
            return False
        if stored is None:
            self._fresh()
        else:
            self._restore(stored)
        self._restored = self._data.state == RunState.BUSY  # (`start` takes it up)
        return True
