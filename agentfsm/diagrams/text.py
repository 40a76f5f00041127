"""The machines as text: Mermaid ``stateDiagram-v2`` and Markdown transition tables.

Both are written from the same tables as the DOT diagrams, in the same order, so the three
cannot disagree and the same machine always gives the same text.
"""

from __future__ import annotations

from collections.abc import Callable

from agentfsm.diagrams.grouping import Chart, statechart
from agentfsm.diagrams.style import (
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
_HISTORY_CLASS = "    classDef history fill:white,stroke-width:1px"


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


def grouped_table(table: MachineTable) -> str:
    """The machine's transitions as a Markdown table, one line per transition of a drawn edge.

    A line from a group stands for one row from each of its states (the groups and their
    states are listed under the table); a line to ``H of <group>`` for one row to each state
    of the group, each guarded ``<prefix><state>``: back to the state the run was in.

    Args:
        table: `RUN_TABLE` or `LOOP_TABLE`.

    Returns:
        The table, then the list of groups.
    """
    chart = statechart(table)
    lines = ["| event | from | guard | to |", "|---|---|---|---|"]
    for edge in chart.edges:
        for line in edge.lines:
            event, _, guard = line.partition(" [")
            source = f"**{edge.source}**" if edge.from_group else edge.source
            if edge.to_history:
                guard, target = f"`{edge.history_guard}<state>`", f"H of **{edge.target}**"
            else:
                target = edge.target
            lines.append(f"| `{event}` | {source} | {guard.rstrip(']') or '—'} | {target} |")
    for state, rows in chart.internal:
        lines += [
            f"| `{row.event}` | {state} | {row.guard or '—'} | {state} (internal) |"
            for row in rows
        ]
    return "\n".join(lines) + "\n\n" + _group_list(chart)


def _group_list(chart: Chart) -> str:
    return "\n".join(
        f"- **{group.name}**: {', '.join(group.states)}"
        + (" (H: the state it was in)" if group.history else "")
        for group in chart.groups
    )


def markdown(view: View = "combined", *, flat: bool = False) -> str:
    """The transition table(s) of a view as Markdown, each under a heading.

    Args:
        view: ``run``, ``loop`` or ``combined``.
        flat: One line per row of the table (`markdown_table`) instead of one per
            transition of a drawn edge, groups named (`grouped_table`).

    Raises:
        ValueError: ``view`` is not ``run``, ``loop`` or ``combined``.
    """
    check_view(view)
    sections = {"run": [("RunLifecycle", RUN_TABLE)], "loop": [("TurnLoop", LOOP_TABLE)]}
    chosen = sections.get(view, sections["run"] + sections["loop"])
    write = markdown_table if flat else grouped_table
    return "\n\n".join(f"## {title}\n\n{write(table)}" for title, table in chosen) + "\n"


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


_Ids = Callable[[str], str]


def _grouped_members(
    chart: Chart, parent: str | None, indent: str, ids: _Ids, inner: list[str]
) -> list[str]:
    """The states and groups directly inside ``parent``, groups as composite states."""
    lines = []
    for state in chart.table.states:
        if chart.home(state) == parent:
            if inner and state == RunState.BUSY:
                lines += [f"{indent}state {state} {{", *inner, f"{indent}}}"]
            else:
                lines.append(f"{indent}{state}")
    for group in chart.children(parent):
        lines.append(f"{indent}state {ids(group.name)} {{")
        if group.history:
            lines.append(f'{indent}    state "H" as {ids(group.name)}_H')
        lines += _grouped_members(chart, group.name, indent + "    ", ids, inner)
        lines.append(f"{indent}}}")
    return lines


def _mermaid_grouped(
    table: MachineTable, indent: str, ids: _Ids, inner: list[str]
) -> tuple[list[str], list[str]]:
    """A machine's states (groups as composites, ``inner`` inside ``busy``), and its arrows.

    The arrows are written apart, at the top of the text: Mermaid (11) fails on arrows
    written inside a composite state that holds composite states of its own.
    """
    chart = statechart(table)
    states = [f"{indent}[*] --> {table.initial}"]
    states += _grouped_members(chart, None, indent, ids, inner)
    states.extend(f"{indent}{state} --> [*]" for state in table.states if state in table.final)
    arrows = []
    for edge in chart.edges:
        source = ids(edge.source) if edge.from_group else edge.source
        target = f"{ids(edge.target)}_H" if edge.to_history else edge.target
        arrows += [f"    {source} --> {target}: {line}" for line in edge.lines]
    for state, rows in chart.internal:
        arrows += [f"    {state} --> {state}: {edge_label(row)}" for row in rows]
    return states, arrows


_TABLES: dict[str, tuple[MachineTable, ...]] = {
    "run": (RUN_TABLE,),
    "loop": (LOOP_TABLE,),
    "combined": (RUN_TABLE, LOOP_TABLE),
}


def _grouped(view: View) -> tuple[list[str], list[str]]:
    """A view's grouped Mermaid lines, and the ids of its ``H`` states."""
    run_names = {group.name for group in statechart(RUN_TABLE).groups}

    def loop_ids(name: str) -> str:
        return f"loop_{name}" if view == "combined" and name in run_names else name

    def ids(table: MachineTable) -> _Ids:
        return str if table is RUN_TABLE else loop_ids

    histories = [
        f"{ids(table)(group.name)}_H"
        for table in _TABLES[view]
        for group in statechart(table).groups
        if group.history
    ]
    if view == "loop":
        states, arrows = _mermaid_grouped(LOOP_TABLE, "    ", loop_ids, [])
        return states + arrows, histories
    inner: list[str] = []
    inner_arrows: list[str] = []
    if view == "combined":
        inner, inner_arrows = _mermaid_grouped(LOOP_TABLE, "        ", loop_ids, [])
    states, arrows = _mermaid_grouped(RUN_TABLE, "    ", str, inner)
    return states + arrows + inner_arrows, histories


def _mermaid_flat(view: View) -> list[str]:
    if view == "loop":
        return _mermaid_machine(LOOP_TABLE, "    ")
    lines = _mermaid_machine(RUN_TABLE, "    ")
    if view == "combined":
        lines.append(f"    state {RunState.BUSY} {{")
        lines += _mermaid_machine(LOOP_TABLE, "        ")
        lines.append("    }")
    return lines


def mermaid(
    view: View = "combined", current: StateSource | None = None, *, flat: bool = False
) -> str:
    """A view as Mermaid ``stateDiagram-v2`` text (TurnLoop as a composite ``busy`` state).

    Grouped by default, as the DOT: each group a composite state, a transition from a group
    standing for one from each of its states, ``resume`` into the group's ``H`` state.

    Args:
        view: ``run``, ``loop`` or ``combined``.
        current: Where a run is now: its states get the ``current`` class.
        flat: One transition per row of the tables, no groups.

    Returns:
        The Mermaid source, ending with a newline.

    Raises:
        ValueError: ``view`` is not ``run``, ``loop`` or ``combined``.
        TypeError: ``current`` knows no run state.
    """
    check_view(view)
    where_now(current)
    classes = _mermaid_classes(_TABLES[view], current)
    if flat:
        return "\n".join(["stateDiagram-v2", *_mermaid_flat(view), *classes]) + "\n"
    body, histories = _grouped(view)
    classes.insert(len(_CLASSES), _HISTORY_CLASS)
    classes += [f"    class {name} history" for name in histories]
    return "\n".join(["stateDiagram-v2", *body, *classes]) + "\n"
