"""Reads a grouped (statechart) DOT back into transitions: what a person sees, expanded.

Knows only the notation: an edge leaving a cluster's border (``ltail``) stands for one edge
from each state inside it; an edge into a group's ``H`` for one edge to each state inside,
guarded as its tooltip says (``[paused_in_<state>]``); ``dir=back`` swaps the ends; a label
line starting with ``[`` is the guard of the line before it; a ``<n>x`` line is a count;
lines under a state's rule (and under ``busy``'s in the combined view) are internal
transitions of that state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tests.diagrams.dotparse import _attrs, _unquote

_ID = r'"(?:[^"\\]|\\.)*"|[\w.]+'
_NODE = re.compile(rf"^\s*({_ID})\s*\[(.*)\]\s*$")
_EDGE = re.compile(rf"^\s*({_ID})\s*->\s*({_ID})\s*\[(.*)\]\s*$")
_SUB = re.compile(r"^\s*subgraph (\w+) \{\s*$")
_HTML = re.compile(r"label=<(<TABLE.*</TABLE>)>")

Transition = tuple[str, str, str, str, str | None, bool]
"""(machine, event, source, target, guard, internal)."""


@dataclass
class Statechart:
    nodes: dict[str, list[str]] = field(default_factory=dict)  # node -> enclosing clusters
    labels: dict[str, str] = field(default_factory=dict)  # node or cluster -> HTML label
    parents: dict[str, str | None] = field(default_factory=dict)  # cluster -> parent
    edges: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    def inside(self, cluster: str) -> set[str]:
        return {node for node, chain in self.nodes.items() if cluster in chain}

    def clusters_inside(self, cluster: str) -> set[str]:
        found = set()
        for name in self.parents:
            up = self.parents.get(name)
            while up:
                if up == cluster:
                    found.add(name)
                up = self.parents.get(up)
        return found


def read(source: str) -> Statechart:
    chart = Statechart()
    stack: list[str] = []
    for line in source.splitlines():
        if sub := _SUB.match(line):
            chart.parents[sub[1]] = stack[-1] if stack else None
            stack.append(sub[1])
        elif line.strip() == "}" and stack:
            stack.pop()
        elif edge := _EDGE.match(line):
            chart.edges.append((_unquote(edge[1]), _unquote(edge[2]), _attrs(edge[3])))
        elif node := _NODE.match(line):
            name = _unquote(node[1])
            chart.nodes[name] = list(stack)
            if html := _HTML.search(line):
                chart.labels[name] = html[1]
        elif stack and (html := _HTML.search(line)):
            chart.labels[stack[-1]] = html[1]
    return chart


def _is_state(node: str) -> bool:
    machine, _, name = node.partition(".")
    return machine in {"run", "loop"} and "." not in name and not name.startswith("__")


def _states(chart: Statechart, cluster: str, machine: str) -> set[str]:
    """The states of ``machine`` inside ``cluster``: its nodes, and busy for its cluster."""
    inside = chart.inside(cluster)
    found = {n.split(".", 1)[1] for n in inside if _is_state(n) and n.startswith(f"{machine}.")}
    if machine == "run" and "cluster_busy" in {cluster, *chart.clusters_inside(cluster)}:
        found.add("busy")
    return found


def _lines(label: str) -> list[tuple[str, str | None]]:
    lines: list[str] = []
    for line in label.split("\\n"):
        if line.startswith("[") and lines:
            lines[-1] += " " + line
        elif not re.fullmatch(r"\d+x", line):
            lines.append(line)
    parsed = []
    for line in lines:
        event, _, guard = line.partition(" [")
        parsed.append((event, guard.removesuffix("]") or None))
    return parsed


def _internal(chart: Statechart) -> list[Transition]:
    found = []
    for owner, html in chart.labels.items():
        name = re.search(r"<TD>(\w+)(?: \(now\))?</TD></TR><HR/>", html)
        body = re.search(r"<FONT[^>]*>(.*)</FONT>", html)
        assert name, html
        assert body, html
        machine = "run" if owner in {"cluster_busy"} else owner.split(".")[0]
        for line in body[1].split("<BR/>"):
            event, _, guard = line.partition(" [")
            found.append((machine, event, name[1], name[1], guard.removesuffix("]") or None, True))
    return found


def transitions(source: str) -> list[Transition]:
    """Every transition the drawing shows, each edge expanded to the rows it stands for.

    A list: a transition drawn twice (by two edges) is in it twice.
    """
    chart = read(source)
    found = _internal(chart)
    for tail, head, attrs in chart.edges:
        if attrs.get("style") == "invis" or ".__start" in tail or not attrs.get("label"):
            continue
        ltail, lhead = attrs.get("ltail"), attrs.get("lhead")
        if attrs.get("dir") == "back":
            tail, head, ltail, lhead = head, tail, lhead, ltail
        machine = tail.split(".")[0]
        sources = _states(chart, ltail, machine) if ltail else {tail.split(".", 1)[1]}
        lines = _lines(attrs["label"])
        if ".H." in head:
            group = chart.nodes[head][-1]
            prefix = re.search(r"\[(\w*)<state>\]", attrs["tooltip"])
            assert prefix, attrs
            for event, _ in lines:
                for target in _states(chart, group, machine):
                    for source in sources:
                        found.append((machine, event, source, target, prefix[1] + target, False))
            continue
        targets = _states(chart, lhead, machine) if lhead else {head.split(".", 1)[1]}
        assert len(targets) == 1, (head, lhead, targets)
        (target,) = targets
        for event, guard in lines:
            for source in sources:
                found.append((machine, event, source, target, guard, False))
    return found


def drawn_edges(source: str) -> int:
    """The edges a person sees: every edge but the hidden ones that steer the layout."""
    return sum(1 for *_, attrs in read(source).edges if attrs.get("style") != "invis")
