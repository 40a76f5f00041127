"""The exploration: every reachable configuration of both machines, by sending real events.

Breadth first from one configuration per initial valuation, each step sends one event to
one of the run's compiled machines (`Machine.send`) with one valuation of its arguments
and of the environment. A configuration is identified by its key (both states and the
abstraction of the data), so each is expanded once, and its first visit is by a shortest
path. Checks that concern one step (I1, I4, I8, determinism, conformance) are made as the
steps are taken; the first failure of each, in breadth-first order, is a shortest
counterexample. The graph is kept for the checks that concern paths (`properties`).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import deque
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter

from agentfsm.errors import IllegalTransitionError
from agentfsm.fsm.compiled import CompiledMachine, CompiledTransition, Machine
from agentfsm.fsm.data import RunData
from agentfsm.fsm.emitter import Emitter
from agentfsm.fsm.guards import Guard
from agentfsm.states.names import MachineName
from agentfsm.states.tables import MachineTable
from agentfsm.verify.domains import Arguments, Domains

_NONE: dict[str, tuple[CompiledTransition, ...]] = {}


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
    foreign_checked: set[tuple[str, str]] = field(default_factory=set)
    """(state, event) pairs of other events already checked to be refused."""
    spec: dict[tuple[str, str], tuple[tuple[str, Guard | None], ...]] = field(default_factory=dict)
    """(source, event) → the spec table's (target, guard) rows, for conformance."""


Snapshot = tuple[object, ...]


