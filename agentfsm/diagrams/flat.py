"""The flat drawing: one node per state and one edge per row of the table (``flat=True``)."""

from __future__ import annotations

from collections.abc import Iterable

import graphviz

from agentfsm.diagrams.style import (
    CURRENT,
    EDGE,
    FONT,
    TAKEN,
    Drawing,
    StateSource,
    dot_label,
    edge_label,
    new_graph,
    node_id,
    source_text,
)
from agentfsm.states.events import Event
from agentfsm.states.names import RunState
from agentfsm.states.tables import LOOP_TABLE, RUN_TABLE, MachineTable


class _FlatDrawing(Drawing):
    """Adds one machine's nodes and edges to a graph, one edge per row."""

    def nodes(self, graph: graphviz.Digraph, table: MachineTable, skip: str = "") -> None:
        machine = table.name.value
        start = node_id(machine, "__start")
        graph.node(start, label="", shape="point", width="0.15")
        graph.edge(start, node_id(machine, table.initial), color="black")
        for state in table.states:
            if state != skip:
                graph.node(node_id(machine, state), **self.node_attrs(table, state))

    def edges(self, graph: graphviz.Digraph, table: MachineTable) -> None:
        machine = table.name.value
        for row in table.rows:
            taken = self.counts.pop((machine, row.event, row.source, row.target), 0)
            attrs = dict(EDGE, label=dot_label(edge_label(row)))
            if row.internal:
                attrs.update({"style": "dashed", "class": "internal"})
            if taken:
                attrs.update(TAKEN, penwidth=str(min(1 + taken, 6)))
                attrs["label"] = dot_label(edge_label(row), f"{taken}x")
            graph.edge(node_id(machine, row.source), node_id(machine, row.target), **attrs)


def _single(
    table: MachineTable, title: str, current: StateSource | None, events: Iterable[Event]
) -> str:
    drawing = _FlatDrawing(current, events)
    graph = new_graph(title.split(" ")[0], title)
    drawing.nodes(graph, table)
    drawing.edges(graph, table)
    drawing.strays(graph, (table.name.value,))
    return source_text(graph)


def flat_run(current: StateSource | None, events: Iterable[Event]) -> str:
    """RunLifecycle, one edge per row of `RUN_TABLE`."""
    return _single(RUN_TABLE, "RunLifecycle (run)", current, events)


def flat_loop(current: StateSource | None, events: Iterable[Event]) -> str:
    """TurnLoop, one edge per row of `LOOP_TABLE`."""
    return _single(LOOP_TABLE, "TurnLoop (loop)", current, events)


def flat_combined(current: StateSource | None, events: Iterable[Event]) -> str:
    """Both machines, one edge per row, TurnLoop in a ``busy`` cluster beside a busy node."""
    drawing = _FlatDrawing(current, events)
    graph = new_graph("agentfsm", "RunLifecycle with TurnLoop inside busy")
    drawing.nodes(graph, RUN_TABLE, skip=RunState.BUSY)
    with graph.subgraph(name="cluster_busy") as busy:
        busy.attr(label="busy: TurnLoop", fontname=FONT, style="rounded", color="gray50")
        if drawing.is_current(RUN_TABLE, RunState.BUSY):
            busy.attr(color=CURRENT["color"], penwidth="2")
        busy.node(node_id("run", RunState.BUSY), **drawing.node_attrs(RUN_TABLE, "busy"))
        drawing.nodes(busy, LOOP_TABLE)
        drawing.edges(busy, LOOP_TABLE)
    drawing.edges(graph, RUN_TABLE)
    drawing.strays(graph, ("run", "loop"))
    return source_text(graph)
