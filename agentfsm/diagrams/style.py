"""What every drawing of the machines shares: views, state kinds, styles, ids and labels.

Node ids are ``<machine>.<state>`` (``run.busy``, ``loop.thinking``); each node's ``class``
attribute names its kind (``initial``, ``state``, ``waiting``, ``final``) and, when it is
where a run is now, ``current`` — Graphviz copies it into the SVG, so a page can style it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Literal, Protocol, get_args

import graphviz

from agentfsm import _checks
from agentfsm.states.events import Event, event_list
from agentfsm.states.names import RUN_WAITING, LoopState, MachineName
from agentfsm.states.tables import MachineTable, TransitionRow

View = Literal["run", "loop", "combined"]
"""Which diagram: ``run`` (RunLifecycle), ``loop`` (TurnLoop) or ``combined`` (both)."""

_VIEWS: tuple[str, ...] = get_args(View)


def check_view(view: object) -> None:
    """Refuse a view that is not ``run``, ``loop`` or ``combined`` (it was drawn as another).

    Raises:
        ValueError: Any other value.
    """
    _checks.choice("view", view, _VIEWS)


StateKind = Literal["initial", "state", "waiting", "final"]
"""How a state is drawn: the initial state, an ordinary one, a wait, or a final state."""

FONT = "Helvetica"
"""The font of every diagram."""

WAITING: frozenset[str] = RUN_WAITING | {LoopState.AWAITING_ACTION, LoopState.AWAITING_INPUT}
"""The states of either machine that wait for the application or the user."""

KIND_ATTRS: dict[StateKind, dict[str, str]] = {
    "initial": {"shape": "box", "style": "rounded,filled,bold", "fillcolor": "#dbeafe"},
    "state": {"shape": "box", "style": "rounded,filled", "fillcolor": "white"},
    "waiting": {"shape": "box", "style": "rounded,filled,dashed", "fillcolor": "#fef3c7"},
    "final": {"shape": "doublecircle", "style": "filled", "fillcolor": "#e5e7eb"},
}
CURRENT = {"color": "#dc2626", "fillcolor": "#fecaca", "penwidth": "3"}
TAKEN = {"color": "#2563eb", "fontcolor": "#2563eb"}
EDGE = {"color": "gray30", "fontname": FONT, "fontsize": "10"}

LAYOUT = {"nodesep": "0.6", "ranksep": "0.7"}
"""Room between nodes of a rank and between ranks, in inches. Edge labels are laid out as
nodes of their own, so at Graphviz's defaults (0.25, 0.5) the labels of the many edges
between ``busy``, ``paused`` and the waits touch or cover each other and the ``now`` mark;
with this room none does (a test measures every label's box in the rendered SVG). The loop's
``delegating`` state (sub-agents) needed a little more room between the nodes of a rank:
0.4 let the ``now`` mark of ``exhausted`` touch a label of the combined view."""

EdgeKey = tuple[str, str, str, str]
"""An edge as ``(machine, event, source, target)``."""


class StateSource(Protocol):
    """Anything that knows where a run is now: an `Agent`, or its `RunData`."""

    @property
    def state(self) -> str:
        """RunLifecycle's current state."""

    @property
    def loop_state(self) -> str | None:
        """TurnLoop's current state, or None before the first turn."""


def state_kind(table: MachineTable, state: str) -> StateKind:
    """How ``state`` of ``table`` is drawn: initial, final, waiting, or an ordinary state."""
    if state == table.initial:
        return "initial"
    if state in table.final:
        return "final"
    return "waiting" if state in WAITING else "state"


def edge_label(row: TransitionRow) -> str:
    """A row's label: its event, its guard in brackets, and ``(internal)`` when it is."""
    label = row.event + (f" [{row.guard}]" if row.guard else "")
    return label + (" (internal)" if row.internal else "")


TRANSITION_MACHINES = frozenset({MachineName.RUN.value, MachineName.LOOP.value})
"""The machines whose events are transitions, drawn as edges. A log also holds records of
other machines (``conversation``: a message added, a tool started…), which are not."""


def path_counts(events: Iterable[Event]) -> dict[EdgeKey, int]:
    """How many times a run's event log took each edge, in the order edges were first taken.

    Args:
        events: The run's events, in order (from a listener, or a store). Only the
            transitions of RunLifecycle and TurnLoop count; records of other machines
            (``conversation``) are skipped.

    Returns:
        ``(machine, event, source, target)`` → the number of events that took that edge.

    Raises:
        TypeError: ``events`` is not an iterable of `Event`.
    """
    return dict(
        Counter(
            (str(e.machine), e.event, e.source, e.target)
            for e in event_list(events)
            if str(e.machine) in TRANSITION_MACHINES
        )
    )


def where_now(current: StateSource | None) -> tuple[str | None, str | None]:
    """The run state and loop state of ``current`` (both None for None).

    Raises:
        TypeError: ``current`` has no str ``state`` or its ``loop_state`` is no str or None.
    """
    if current is None:
        return None, None
    state = getattr(current, "state", None)
    loop_state = getattr(current, "loop_state", None)
    if not isinstance(state, str) or not (loop_state is None or isinstance(loop_state, str)):
        _checks.refuse_type(
            "current",
            current,
            "an Agent, a RunData (anything with a str 'state' and a 'loop_state'), or None",
        )
    return state, loop_state


_PLAIN = re.compile(r"[A-Za-z0-9_]+")


def node_id(machine: str, state: str) -> str:
    """The DOT id of a state's node: ``machine.state``, or a hex form for any other name.

    A name from data (a stored run, a user's machine) may hold quotes, backslashes, ``:``
    (DOT's port syntax) or ``<…>``: its id is then ``machine.x`` and the name's UTF-8 in
    hex, which DOT reads as plain text; its label shows the name, escaped.
    """
    if _PLAIN.fullmatch(state):
        return f"{machine}.{state}"
    return f"{machine}.x{state.encode().hex()}"


def dot_text(value: str) -> str:
    """``value`` as literal DOT text: backslashes kept, ``<…>`` never read as HTML."""
    escaped: str = graphviz.escape(value)
    return escaped


def dot_label(value: str, *lines: str) -> str:
    """A label: ``value`` as literal text, then ``lines`` (our own), one per line."""
    label: str = graphviz.nohtml("\\n".join([dot_text(value), *map(dot_text, lines)]))
    return label


class Drawing:
    """What a drawing knows of a run: where it is now, and how often it took each edge."""

    def __init__(self, current: StateSource | None, events: Iterable[Event]) -> None:
        state, loop_state = where_now(current)
        self.current: dict[str, str | None] = {
            MachineName.RUN.value: state,
            MachineName.LOOP.value: loop_state,
        }
        self.counts = path_counts(events)

    def is_current(self, table: MachineTable, state: str) -> bool:
        """True when the run is in ``state`` of ``table`` now."""
        return self.current[table.name.value] == state

    def node_attrs(self, table: MachineTable, state: str) -> dict[str, str]:
        """A state's node: styled by its kind, highlighted and marked ``now`` if current."""
        kind = state_kind(table, state)
        attrs = {"label": dot_text(state), "fontname": FONT, "class": kind, **KIND_ATTRS[kind]}
        if self.is_current(table, state):
            attrs.update(CURRENT, xlabel="now")
            attrs["class"] = f"{kind} current"
        return attrs

    def strays(self, graph: graphviz.Digraph, machines: tuple[str, ...]) -> None:
        """Edges of the log that no row of the table has: dashed red, so they stand out."""
        for (machine, event, source, target), taken in self.counts.items():
            if machine in machines:
                for state in (source, target):
                    graph.node(node_id(machine, state), label=dot_text(state))
                graph.edge(
                    node_id(machine, source),
                    node_id(machine, target),
                    label=dot_label(f"{event} (not in the table)", f"{taken}x"),
                    style="dashed",
                    color="red",
                    fontcolor="red",
                    fontname=FONT,
                )


def new_graph(name: str, title: str, **layout: str) -> graphviz.Digraph:
    """A graph titled ``title`` in the diagrams' font: left to right, spaced by `LAYOUT`.

    Args:
        name: The graph's DOT name.
        title: Its title, drawn above it.
        layout: Graph attributes replacing the defaults (``rankdir``, ``ranksep``…).
    """
    graph = graphviz.Digraph(name)
    attrs = {"rankdir": "LR", **LAYOUT, **layout}
    graph.attr(label=dot_text(title), labelloc="t", fontname=FONT, **attrs)
    return graph


def source_text(graph: graphviz.Digraph) -> str:
    """The DOT text of ``graph``."""
    text: str = graph.source
    return text
