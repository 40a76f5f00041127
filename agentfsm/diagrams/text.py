"""The machines as text: Mermaid ``stateDiagram-v2`` and Markdown transition tables.

Both are written from the same tables as the DOT diagrams, in the same order, so the three
cannot disagree and the same machine always gives the same text.
"""

from __future__ import annotations

from agentfsm.diagrams.dot import (
    StateSource,
    View,
    check_view,
    edge_label,
    state_kind,
    where_now,
)
from agentfsm.states.names import RunState
from agentfsm.states.tables import LOOP_TABLE, RUN_TABLE, MachineTable

_CLASSES = (
    "    classDef initial fill:#dbeafe,stroke-width:2px",
    "    classDef waiting fill:#fef3c7,stroke-dasharray:4 2",
    "    classDef final fill:#e5e7eb",
    "    classDef current fill:#fecaca,stroke:#dc2626,stroke-width:3px",
)


def markdown_table(table: MachineTable) -> str:
    """The machine's transitions as a Markdown table: one line per row of the table.

    Args:
        table: `RUN_TABLE` or `LOOP_TABLE`.

    Returns:
        The table, with the columns event, from, guard and to (``(internal)`` marked).
    """
    lines = ["| event | from | guard | to |", "|---|---|---|---|"]
    for row in table.rows:
        target = f"{row.target} (internal)" if row.internal else row.target
        lines.append(f"| `{row.event}` | {row.source} | {row.guard or '—'} | {target} |")
    return "\n".join(lines)


def markdown(view: View = "combined") -> str:
    """The transition table(s) of a view as Markdown, each under a heading.

    Raises:
        ValueError: ``view`` is not ``run``, ``loop`` or ``combined``.
    """
    check_view(view)
    sections = {"run": [("RunLifecycle", RUN_TABLE)], "loop": [("TurnLoop", LOOP_TABLE)]}
    chosen = sections.get(view, sections["run"] + sections["loop"])
    return "\n\n".join(f"## {title}\n\n{markdown_table(table)}" for title, table in chosen) + "\n"


def _mermaid_machine(table: MachineTable, indent: str, skip: str = "") -> list[str]:
    lines = [f"{indent}[*] --> {table.initial}"]
    for row in table.rows:
        lines.append(f"{indent}{row.source} --> {row.target}: {edge_label(row)}")
    lines.extend(f"{indent}{state} --> [*]" for state in table.states if state in table.final)
    return lines


def _mermaid_classes(tables: tuple[MachineTable, ...], current: StateSource | None) -> list[str]:
    now = set(where_now(current)) - {None}
    lines = list(_CLASSES)
    for table in tables:
        for state in table.states:
            kind = state_kind(table, state)
            if kind != "state":
                lines.append(f"    class {state} {kind}")
    lines.extend(f"    class {s} current" for t in tables for s in t.states if s in now)
    return lines


def mermaid(view: View = "combined", current: StateSource | None = None) -> str:
    """A view as Mermaid ``stateDiagram-v2`` text (TurnLoop as a composite ``busy`` state).

    Args:
        view: ``run``, ``loop`` or ``combined``.
        current: Where a run is now: its states get the ``current`` class.

    Returns:
        The Mermaid source, ending with a newline.

    Raises:
        ValueError: ``view`` is not ``run``, ``loop`` or ``combined``.
        TypeError: ``current`` knows no run state.
    """
    check_view(view)
    where_now(current)
    lines = ["stateDiagram-v2"]
    if view == "loop":
        tables: tuple[MachineTable, ...] = (LOOP_TABLE,)
        lines += _mermaid_machine(LOOP_TABLE, "    ")
    else:
        tables = (RUN_TABLE,) if view == "run" else (RUN_TABLE, LOOP_TABLE)
        lines += _mermaid_machine(RUN_TABLE, "    ")
    if view == "combined":
        lines.append(f"    state {RunState.BUSY} {{")
        lines += _mermaid_machine(LOOP_TABLE, "        ")
        lines.append("    }")
    lines += _mermaid_classes(tables, current)
    return "\n".join(lines) + "\n"
