"""A small reader of the DOT the graphviz package writes: one node or edge per line."""

from __future__ import annotations

import re
from dataclasses import dataclass

_ID = r'"(?:[^"\\]|\\.)*"|[\w.]+'
_NODE = re.compile(rf"^\s*({_ID})\s*\[(.*)\]\s*$")
_EDGE = re.compile(rf"^\s*({_ID})\s*->\s*({_ID})\s*\[(.*)\]\s*$")
_ATTR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^\s\]]+)')


def _unquote(text: str) -> str:
    return text[1:-1].replace('\\"', '"') if text.startswith('"') else text


def _attrs(text: str) -> dict[str, str]:
    return {key: _unquote(value) for key, value in _ATTR.findall(text)}


@dataclass(frozen=True)
class Dot:
    nodes: dict[str, dict[str, str]]
    edges: list[tuple[str, str, dict[str, str]]]
    clusters: list[str]

    def edge(self, source: str, target: str, label_start: str) -> dict[str, str]:
        found = [
            a
            for s, t, a in self.edges
            if (s, t) == (source, target) and a.get("label", "").startswith(label_start)
        ]
        assert len(found) == 1, (source, target, label_start, found)
        return found[0]


def parse(source: str) -> Dot:
    assert source.startswith("digraph ")
    assert source.rstrip().endswith("}")
    nodes: dict[str, dict[str, str]] = {}
    edges: list[tuple[str, str, dict[str, str]]] = []
    clusters = re.findall(r"^\s*subgraph (\w+) \{", source, re.MULTILINE)
    for line in source.splitlines():
        if edge := _EDGE.match(line):
            edges.append((_unquote(edge[1]), _unquote(edge[2]), _attrs(edge[3])))
        elif node := _NODE.match(line):
            nodes[_unquote(node[1])] = _attrs(node[2])
    return Dot(nodes, edges, clusters)
