"""The grouped drawing (the default): each machine as a statechart, in Graphviz DOT.

A group (`agentfsm.diagrams.grouping`) is a cluster, ``cluster_<machine>_<group>``; an edge
from a group leaves the cluster's border (``ltail``); a history is a small ``H`` circle inside
its group, which the returning edge enters. Internal transitions are written under their
state's name. In the combined view the run's ``busy`` is itself a cluster,
``cluster_busy``, holding TurnLoop: the run's edges into and out of ``busy`` end at its
border (``lhead``/``ltail``), and entering it starts TurnLoop at its initial dot.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

import graphviz

from agentfsm.diagrams.grouping import Chart, ChartEdge, edge_line, statechart
from agentfsm.diagrams.style import (
    CURRENT,
    EDGE,
    FONT,
    TAKEN,
    Drawing,
    StateSource,
    dot_label,
    dot_text,
    new_graph,
    node_id,
    source_text,
)
from agentfsm.states.events import Event
from agentfsm.states.names import MachineName, RunState
from agentfsm.states.tables import LOOP_TABLE, RUN_TABLE, TransitionRow

BUSY_CLUSTER = "cluster_busy"
"""The cluster that is the run's ``busy`` in the combined view, TurnLoop inside it."""

_GROUP = {
    "style": "rounded",
    "color": "#94a3b8",
    "fontcolor": "#475569",
    "fontname": FONT,
    "fontsize": "13",
    "labeljust": "l",
    "class": "group",
}
_FROM_GROUP = {"color": "#475569", "fontcolor": "#334155", "penwidth": "1.6"}
"""An edge from a group's border or into an ``H``: darker and thicker, so it reads as the
box's own and its label as its."""
_HISTORY = {
    "label": "H",
    "shape": "circle",
    "width": "0.32",
    "fixedsize": "true",
    "fontname": FONT,
    "fontsize": "12",
    "class": "history",
}
RETURNS = frozenset({"busy", "thinking", "acting"})
"""The states that edges return to (the hubs of each machine): an edge into one is written
backwards (``dir=back``), so that the layout ranks each hub above what it leads to and the
drawing reads from top to bottom."""

_LAYOUT = {"rankdir": "TB", "ranksep": "0.45", "nodesep": "0.4"}
"""Top to bottom, tighter than the flat drawing: narrower, so that shown as wide as a laptop
screen its labels stay readable (a test measures them), and with a third of the edges the
labels still have room (another test checks that none touches another)."""
_FINAL = {"shape": "box", "peripheries": "2", "style": "rounded,filled"}
"""A final state: a box with a double border (narrower than the flat drawing's circles)."""
_EDGE_SIZE = "11"
"""The font size of edge labels (points; the flat drawing's are 10)."""
_ANCHOR = {"label": "", "shape": "point", "style": "invis", "width": "0.01"}
"""The hidden point inside a group (and inside ``busy``) that its edges are attached to."""
_INTERNAL_SIZE = "12"
"""The font size of the internal transitions written in a state."""


def cluster_name(machine: str, group: str) -> str:
    """The DOT name of a group's cluster: ``cluster_<machine>_<group>``."""
    return f"cluster_{machine}_{group}"


def group_anchor(machine: str, group: str) -> str:
    """The DOT id of the hidden point inside a group that its edges leave from."""
    return f"{machine}.G.{group}"


def history_id(machine: str, group: str) -> str:
    """The DOT id of a group's ``H`` node: ``<machine>.H.<group>``."""
    return f"{machine}.H.{group}"


def internal_label(name: str, rows: Iterable[TransitionRow]) -> str:
    """An HTML label: ``name``, a rule, then one line per internal transition."""
    lines = "<BR/>".join(html.escape(edge_line(row)) for row in rows)
    return (
        '<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">'
        f"<TR><TD>{html.escape(name)}</TD></TR><HR/>"
        f'<TR><TD><FONT POINT-SIZE="{_INTERNAL_SIZE}">{lines}</FONT></TD></TR></TABLE>>'
    )


def _wrapped(lines: tuple[str, ...]) -> tuple[str, ...]:
    """An edge's label lines; a lone transition's guard on a line of its own (narrower)."""
    if len(lines) == 1 and " [" in lines[0]:
        event, _, guard = lines[0].partition(" [")
        return (event, f"[{guard}")
    return lines


