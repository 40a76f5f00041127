"""A machine's transition table as a statechart: groups of states, history, fewer edges.

The grouped drawings (Harel's statecharts, as in UML and XState) show the same transitions
as the flat ones with far fewer arrows:

- **Groups.** A set of states that an event, under the same guard, takes to the same target
  is drawn as a box around them (a *group*), and those transitions as one edge leaving the
  box: an edge from a group stands for one edge from each of its states, no more, no less.
- **History.** Rows of one event from one state back to several states, each guarded
  ``<prefix><target>`` (``resume [paused_in_busy]`` to ``busy``…), are one edge into the
  ``H`` of the group of those states: "back to the state it was in".
- **Internal transitions** are written inside their state, not drawn as loops.
- **Parallel edges** (same ends) are one edge with one label line per transition.

Nothing is declared but the groups' names (`agentfsm.states.groups`): the groups are found
in the table, choosing among the candidate sets the nested-or-disjoint family that draws the
fewest edges. `expand` turns a chart back into rows; it equals the table's rows exactly.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

from agentfsm.states.groups import GROUP_NAMES
from agentfsm.states.names import MachineName
from agentfsm.states.tables import TABLES, MachineTable, TransitionRow


@dataclass(frozen=True, slots=True)
class Group:
    """A box around states that share outgoing transitions (or a history)."""

    name: str
    """Its name (`GROUP_NAMES`), unique within its machine."""
    states: tuple[str, ...]
    """Every state inside it, nested groups' too, in the table's order."""
    parent: str | None
    """The group it sits in, or None at the top."""
    history: bool
    """True when it has a history marker ``H`` (an edge returns to where the run was)."""


@dataclass(frozen=True, slots=True)
class ChartEdge:
    """One drawn edge, and exactly the rows of the table it stands for."""

    source: str
    """A state, or a group's name when `from_group`."""
    target: str
    """A state, or a group's name when `to_history` (its ``H``)."""
    rows: tuple[TransitionRow, ...]
    """The rows drawn by this edge, in the table's order."""
    lines: tuple[str, ...]
    """Its label: one line per transition it draws (``event [guard]``)."""
    from_group: bool = False
    """True when the edge leaves a group's border: one row per state of the group."""
    to_history: bool = False
    """True when the edge enters a group's ``H``: one row per state of the group."""
    history_guard: str = ""
    """For an edge into ``H``: the guards' prefix (each row's guard is it + its target)."""


@dataclass(frozen=True, slots=True)
class Chart:
    """A machine drawn as a statechart: its groups, edges and internal transitions."""

    table: MachineTable
    """The machine."""
    groups: tuple[Group, ...]
    """Its groups, each after the group it sits in."""
    edges: tuple[ChartEdge, ...]
    """Its drawn edges, in the order of their first row."""
    internal: tuple[tuple[str, tuple[TransitionRow, ...]], ...]
    """The internal transitions of each state that has some, written inside it."""

    def group(self, name: str) -> Group:
        """The group named ``name``."""
        return next(group for group in self.groups if group.name == name)

    def children(self, parent: str | None) -> tuple[Group, ...]:
        """The groups directly inside ``parent`` (None: at the top)."""
        return tuple(group for group in self.groups if group.parent == parent)

    def home(self, state: str) -> str | None:
        """The innermost group holding ``state``, or None."""
        holding = [group for group in self.groups if state in group.states]
        return min(holding, key=lambda group: len(group.states)).name if holding else None


def edge_line(row: TransitionRow) -> str:
    """A transition as one label line: its event, then its guard in brackets."""
    return row.event + (f" [{row.guard}]" if row.guard else "")


def history_prefix(rows: Iterable[TransitionRow]) -> str | None:
    """The guard prefix when ``rows`` form a history (guard = prefix + target), else None."""
    found = {
        row.guard[: -len(row.target)]
        for row in rows
        if row.guard and row.guard.endswith(row.target) and len(row.guard) > len(row.target)
    }
    listed = list(rows)
    if len(found) != 1 or len(listed) < 2:
        return None
    prefix = found.pop()
    return prefix if all(row.guard == prefix + row.target for row in listed) else None


