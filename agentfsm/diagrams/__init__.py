"""Diagrams of the machines, drawn from their transition tables.

DOT for RunLifecycle (`run_diagram`), TurnLoop (`loop_diagram`) and both, TurnLoop inside
``busy`` (`combined_diagram`), optionally with a run's current states highlighted and the
path of its event log weighted by count; SVG and PNG rendered by Graphviz's ``dot``
(`render`, `save_diagram`); Mermaid ``stateDiagram-v2`` (`mermaid`) and Markdown tables
(`markdown_table`, `grouped_table`, `markdown`), which need no renderer.

Each is drawn as a statechart by default (`statechart`: groups of states whose shared edges
are drawn once from the group's border, a history ``H`` for ``resume``, internal
transitions written in their state); ``flat=True`` draws one edge per row instead.
`expand` turns a chart back into the rows it stands for.
"""

from __future__ import annotations

from agentfsm.diagrams.dot import (
    WAITING,
    StateSource,
    View,
    combined_diagram,
    diagram,
    edge_label,
    loop_diagram,
    path_counts,
    run_diagram,
    state_kind,
)
from agentfsm.diagrams.grouping import Chart, ChartEdge, Group, expand, statechart
from agentfsm.diagrams.rendering import FORMATS, render, save_diagram
from agentfsm.diagrams.text import grouped_table, markdown, markdown_table, mermaid

__all__ = [
    "FORMATS",
    "WAITING",
    "Chart",
    "ChartEdge",
    "Group",
    "StateSource",
    "View",
    "combined_diagram",
    "diagram",
    "edge_label",
    "expand",
    "grouped_table",
    "loop_diagram",
    "markdown",
    "markdown_table",
    "mermaid",
    "path_counts",
    "render",
    "run_diagram",
    "save_diagram",
    "state_kind",
    "statechart",
]
