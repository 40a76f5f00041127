"""The explored graph's parts: moves, configurations, violations, and a recording proxy.

A `Move` is one step's input; a `Node` one reachable configuration; a `Violation` a step
that breaks a property. `Traced` stands in for the run's data while a guard or an effect
runs, and records which fields it reads (with the values it saw) and writes.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field

from agentfsm.fsm.compiled import CompiledMachine, CompiledTransition
from agentfsm.fsm.data import RunData
from agentfsm.fsm.guards import Guard
from agentfsm.states.effects import Postcondition
from agentfsm.states.names import MachineName
from agentfsm.verify.domains import Arguments

Reads = dict[str, set[object]]
"""Field name → the values seen when it was read."""


@dataclass(frozen=True, slots=True)
class Move:
    """One step's input: an event for one machine, its arguments and the environment."""

    machine: MachineName
    """The machine the event is sent to."""
    event: str
    """The event's name."""
    arguments: Arguments
    """The event's arguments."""
    environment: Mapping[str, object]
    """The environment fields' values, set on the data before the event is sent."""


@dataclass(slots=True)
class Node:
    """One reachable configuration and how it was first reached."""

    key: Hashable
    data: RunData
    depth: int
    parent: int
    """The node it was first reached from (-1 for an initial configuration)."""
    move: int
    """The move that reached it from ``parent`` (-1 for an initial configuration)."""
    origin: int
    """Which initial configuration its shortest path starts from."""
    expanded: bool = False


@dataclass(frozen=True, slots=True)
class Violation:
    """A step that breaks a property: from a node, a move, and what came of it."""

    prop: str
    node: int
    move: int
    outcome: str | None
    """The target state the step reached, or None when the event was refused."""
    message: str
    loaded: Mapping[str, object] = field(default_factory=dict)
    """Fields set on the node's data before the step (see `Counterexample.loaded`)."""


@dataclass(slots=True)
class Side:
    """One machine as the explorer drives it."""

    name: MachineName
    compiled: CompiledMachine
    moves: dict[str, tuple[tuple[int, ...], ...]] = field(default_factory=dict)
    """Event → for each valuation of its arguments, the ids of the moves that send it
    with that valuation, one per valuation of the environment."""
    bare: dict[str, int] = field(default_factory=dict)
    """Event → the move that sends it with no arguments (for states with no edge of it)."""
    own: frozenset[str] = frozenset()
    """The events this machine has a transition for, in some state."""
    plans: dict[
        str, tuple[tuple[tuple[CompiledTransition, ...], tuple[tuple[int, ...], ...]], ...]
    ] = field(default_factory=dict)
    """State → the events sent from it after its first configuration: for each event with
    an edge (or a spec row) from it, its candidates and its moves. A state is in it once
    its first configuration sent every event, those with no edge from it too."""
    spec: dict[tuple[str, str], tuple[tuple[str, str | None, Guard | None], ...]] = field(
        default_factory=dict
    )
    """(source, event) → the spec table's (target, guard name, guard) rows, for conformance."""
    spec_states: frozenset[str] = frozenset()
    """The states the spec table knows: (state, event) pairs of them it governs."""
    spec_events: frozenset[str] = frozenset()
    """The events the spec table knows."""
    effects: dict[tuple[str, str], tuple[Postcondition, ...]] = field(default_factory=dict)
    """(source, event) → the spec table's postconditions for it."""
    effect_fields: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)
    """(source, event) → the fields its postconditions name (set, or read before)."""


class Traced:
    """The run's data, recording each field read through it (and its value) and written.

    Args:
        data: The data to stand in for.
        reads: Where to record reads: field → the values seen.
        writes: Where to record the names of the fields written, if anywhere.
    """

    __slots__ = ("_data", "_reads", "_writes")
    _data: RunData
    _reads: Reads
    _writes: set[str] | None

    def __init__(self, data: RunData, reads: Reads, writes: set[str] | None = None) -> None:
        object.__setattr__(self, "_data", data)
        object.__setattr__(self, "_reads", reads)
        object.__setattr__(self, "_writes", writes)

    def __getattr__(self, name: str) -> object:
        found = getattr(self._data, name)
        try:
            self._reads.setdefault(name, set()).add(found)
        except TypeError:  # unhashable: its text stands for it
            self._reads.setdefault(name, set()).add(repr(found))
        return found

    def __setattr__(self, name: str, value: object) -> None:
        if self._writes is not None:
            self._writes.add(name)
        setattr(self._data, name, value)


def merge(into: Reads, more: Reads) -> None:
    """Add the reads ``more`` records to ``into``."""
    for name, values in more.items():
        into.setdefault(name, set()).update(values)


def traced_effects(
    transition: CompiledTransition, data: RunData, state_field: str, args: Arguments
) -> tuple[Reads, set[str]]:
    """Run a transition's effects and enter actions on ``data``; what they read and wrote."""
    reads: Reads = {}
    writes: set[str] = set()
    model = Traced(data, reads, writes)
    for effect in transition.effects:
        effect(model, transition.source, **args)
    setattr(model, state_field, transition.target)
    for enter in transition.enters:
        enter(model, **args)
    return reads, writes