_Key = tuple[str, str | None, str]


def _shared(table: MachineTable) -> dict[_Key, list[TransitionRow]]:
    """The external rows by (event, guard, target)."""
    shared: dict[_Key, list[TransitionRow]] = {}
    for row in table.rows:
        if not row.internal:
            shared.setdefault((row.event, row.guard, row.target), []).append(row)
    return shared


def _histories(table: MachineTable) -> dict[tuple[str, str], list[TransitionRow]]:
    """Rows of one event from one state that return, by guard, to where the run was."""
    by_source: dict[tuple[str, str], list[TransitionRow]] = {}
    for row in table.rows:
        if not row.internal:
            by_source.setdefault((row.event, row.source), []).append(row)
    return {
        key: rows
        for key, rows in by_source.items()
        if history_prefix(rows) is not None and key[1] not in {r.target for r in rows}
    }


def _candidates(table: MachineTable) -> tuple[frozenset[str], ...]:
    found: dict[frozenset[str], None] = {}
    for (_, _, target), rows in _shared(table).items():
        sources = frozenset(row.source for row in rows)
        if len(sources) > 1 and target not in sources:
            found[sources] = None
    for rows in _histories(table).values():
        found[frozenset(row.target for row in rows)] = None
    return tuple(found)


def _laminar(sets: tuple[frozenset[str], ...]) -> bool:
    return all(not (a & b) or a <= b or b <= a for a, b in itertools.combinations(sets, 2))


@dataclass(frozen=True, slots=True)
class _Part:
    source: str
    target: str
    rows: tuple[TransitionRow, ...]
    from_group: bool = False
    to_history: bool = False


class _Namer:
    def __init__(self, table: MachineTable, chosen: tuple[frozenset[str], ...]) -> None:
        declared = GROUP_NAMES.get(table.name, {})
        self.names: dict[frozenset[str], str] = {}
        for members in chosen:
            name = declared.get(members) or f"group_{len(self.names) + 1}"
            self.names[members] = name

    def __call__(self, members: frozenset[str]) -> str:
        return self.names[members]


def _cover(sources: list[str], target: str, chosen: tuple[frozenset[str], ...]) -> list[object]:
    """The fewest pieces covering ``sources``: the largest chosen groups inside, then states."""
    left = set(sources)
    pieces: list[object] = []
    for members in sorted(chosen, key=len, reverse=True):
        if members <= left and target not in members:
            pieces.append(members)
            left -= members
    pieces.extend(state for state in sources if state in left)
    return pieces


def _parts(table: MachineTable, chosen: tuple[frozenset[str], ...], name: _Namer) -> list[_Part]:
    parts: list[_Part] = []
    histories = {
        key: rows
        for key, rows in _histories(table).items()
        if frozenset(row.target for row in rows) in chosen
    }
    in_history = {row for rows in histories.values() for row in rows}
    for (_, source), rows in histories.items():
        members = frozenset(row.target for row in rows)
        parts.append(_Part(source, name(members), tuple(rows), to_history=True))
    for (_, _, target), rows in _shared(table).items():
        rows = [row for row in rows if row not in in_history]
        by_source = {row.source: row for row in rows}
        for piece in _cover(list(by_source), target, chosen):
            if isinstance(piece, frozenset):
                picked = tuple(row for row in rows if row.source in piece)
                parts.append(_Part(name(piece), target, picked, from_group=True))
            else:
                parts.append(_Part(str(piece), target, (by_source[str(piece)],)))
    order = {row: index for index, row in enumerate(table.rows)}
    return sorted(parts, key=lambda part: order[part.rows[0]])