class _GroupedDrawing(Drawing):
    """Adds statecharts to a graph, with highlights and path counts on their edges."""

    def __init__(
        self, current: StateSource | None, events: Iterable[Event], *, combined: bool
    ) -> None:
        super().__init__(current, events)
        self.combined = combined

    def is_busy_cluster(self, machine: str, state: str) -> bool:
        """True for the run's ``busy`` in the combined view, drawn as a cluster."""
        return self.combined and machine == MachineName.RUN.value and state == RunState.BUSY

    def anchor(self, machine: str, state: str) -> str:
        """The node an edge of ``state`` is attached to (busy's: a hidden point in it)."""
        if self.is_busy_cluster(machine, state):
            return group_anchor(machine, state)
        return node_id(machine, state)

    def chart(self, graph: graphviz.Digraph, chart: Chart) -> None:
        """A machine's start dot, states and groups (its edges come later, `edges`)."""
        machine = chart.table.name.value
        start = node_id(machine, "__start")
        graph.node(start, label="", shape="point", width="0.15")
        self.groups(graph, chart, None)
        initial = node_id(machine, chart.table.initial)
        graph.edge(start, initial, color="black")
        if machine == MachineName.RUN.value:
            # hidden: created above busy (the top of busy's box), where a run begins
            busy = node_id("loop", "__start") if self.combined else node_id(machine, "busy")
            graph.edge(initial, busy, style="invis")

    def groups(self, graph: graphviz.Digraph, chart: Chart, parent: str | None) -> None:
        """The states directly inside ``parent``, then its groups as clusters, nested."""
        machine = chart.table.name.value
        for state in chart.table.states:
            if chart.home(state) == parent:
                self.state(graph, chart, state)
        for group in chart.children(parent):
            with graph.subgraph(name=cluster_name(machine, group.name)) as box:
                box.attr(label=dot_text(group.name), **_GROUP)
                if group.history:
                    box.node(history_id(machine, group.name), **_HISTORY)
                leaving = [e for e in chart.edges if e.from_group and e.source == group.name]
                if leaving:
                    box.node(group_anchor(machine, group.name), **_ANCHOR)
                self.groups(box, chart, group.name)
                outward = group.parent is None or all(
                    e.target not in chart.group(group.parent).states for e in leaving
                )
                if leaving and outward and not any(e.target in RETURNS for e in leaving):
                    # hidden: the group's point below its states, so that its edges out of
                    # the group around it leave from the bottom of the box, labels beside
                    for state in group.states:
                        box.edge(
                            self.anchor(machine, state),
                            group_anchor(machine, group.name),
                            style="invis",
                            weight="0",
                        )

    def state(self, graph: graphviz.Digraph, chart: Chart, state: str) -> None:
        """One state: a node (internal transitions under its name), or busy's cluster."""
        table, machine = chart.table, chart.table.name.value
        internal = dict(chart.internal).get(state, ())
        if self.is_busy_cluster(machine, state):
            with graph.subgraph(name=BUSY_CLUSTER) as busy:
                name = f"{state} (now)" if self.is_current(table, state) else state
                label = internal_label(name, internal) if internal else dot_text(name)
                busy.attr(label=label, fontname=FONT, style="rounded,filled", color="gray40")
                busy.attr(fillcolor="#f8fafc", labeljust="l", **{"class": "state"})
                if self.is_current(table, state):
                    busy.attr(color=CURRENT["color"], penwidth="2", **{"class": "state current"})
                anchor = group_anchor(machine, state)
                busy.node(anchor, **_ANCHOR)
                self.chart(busy, statechart(LOOP_TABLE))
                for final in sorted(LOOP_TABLE.final):
                    # hidden: ranks busy's point after the loop, so the run's edges of busy
                    # leave its right-hand border, as they leave a state
                    busy.edge(node_id(MachineName.LOOP.value, final), anchor, style="invis")
            return
        attrs = self.node_attrs(table, state)
        if state in table.final:
            attrs.update(_FINAL)
        now = attrs.pop("xlabel", None)  # inside the node: an xlabel may land on a label
        attrs["label"] = dot_label(state, "(now)") if now else dot_text(state)
        if internal:
            attrs["label"] = internal_label(f"{state} (now)" if now else state, internal)
        graph.node(node_id(machine, state), **attrs)

    def edges(self, graph: graphviz.Digraph, chart: Chart) -> None:
        """Every drawn edge of ``chart``."""
        for edge in chart.edges:
            self.edge(graph, chart, edge)

    def tail(self, chart: Chart, edge: ChartEdge) -> tuple[str, str | None]:
        """The node an edge leaves, and the cluster whose border it leaves (if any)."""
        machine = chart.table.name.value
        if edge.from_group:
            return group_anchor(machine, edge.source), cluster_name(machine, edge.source)
        busy = self.is_busy_cluster(machine, edge.source)
        return self.anchor(machine, edge.source), BUSY_CLUSTER if busy else None

    def head(self, chart: Chart, edge: ChartEdge) -> tuple[str, str | None]:
        """The node an edge enters, and the cluster whose border it ends at (if any)."""
        machine = chart.table.name.value
        if edge.to_history:
            return history_id(machine, edge.target), None
        busy = self.is_busy_cluster(machine, edge.target)
        return self.anchor(machine, edge.target), BUSY_CLUSTER if busy else None

    def edge(self, graph: graphviz.Digraph, chart: Chart, edge: ChartEdge) -> None:
        """One edge: its lines and count, taken in blue, from a border or into an H."""
        machine = chart.table.name.value
        kind = "history" if edge.to_history else "group" if edge.from_group else ""
        attrs = dict(EDGE, fontsize=_EDGE_SIZE, **({"class": kind} if kind else {}))
        if kind:
            attrs.update(_FROM_GROUP)
        taken = sum(
            self.counts.pop((machine, row.event, row.source, row.target), 0) for row in edge.rows
        )
        lines = _wrapped(edge.lines) + ((f"{taken}x",) if taken else ())
        attrs["label"] = dot_label(lines[0], *lines[1:])
        if taken:
            attrs.update(TAKEN, penwidth=str(min(1 + taken, 6)))
        if edge.to_history:
            # the guards the H stands for, shown on hover (and read back by the tests)
            attrs["tooltip"] = dot_text(
                f"{edge.lines[0]} [{edge.history_guard}<state>]: back to the state it left"
            )
        (tail, tail_cluster), (head, head_cluster) = self.tail(chart, edge), self.head(chart, edge)
        if edge.to_history or edge.target in RETURNS:
            # A way back (into busy, thinking, acting, or an H) is written from its head to
            # its tail with the arrow at the tail (dir=back): the layout then keeps it short
            # instead of ranking the whole machine around it.
            (tail, tail_cluster), (head, head_cluster) = (head, head_cluster), (tail, tail_cluster)
            attrs["dir"] = "back"
        if tail_cluster:
            attrs["ltail"] = tail_cluster
        if head_cluster:
            attrs["lhead"] = head_cluster
        graph.edge(tail, head, **attrs)


