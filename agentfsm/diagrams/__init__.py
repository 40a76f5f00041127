"""Diagrams of the machines, drawn from their transition tables.

DOT for RunLifecycle (`run_diagram`), TurnLoop (`loop_diagram`) and both, TurnLoop inside
``busy`` (`combined_diagram`), optionally with a run's current states highlighted and the
path of its event log weighted by count; SVG and PNG rendered by Graphviz's ``dot``
(`render`, `save_diagram`); Mermaid ``stateDiagram-v2`` (`mermaid`) and Markdown tables
(`markdown_table`, `markdown`), which need no renderer.
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
from agentfsm.diagrams.rendering import FORMATS, render, save_diagram
from agentfsm.diagrams.text import markdown, markdown_table, mermaid

__all__ = [
    "FORMATS",
    "WAITING",
    "StateSource",
    "View",
    "combined_diagram",
    "diagram",
    "edge_label",
    "loop_diagram",
    "markdown",
    "markdown_table",
    "mermaid",
    "path_counts",
    "render",
    "run_diagram",
    "save_diagram",
    "state_kind",
]