def _edges(parts: list[_Part]) -> tuple[ChartEdge, ...]:
    merged: dict[tuple[str, str, bool, bool], list[_Part]] = {}
    for part in parts:
        merged.setdefault((part.source, part.target, part.from_group, part.to_history), []).append(
            part
        )
    edges = []
    for (source, target, from_group, to_history), same in merged.items():
        lines = tuple(
            str(part.rows[0].event) if to_history else edge_line(part.rows[0]) for part in same
        )
        rows = tuple(row for part in same for row in part.rows)
        prefix = (history_prefix(rows) or "") if to_history else ""
        edges.append(ChartEdge(source, target, rows, lines, from_group, to_history, prefix))
    return tuple(edges)


def _groups(
    table: MachineTable, chosen: tuple[frozenset[str], ...], name: _Namer, parts: list[_Part]
) -> tuple[Group, ...]:
    histories = {part.target for part in parts if part.to_history}
    groups = []
    for members in sorted(chosen, key=len, reverse=True):
        around = [other for other in chosen if members < other]
        parent = name(min(around, key=len)) if around else None
        states = tuple(state for state in table.states if state in members)
        groups.append(Group(name(members), states, parent, name(members) in histories))
    return tuple(groups)


def _build(table: MachineTable, chosen: tuple[frozenset[str], ...]) -> Chart:
    name = _Namer(table, chosen)
    parts = _parts(table, chosen, name)
    internal: dict[str, list[TransitionRow]] = {}
    for row in table.rows:
        if row.internal:
            internal.setdefault(row.source, []).append(row)
    return Chart(
        table,
        _groups(table, chosen, name, parts),
        _edges(parts),
        tuple((state, tuple(rows)) for state, rows in internal.items()),
    )


EXHAUSTIVE = 12
"""Up to this many candidate groups every family is tried (4,096 at most; agentfsm's tables
have 5 and 2); past it, `_greedy` picks them, largest first."""


def _greedy(candidates: tuple[frozenset[str], ...]) -> tuple[frozenset[str], ...]:
    chosen: list[frozenset[str]] = []
    for members in sorted(candidates, key=len, reverse=True):
        if _laminar((*chosen, members)):
            chosen.append(members)
    return tuple(chosen)


_CHARTS: dict[MachineName, tuple[MachineTable, Chart]] = {}
"""The charts of `RUN_TABLE` and `LOOP_TABLE`, found once (a search over group families)."""


def statechart(table: MachineTable) -> Chart:
    """``table`` as a statechart: the nested-or-disjoint groups that draw the fewest edges.

    Every family of candidate groups (the sources an event, guard and target share; the
    targets of a history) whose sets are nested or disjoint is tried; the one with the
    fewest edges wins, then the one with fewer groups, then the first found. (Past
    `EXHAUSTIVE` candidates, the largest are taken first that nest or keep apart.)
    """
    cached = _CHARTS.get(table.name)
    if cached is not None and cached[0] is table:
        return cached[1]
    candidates = _candidates(table)
    best = _build(table, ())
    if len(candidates) > EXHAUSTIVE:
        return _build(table, _greedy(candidates))
    for size in range(1, len(candidates) + 1):
        for chosen in itertools.combinations(candidates, size):
            if _laminar(chosen):
                chart = _build(table, chosen)
                if len(chart.edges) < len(best.edges):
                    best = chart
    if table is TABLES.get(table.name):
        _CHARTS[table.name] = (table, best)
    return best


def expand(chart: Chart) -> list[TransitionRow]:
    """The rows a chart draws: each edge expanded (a group's border and ``H`` to its states).

    Computed from the edges' ends, groups and labels alone (not from `ChartEdge.rows`), so
    a test comparing it with the table checks what is drawn.
    """
    rows: list[TransitionRow] = []
    for edge in chart.edges:
        if edge.to_history:
            for line in edge.lines:
                rows += [
                    TransitionRow(line, edge.source, state, edge.history_guard + state)
                    for state in chart.group(edge.target).states
                ]
            continue
        sources = chart.group(edge.source).states if edge.from_group else (edge.source,)
        for line in edge.lines:
            event, _, guard = line.partition(" [")
            rows += [
                TransitionRow(event, source, edge.target, guard.rstrip("]") or None)
                for source in sources
            ]
    rows += [row for _, internal in chart.internal for row in internal]
    return rows
