"""What the live view shows of a run, as JSON-ready dicts, read from a `RunStore`.

Nothing here renders HTML: the page's script puts every stored string in the document as
text (``textContent``), so a message holding ``<script>`` is shown, never run. The only
markup sent is the diagram's SVG, which Graphviz draws from the machines' tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agentfsm.diagrams import combined_diagram, render
from agentfsm.states.events import Event
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import Message, ToolCall
from agentfsm.states.names import MachineName
from agentfsm.states.tables import RUN_TABLE
from agentfsm.stores.base import RunStore, RunSummary
from agentfsm.stores.snapshot import Snapshot

RUN_STATES: tuple[str, ...] = tuple(RUN_TABLE.states)
"""RunLifecycle's states, in the table's order: the runs page filters by them."""


def allowed_events(state: str) -> list[str]:
    """The RunLifecycle events the table has from ``state`` (their guards decide later)."""
    return sorted({row.event for row in RUN_TABLE.rows if row.source == state})


def event_view(event: Event) -> JSONObject:
    """One event of a run's log, as the page lists it."""
    return {
        "seq": event.seq,
        "at": event.at,
        "machine": str(event.machine),
        "event": event.event,
        "source": event.source,
        "target": event.target,
        "transition": event.machine != MachineName.CONVERSATION,
        "data": event.data,
    }


def _call_view(call: ToolCall) -> JSONObject:
    return {"id": call.id, "name": call.name, "arguments": call.arguments}


def message_view(message: Message) -> JSONObject:
    """One message of the conversation: its role, text, tool calls and the call it answers."""
    return {
        "role": str(message.role),
        "content": message.content,
        "tool_calls": [_call_view(call) for call in message.tool_calls],
        "tool_call_id": message.tool_call_id,
        "name": message.name,
    }


def pending_calls(snapshot: Snapshot) -> list[ToolCall]:
    """The calls the run waits on, as the conversation holds them, in pending order."""
    calls: dict[str, ToolCall] = {}
    for message in snapshot.messages:
        calls.update((call.id, call) for call in message.tool_calls)
    return [calls.get(call_id, ToolCall(id=call_id, name="?")) for call_id in snapshot.pending]


def run_view(snapshot: Snapshot) -> JSONObject:
    """Where a run is: states, counters, its wait (pending calls or question), conversation."""
    allowed: list[JSONValue] = list(allowed_events(snapshot.state))
    return {
        "run_id": snapshot.run_id,
        "state": snapshot.state,
        "loop_state": snapshot.loop_state,
        "turn": snapshot.turn,
        "max_turns": snapshot.max_turns,
        "iteration": snapshot.iteration,
        "max_iterations": snapshot.max_iterations,
        "reason": snapshot.reason,
        "paused_from": snapshot.paused_from,
        "question": snapshot.question,
        "deadline": snapshot.deadline,
        "version": snapshot.version,
        "seq": snapshot.seq,
        "allowed": allowed,
        "pending": [_call_view(call) for call in pending_calls(snapshot)],
        "messages": [message_view(message) for message in snapshot.messages],
    }


def diagram_svg(snapshot: Snapshot, events: Sequence[Event]) -> str:
    """The combined diagram as SVG: current states highlighted, the path taken weighted."""
    svg = render(combined_diagram(snapshot, events), "svg").decode("utf-8")
    start = svg.find("<svg")  # drop the XML declaration and doctype: it goes inline
    return svg[start:] if start >= 0 else svg


@dataclass(slots=True)
class RunRows:
    """The runs page's rows, kept between reads: a row is rebuilt only when its run moved."""

    store: RunStore
    """Where the runs are read."""
    _rows: dict[str, tuple[int, int, JSONObject]] = field(default_factory=dict)

    def rows(self) -> list[JSONValue]:
        """Every run with its state, reason, turn and last event time, ordered by run id."""
        runs = self.store.list_runs()
        self._rows = {run.run_id: self._row(run) for run in runs}
        return [row for _, _, row in self._rows.values()]

    def _row(self, run: RunSummary) -> tuple[int, int, JSONObject]:
        kept = self._rows.get(run.run_id)
        if kept is not None and kept[:2] == (run.seq, run.version):
            return kept
        snapshot = self.store.load(run.run_id)
        last = self.store.events(run.run_id, after_seq=run.seq - 1) if run.seq else []
        row: JSONObject = {
            "run_id": run.run_id,
            "state": run.state,
            "reason": snapshot.reason if snapshot is not None else None,
            "turn": run.turn,
            "seq": run.seq,
            "version": run.version,
            "last_event_at": last[-1].at if last else None,
        }
        return (run.seq, run.version, row)