def _grouped_graph(name: str, title: str) -> graphviz.Digraph:
    return new_graph(name, title, compound="true", **_LAYOUT)


def grouped_single(
    machine: MachineName, current: StateSource | None, events: Iterable[Event]
) -> str:
    """One machine as a statechart: RunLifecycle (``run``) or TurnLoop (``loop``)."""
    table, title = (
        (RUN_TABLE, "RunLifecycle (run)")
        if machine == MachineName.RUN
        else (LOOP_TABLE, "TurnLoop (loop)")
    )
    drawing = _GroupedDrawing(current, events, combined=False)
    graph = _grouped_graph(title.split(" ")[0], title)
    chart = statechart(table)
    drawing.chart(graph, chart)
    drawing.edges(graph, chart)
    drawing.strays(graph, (table.name.value,))
    return source_text(graph)


def grouped_combined(current: StateSource | None, events: Iterable[Event]) -> str:
    """Both machines as statecharts, TurnLoop inside the run's ``busy``."""
    drawing = _GroupedDrawing(current, events, combined=True)
    graph = _grouped_graph("agentfsm", "RunLifecycle with TurnLoop inside busy")
    run = statechart(RUN_TABLE)
    drawing.chart(graph, run)
    drawing.edges(graph, run)
    drawing.edges(graph, statechart(LOOP_TABLE))
    drawing.strays(graph, ("run", "loop"))
    return source_text(graph)
