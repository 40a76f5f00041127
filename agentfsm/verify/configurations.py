"""The explored graph: configurations, the moves between them and the violations found.

A configuration is identified by its key (both states and the abstraction of the data), so
each is added once; the first time it is reached (breadth first: by a shortest path) is the
one kept. `Explorer` (`agentfsm.verify.explore`) fills it; the checks on paths
(`properties`, `agent`, `vacuity`) read it.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Hashable, Mapping
from operator import attrgetter

from agentfsm.fsm.data import RunData
from agentfsm.verify.domains import Domains
from agentfsm.verify.graph import Move, Node, Reads, Side, Violation

Snapshot = tuple[object, ...]

ReadKey = tuple[str, str, str, str, str]
"""(kind, machine, event, source, target): a transition's guards (kind ``guard``) or its
effects and enter actions (``effect``)."""

Record = tuple[ReadKey, Reads, "set[str] | None"]
"""What one step's guards or effects of one transition read (field → values seen) and, for
effects, wrote: for `vacuity`."""


class Configurations:
    """The configurations found, how each was first reached, and what broke on the way."""

    domains: Domains
    run: Side
    loop: Side
    snapshot: Callable[[RunData], Snapshot]
    """Every field of the data, to tell whether a refused event changed anything."""
    _fields: tuple[str, ...]
    _plain: Callable[[RunData], Hashable]
    """The fields of the abstraction that are part of a configuration as they are."""
    _parts: tuple[Callable[[RunData], Hashable], ...]
    """The other parts of the abstraction (`Domains.abstraction`'s functions)."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.index: dict[Hashable, int] = {}
        self.out: list[list[tuple[int, int]]] = []
        """Node → the (target node, move) of every step taken from it."""
        self.moves: list[Move] = []
        self.violations: dict[str, Violation] = {}
        self.initials: list[Mapping[str, object]] = []
        self.reads: dict[ReadKey, Reads] = {}
        """What each transition's guards or effects read; recorded on the first valuation
        of the environment."""
        self.writes: dict[ReadKey, set[str]] = {}
        """The same key → the fields its effects and enter actions write."""
        self.first_read: dict[tuple[ReadKey, str], tuple[int, int]] = {}
        """(key, field) → the first (node, move) at which it was read, in breadth-first order."""
        self.dirty = False
        """Whether a violation was found since it was last cleared (a step's own)."""

    def _abstraction(self) -> None:
        """How to read a configuration's key: plain fields at once, then the other parts."""
        parts: dict[str, Callable[[RunData], Hashable] | None] = {
            "state": None,
            "loop_state": None,
        }
        for name, part in self.domains.abstraction.items():
            parts[name] = part
        for name in self.domains.initial:
            parts.setdefault(name, None)
        self._plain = attrgetter(*(name for name, part in parts.items() if part is None))
        self._parts = tuple(part for part in parts.values() if part is not None)

    def _intern(self, move: Move) -> int:
        self.moves.append(move)
        return len(self.moves) - 1

    def key(self, data: RunData) -> Hashable:
        """The identity of the configuration ``data`` is in."""
        return (self._plain(data), *[part(data) for part in self._parts])

    def restore(self, data: RunData, snapshot: Snapshot) -> None:
        """Put back the fields a faulty refusal changed, so exploration goes on soundly."""
        # map() loops in C: this runs once per step, and a Python loop over every field
        # was a sixth of the exploration (and far more under a line tracer such as coverage).
        deque(map(setattr, itertools.repeat(data), self._fields, snapshot), maxlen=0)

    def copy(self, data: RunData) -> RunData:
        """A shallow copy: effects replace fields, they never mutate them in place."""
        twin: RunData = object.__new__(type(data))
        self.restore(twin, self.snapshot(data))
        return twin

    def _add(
        self,
        data: RunData,
        depth: int,
        parent: int,
        move: int,
        origin: int,
        key: Hashable | None = None,
    ) -> int:
        """The node of ``data``'s configuration, added if new (``key``: its key, if known)."""
        key = self.key(data) if key is None else key
        found = self.index.get(key)
        if found is not None:
            return found
        self.index[key] = len(self.nodes)
        self.nodes.append(Node(key, data, depth, parent, move, origin))
        self.out.append([])
        return len(self.nodes) - 1

    def _arrive(self, nid: int, mid: int, work: RunData) -> None:
        """A step from ``nid`` by ``mid`` reached ``work``: add it, and the edge to it."""
        node = self.nodes[nid]
        target = self._add(work, node.depth + 1, nid, mid, node.origin)
        self.out[nid].append((target, mid))

    def _violate(
        self,
        prop: str,
        node: int,
        move: int,
        outcome: str | None,
        message: str,
        loaded: Mapping[str, object] | None = None,
    ) -> None:
        self.dirty = True
        if prop not in self.violations:
            self.violations[prop] = Violation(prop, node, move, outcome, message, loaded or {})

    def _raised(self, nid: int, mid: int, what: str, error: Exception) -> None:
        self._violate(
            "exceptions", nid, mid, None, f"{what} raised {type(error).__name__}: {error}"
        )

    def _commit(self, records: tuple[Record, ...], at: tuple[int, int]) -> None:
        """Record what a step at ``at`` (node, move) read and wrote, for `vacuity`."""
        for key, reads, writes in records:
            into = self.reads.setdefault(key, {})
            for name, values in reads.items():
                into.setdefault(name, set()).update(values)
                self.first_read.setdefault((key, name), at)
            if writes is not None:
                self.writes.setdefault(key, set()).update(writes)