class Explorer:
    """Explores the product of a run's two compiled machines over the given domains.

    Args:
        run: The compiled RunLifecycle (or a subclass of it).
        loop: The compiled TurnLoop.
        domains: What to try, and how to read a configuration.
        make_data: Builds a run's data from its run id.
        spec: The tables each machine must conform to, or None to skip conformance.
        spec_guards: The guards the spec tables name, by name.
    """

    def __init__(
        self,
        run: CompiledMachine,
        loop: CompiledMachine,
        domains: Domains,
        make_data: Callable[[str], RunData],
        spec: Mapping[MachineName, MachineTable] | None,
        spec_guards: Mapping[str, Guard],
    ) -> None:
        domains.validate()
        self.domains = domains
        self.make_data = make_data
        self.run = Side(MachineName.RUN, run)
        self.loop = Side(MachineName.LOOP, loop)
        self.emitter = Emitter("verify", clock=lambda: 0.0)
        self.nodes: list[Node] = []
        self.index: dict[Hashable, int] = {}
        self.out: list[list[tuple[int, int]]] = []
        self.moves: list[Move] = []
        self.violations: dict[str, Violation] = {}
        self.initials: list[Mapping[str, object]] = []
        self.sends = 0
        self.complete = True
        self.events = tuple(dict.fromkeys([*_events(run), *_events(loop), *domains.events]))
        self._fields = tuple(f.name for f in dataclasses.fields(make_data("probe")))
        self.snapshot: Callable[[RunData], Snapshot] = attrgetter(*self._fields)
        """Every field of the data, to tell whether a refused event changed anything."""
        self._key_parts = self._abstraction()
        names = tuple(domains.environment)
        self.environments: tuple[dict[str, object], ...] = tuple(
            dict(zip(names, values, strict=True))
            for values in itertools.product(*domains.environment.values())
        )
        self._environment_fields = frozenset(names)
        for side in (self.run, self.loop):
            self._prepare(side, spec, spec_guards)

    def _abstraction(self) -> tuple[Callable[[RunData], Hashable], ...]:
        parts: dict[str, Callable[[RunData], Hashable]] = {
            "state": attrgetter("state"),
            "loop_state": attrgetter("loop_state"),
        }
        for name, part in self.domains.abstraction.items():
            parts[name] = part if part is not None else attrgetter(name)
        for name in self.domains.initial:
            parts.setdefault(name, attrgetter(name))
        return tuple(parts.values())

    def _prepare(
        self,
        side: Side,
        spec: Mapping[MachineName, MachineTable] | None,
        spec_guards: Mapping[str, Guard],
    ) -> None:
        side.own = frozenset(_events(side.compiled))
        for event in self.events:
            side.bare[event] = self._intern(Move(side.name, event, {}, {}))
            side.moves[event] = tuple(
                tuple(
                    self._intern(Move(side.name, event, arguments, environment))
                    for environment in self.environments
                )
                for arguments in self.domains.events.get(event, ({},))
            )
        table = spec.get(side.name) if spec is not None else None
        for row in table.rows if table is not None else ():
            guard = None if row.guard is None else _guard(spec_guards, row.guard)
            side.spec.setdefault((row.source, row.event), ())
            side.spec[row.source, row.event] += ((row.target, guard),)

    def _intern(self, move: Move) -> int:
        self.moves.append(move)
        return len(self.moves) - 1

    # -- the configurations ------------------------------------------------------------

    def key(self, data: RunData) -> Hashable:
        """The identity of the configuration ``data`` is in."""
        return tuple(part(data) for part in self._key_parts)

    def restore(self, data: RunData, snapshot: Snapshot) -> None:
        """Put back the fields a faulty refusal changed, so exploration goes on soundly."""
        for name, value in zip(self._fields, snapshot, strict=True):
            setattr(data, name, value)

    def copy(self, data: RunData) -> RunData:
        """A shallow copy: effects replace fields, they never mutate them in place."""
        twin: RunData = object.__new__(type(data))
        for name in self._fields:
            setattr(twin, name, getattr(data, name))
        return twin

    def _add(self, data: RunData, depth: int, parent: int, move: int, origin: int) -> int:
        key = self.key(data)
        found = self.index.get(key)
        if found is not None:
            return found
        self.index[key] = len(self.nodes)
        self.nodes.append(Node(key, data, depth, parent, move, origin))
        self.out.append([])
        return len(self.nodes) - 1

    def _initial_data(self) -> list[RunData]:
        names = tuple(self.domains.initial)
        found = []
        for values in itertools.product(*self.domains.initial.values()):
            overrides = dict(zip(names, values, strict=True))
            data = self.make_data("verify")
            for name, value in overrides.items():
                setattr(data, name, value)
            Machine(self.run.compiled, data, self.emitter)  # enters the initial state if unset
            self.initials.append(overrides)
            found.append(data)
        return found

    def explore(self) -> None:
        """Explore breadth first until every reachable configuration is expanded."""
        queue: deque[int] = deque()
        for origin, data in enumerate(self._initial_data()):
            queue.append(self._add(data, 0, -1, -1, origin))
        while queue:
            node = queue.popleft()
            if len(self.nodes) > self.domains.max_configurations:
                self.complete = False
                return
            before = len(self.nodes)
            self._expand(node)
            queue.extend(range(before, len(self.nodes)))

    # -- one configuration's steps -----------------------------------------------------

    def _violate(self, prop: str, node: int, move: int, outcome: str | None, message: str) -> None:
        if prop not in self.violations:
            self.violations[prop] = Violation(prop, node, move, outcome, message)

    def _expand(self, nid: int) -> None:
        node = self.nodes[nid]
        data = node.data
        if data.iteration > data.max_iterations:
            self._violate(
                "I8",
                nid,
                -1,
                None,
                f"iteration {data.iteration} exceeds max_iterations {data.max_iterations}",
            )
            return  # past the cap the abstraction is no longer finite: go no further
        node.expanded = True
        for side in (self.run, self.loop):
            state = getattr(data, side.compiled.state_field)
            if state is None:
                continue  # no turn has started its loop yet
            by_event = side.compiled.dispatch.get(state, _NONE)
            for event in self.events:
                candidates = by_event.get(event)
                if candidates is None:
                    self._unknown(nid, side, state, event, data)
                    continue
                for by_environment in side.moves[event]:
                    self._vary(nid, side, by_environment, candidates)

    def _unknown(self, nid: int, side: Side, state: str, event: str, data: RunData) -> None:
        # An event of this machine is refused in every configuration without an edge of it.
        # One the machine has nowhere (the other machine's) is refused by the table lookup
        # before any data is read, so one configuration per state stands for all of them.
        if event in side.own or (state, event) not in side.foreign_checked:
            side.foreign_checked.add((state, event))
            self._refuse(nid, side, side.bare[event], data)

    def _vary(
        self,
        nid: int,
        side: Side,
        by_environment: tuple[int, ...],
        candidates: tuple[CompiledTransition, ...],
    ) -> None:
        # A step whose guards and effects read no environment field does the same under
        # every valuation of the environment (it cannot tell them apart), and environment
        # fields are not part of a configuration: one valuation stands for all of them.
        traced = len(by_environment) > 1
        reads = self._step(nid, side, by_environment[0], candidates, traced=traced)
        if not reads.isdisjoint(self._environment_fields):
            for mid in by_environment[1:]:
                self._step(nid, side, mid, candidates, traced=False)

    def _step(
        self,
        nid: int,
        side: Side,
        mid: int,
        candidates: tuple[CompiledTransition, ...],
        *,
        traced: bool,
    ) -> set[str]:
        """Take one move from a node; returns the fields its guards and effects read."""
        data = self.nodes[nid].data
        move = self.moves[mid]
        for name, value in move.environment.items():
            setattr(data, name, value)
        before = self.snapshot(data)
        args = move.arguments
        reads: set[str] = set()
        model = _Traced(data, reads) if traced else data
        enabled = [t for t in candidates if all(guard(model, **args) for guard in t.guards)]
        if self.snapshot(data) != before:
            # A guard wrote to the data. The node must stay as it was reached; whether the
            # write breaks I4 shows when the event is sent (refused, it must change nothing).
            self.restore(data, before)
        if len(enabled) > 1:
            self._overlap(nid, mid, enabled)
        if not enabled:
            self._refuse(nid, side, mid, data, before)
        else:
            self._take(nid, side, mid, enabled[0], data, reads if traced else None)
        return reads

    def _overlap(self, nid: int, mid: int, enabled: list[CompiledTransition]) -> None:
        targets = ", ".join(repr(t.target) for t in enabled)
        guards = "; ".join(" and ".join(t.guard_names) or "no guard" for t in enabled)
        self._violate(
            "determinism",
            nid,
            mid,
            enabled[0].target,
            f"{len(enabled)} transitions of {self.moves[mid].event!r} are enabled at once, "
            f"to {targets} (guards: {guards})",
        )

    def _refuse(
        self, nid: int, side: Side, mid: int, data: RunData, before: Snapshot | None = None
    ) -> None:
        move = self.moves[mid]
        state = getattr(data, side.compiled.state_field)
        before = self.snapshot(data) if before is None else before
        seq = self.emitter.seq
        self.sends += 1
        try:
            Machine(side.compiled, data, self.emitter).send(move.event, **move.arguments)
        except IllegalTransitionError as error:
            changed = self.snapshot(data) != before or self.emitter.seq != seq
            allowed = side.compiled.allowed.get(state, ())
            named = (error.state, error.event, error.allowed) == (state, move.event, allowed)
            if changed or not named:
                what = self._changes(data, before) if changed else f"named {error.state!r}"
                self.restore(data, before)
                self.emitter.seq = seq
                self._violate("I4", nid, mid, None, f"refusing {move.event!r} {what}")
            return
        outcome = getattr(data, side.compiled.state_field)
        self.restore(data, before)
        self.emitter.seq = seq
        self._violate(
            "I4",
            nid,
            mid,
            outcome,
            f"{move.event!r} was accepted in {state!r} though no transition was enabled",
        )

    def _changes(self, data: RunData, before: Snapshot) -> str:
        changed = [
            f"{name}: {old!r} → {getattr(data, name)!r}"
            for name, old in zip(self._fields, before, strict=True)
            if getattr(data, name) != old
        ]
        return "changed " + ("; ".join(changed) or "the event log")

    def _take(
        self,
        nid: int,
        side: Side,
        mid: int,
        chosen: CompiledTransition,
        data: RunData,
        reads: set[str] | None,
    ) -> None:
        move = self.moves[mid]
        field_name = side.compiled.state_field
        source = getattr(data, field_name)
        # The spec's guards may read the environment where the machine's do not (a guard
        # the machine forgot): their reads count too, or one valuation would stand for all.
        spec_model = data if reads is None else _Traced(data, reads)
        if not self._conforms(side, source, move.event, chosen.target, spec_model, move.arguments):
            self._violate(
                "conformance",
                nid,
                mid,
                chosen.target,
                f"{move.event!r} took {source!r} → {chosen.target!r}, which the spec table "
                "does not allow here (no row for that target whose guard holds)",
            )
        work = self.copy(data)
        self.sends += 1
        model = work if reads is None else _Traced(work, reads)
        try:
            emitted = Machine(side.compiled, model, self.emitter).send(
                move.event, **move.arguments
            )
        except IllegalTransitionError:
            self._violate(
                "determinism",
                nid,
                mid,
                None,
                f"the machine refused {move.event!r} though {chosen.target!r} was enabled a "
                "moment before: a guard's answer changed between two identical calls",
            )
            return
        if emitted.target != chosen.target:
            self._violate(
                "determinism",
                nid,
                mid,
                emitted.target,
                f"the machine took {source!r} → {emitted.target!r}, though the first "
                f"enabled transition goes to {chosen.target!r}",
            )
        if side is self.run:
            if source in self.domains.absorbing:
                self._violate(
                    "I1",
                    nid,
                    mid,
                    emitted.target,
                    f"{source!r} accepted {move.event!r} (to {emitted.target!r})",
                )
            if work.loop_state is None and work.state in self.domains.turn_states:
                Machine(self.loop.compiled, work, self.emitter)  # the turn's loop starts
        node = self.nodes[nid]
        target = self._add(work, node.depth + 1, nid, mid, node.origin)
        self.out[nid].append((target, mid))

    def _conforms(
        self, side: Side, source: str, event: str, target: str, data: object, args: Arguments
    ) -> bool:
        rows = side.spec.get((source, event))
        if rows is None:
            return True  # an edge the spec does not govern: an extension
        return any(
            row_target == target and (guard is None or guard(data, **args))
            for row_target, guard in rows
        )


class _Traced:
    """The run's data, recording the name of every field read through it."""

    __slots__ = ("_data", "_reads")
    _data: RunData
    _reads: set[str]

    def __init__(self, data: RunData, reads: set[str]) -> None:
        object.__setattr__(self, "_data", data)
        object.__setattr__(self, "_reads", reads)

    def __getattr__(self, name: str) -> object:
        self._reads.add(name)
        return getattr(self._data, name)

    def __setattr__(self, name: str, value: object) -> None:
        setattr(self._data, name, value)


def _events(compiled: CompiledMachine) -> list[str]:
    return [event for by_event in compiled.dispatch.values() for event in by_event]


def _guard(guards: Mapping[str, Guard], name: str) -> Guard:
    try:
        return guards[name]
    except KeyError:
        raise ValueError(
            f"the spec names guard {name!r}, but spec_guards has no function of that name"
        ) from None
