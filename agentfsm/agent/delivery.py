"""The run's trace, and how its events and trace entries are told to its listeners.

`Delivery` is `RunRecord`'s base: it keeps the trace (packed when nobody reads its entries
as they come, see agentfsm.fsm.trace) and tells each event and entry to the listeners, in
order; while a failed step is settled, what a listener raises is kept for later. When
something is told (after it is stored, I11) is `RunRecord`'s business.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentfsm.agent.rollback import StoredRun
from agentfsm.agent.vocabulary import AgentEvent, AgentListener
from agentfsm.fsm.trace import AnyTraceEntry, Kept, entries_of
from agentfsm.stores.base import RunStore


class Delivery(StoredRun):
    """A run's trace and listeners: what is kept of each entry, and who is told of it."""

    __slots__ = ("_listeners", "_packed", "_quiet", "_trace", "_undelivered", "_view", "store")

    store: RunStore | None
    _listeners: tuple[AgentListener, ...]
    """Told of every event and trace entry (replaced, never changed in place: a listener
    added or removed during a delivery takes effect at the next)."""
    _trace: list[Kept]
    """The trace: on a store, its entries; with none, its model calls and tool executions
    packed (see agentfsm.fsm.trace)."""
    _packed: bool
    """Whether `_trace` may hold packed entries (`_entries` gives them back)."""
    _view: tuple[AnyTraceEntry, ...]
    """The entries of `_trace` built so far by `_entries`, in order (a packed trace's readers
    get the same entry each time, and each read builds only the entries added since)."""
    _quiet: list[BaseException] | None
    """While a failed step is being settled: the listeners' exceptions, kept, not raised."""
    _undelivered: list[AgentEvent]
    """The batch's events and the trace entries among them, in order, not yet delivered."""

    def _deliver(self, item: AgentEvent) -> None:
        quiet = self._quiet  # (no listener can change it: only settling a step does)
        if quiet is None:
            for listener in self._listeners:  # (a tuple, replaced on change)
                listener(item)
            return
        for listener in self._listeners:
            try:  # settling a failed step: what a listener raises now is kept for later
                listener(item)
            except BaseException as error:
                quiet.append(error)

    def _entries(self) -> Sequence[AnyTraceEntry]:
        """The trace's entries, in order: a packed trace's built once each (see `_view`)."""
        trace = self._trace
        if not self._packed:
            return trace  # type: ignore[return-value]  # (none packed)
        view = self._view
        if len(view) < len(trace):  # (a trace only grows, until it is replaced)
            view = self._view = (*view, *entries_of(trace[len(view) :]))
        return view

    def _tells(self) -> bool:
        """Whether a trace entry kept now is told or stored, so must be built (see `_keep`)."""
        return self.store is not None or bool(self._listeners or self._undelivered)

    def _keep(self, items: Sequence[Kept], entries: Sequence[AnyTraceEntry] | None) -> None:
        """Keep trace entries packed (see agentfsm.fsm.trace), and tell their ``entries``.

        ``entries`` is None when `_tells` says nobody is told or stores them.
        """
        if entries is None:
            self._trace += items
            self._packed = True
            return
        for item, entry in zip(items, entries, strict=True):
            self._record(entry, item)

    def _record(self, entry: AnyTraceEntry, kept: Kept | None = None) -> None:
        """Keep ``entry`` in the trace, and tell the listeners of it.

        With ``kept`` (the entry packed: see agentfsm.fsm.trace), a run with no store keeps
        that instead; a run on a store keeps the entry itself, since each save's snapshot
        reads the whole trace.
        """
        if kept is None or self.store is not None:
            self._trace.append(entry)
        else:
            self._trace.append(kept)
            self._packed = True
        if self._undelivered:  # after the events waiting in the batch, in order
            self._undelivered.append(entry)
        elif self._quiet is None:  # `_deliver`, inlined, as in `_on_event`
            for listener in self._listeners:
                listener(entry)
        else:
            self._deliver(entry)
