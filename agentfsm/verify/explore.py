"""The exploration: every reachable configuration of both machines, by sending real events.

Breadth first from one configuration per initial valuation, each step sends one event to
one of the run's compiled machines (`Machine.send`) with one valuation of its arguments
and of the environment. A configuration is identified by its key (both states and the
abstraction of the data), so each is expanded once, and its first visit is by a shortest
path. Checks that concern one step (I1, I4, I5, I8, determinism, conformance, effects,
exceptions) are made as the steps are taken; the first failure of each, in breadth-first
order, is a shortest counterexample. The graph is kept for the checks that concern paths
(`properties`, `agent`).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import deque
from collections.abc import Callable, Hashable, Mapping
from operator import attrgetter
from typing import cast

from agentfsm.errors import IllegalTransitionError
from agentfsm.fsm.compiled import CompiledMachine, CompiledTransition, Machine
from agentfsm.fsm.data import RunData
from agentfsm.fsm.emitter import Emitter
from agentfsm.fsm.guards import Guard
from agentfsm.states.effects import Postcondition
from agentfsm.states.names import MachineName, RunEvent
from agentfsm.states.tables import MachineTable
from agentfsm.verify.domains import Domains
from agentfsm.verify.graph import (
    Move,
    Node,
    Reads,
    Side,
    Traced,
    Violation,
    merge,
    traced_effects,
)
from agentfsm.verify.steps import (
    changes,
    effect_mismatch,
    expected,
    nonconformance,
    overlap,
    turn_miscount,
)

_NONE: dict[str, tuple[CompiledTransition, ...]] = {}


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
        self.fail_fast = False
        """Whether to stop after the first configuration whose steps show a violation."""
        self.stopped = False
        """Whether `fail_fast` stopped the exploration (it is then not `complete`)."""
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
        held = {"state", "loop_state", *domains.abstraction, *domains.initial, *names}
        self._loads: tuple[tuple[str, Callable[[object], object]], ...] = tuple(
            (name, load)
            for name, load in LOADS.items()
            if name in self._fields and name not in held
        )
        """The fields no configuration holds a value of, each with how to load it."""
        self.reads: dict[tuple[str, str, str, str, str], Reads] = {}
        """(kind, machine, event, source, target) → what its guards (kind ``guard``) or its
        effects and enter actions (``effect``) read; recorded on the first valuation of the
        environment."""
        self.writes: dict[tuple[str, str, str, str, str], set[str]] = {}
        """The same key → the fields its effects and enter actions write."""
        self.first_read: dict[tuple[tuple[str, str, str, str, str], str], tuple[int, int]] = {}
        """(key, field) → the first (node, move) at which it was read, in breadth-first order."""
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
        if table is None:
            return
        side.spec_states, side.spec_events = frozenset(table.states), frozenset(table.events)
        for post in table.effects:
            for source in post.sources:
                side.effects[source, post.event] = (
                    *side.effects.get((source, post.event), ()),
                    post,
                )
        for row in table.rows:
            guard = None if row.guard is None else _guard(spec_guards, row.guard)
            side.spec.setdefault((row.source, row.event), ())
            side.spec[row.source, row.event] += ((row.target, row.guard, guard),)

    def _intern(self, move: Move) -> int:
        self.moves.append(move)
        return len(self.moves) - 1

    # -- the configurations ------------------------------------------------------------

    def key(self, data: RunData) -> Hashable:
        """The identity of the configuration ``data`` is in."""
        return tuple(part(data) for part in self._key_parts)

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
        """Explore breadth first until every reachable configuration is expanded.

        With `fail_fast`, stop once the configuration being expanded showed a violation.
        """
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
            if self.fail_fast and self.violations:
                # Breadth first, nothing shorter is left to find: every violation recorded
                # so far is a shortest one of its property.
                self.complete, self.stopped = False, True
                return
            queue.extend(range(before, len(self.nodes)))

    # -- one configuration's steps -----------------------------------------------------

    def _violate(
        self,
        prop: str,
        node: int,
        move: int,
        outcome: str | None,
        message: str,
        loaded: Mapping[str, object] | None = None,
    ) -> None:
        if prop not in self.violations:
            self.violations[prop] = Violation(prop, node, move, outcome, message, loaded or {})

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
                if candidates is None and (state, event) not in side.spec:
                    self._unknown(nid, side, state, event, data)
                    continue
                for by_environment in side.moves[event]:
                    self._vary(nid, side, by_environment, candidates or ())

    def _unknown(self, nid: int, side: Side, state: str, event: str, data: RunData) -> None:
        # An event with no edge out of this state (the other machine's, or one of this
        # machine's from other states) is refused by the table lookup before any data is
        # read, so the first configuration of each state (breadth first: the one with the
        # shortest path) stands for all of them.
        if (state, event) not in side.foreign_checked:
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
        reads = self._step(nid, side, by_environment[0], candidates, traced=True)
        if not reads.isdisjoint(self._environment_fields):
            for mid in by_environment[1:]:
                self._step(nid, side, mid, candidates, traced=False)

    def _record(self, kind: str, t: CompiledTransition, nid: int, mid: int, reads: Reads) -> None:
        key = (kind, self.moves[mid].machine.value, t.event, t.source, t.target)
        merge(self.reads.setdefault(key, {}), reads)
        for name in reads:
            self.first_read.setdefault((key, name), (nid, mid))

    def _enabled(
        self,
        nid: int,
        mid: int,
        candidates: tuple[CompiledTransition, ...],
        data: RunData,
        names: set[str] | None,
    ) -> list[CompiledTransition] | None:
        """The candidates whose guards hold; None when a guard raised (a violation)."""
        args = self.moves[mid].arguments
        enabled = []
        for t in candidates:
            reads: Reads = {}
            model = data if names is None else Traced(data, reads)
            holds, current = True, ""
            try:
                for guard, name in zip(t.guards, t.guard_names, strict=True):
                    current = name
                    holds = bool(guard(model, **args))
                    if not holds:
                        break
            except Exception as error:  # a raising guard is a finding
                what = f"guard {current} of {t.event!r} {t.source} → {t.target}"
                self._raised(nid, mid, what, error)
                return None
            finally:
                if names is not None:
                    self._record("guard", t, nid, mid, reads)
                    names.update(reads)
            if holds:
                enabled.append(t)
        return enabled

    def _raised(self, nid: int, mid: int, what: str, error: Exception) -> None:
        self._violate(
            "exceptions", nid, mid, None, f"{what} raised {type(error).__name__}: {error}"
        )

    def _spec_choice(
        self, nid: int, mid: int, side: Side, source: str, data: RunData, names: set[str] | None
    ) -> tuple[str, str | None] | None:
        """The spec's first row for this step whose guard holds: (target, guard name)."""
        move = self.moves[mid]
        reads: Reads = {}
        model = data if names is None else Traced(data, reads)
        try:
            for target, name, guard in side.spec.get((source, move.event), ()):
                if guard is None or guard(model, **move.arguments):
                    return target, name
        except Exception as error:  # so is a raising spec guard
            self._raised(nid, mid, f"the spec's guard for {move.event!r} from {source}", error)
        finally:
            if names is not None:
                names.update(reads)
        return None

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
        names: set[str] | None = set() if traced else None
        enabled = self._enabled(nid, mid, candidates, data, names)
        source = getattr(data, side.compiled.state_field)
        spec = self._spec_choice(nid, mid, side, source, data, names)
        if self.snapshot(data) != before:
            # A guard wrote to the data. The node must stay as it was reached; whether the
            # write breaks I4 shows when the event is sent (refused, it must change nothing).
            self.restore(data, before)
        if enabled is None:
            return names or set()
        self._conformance(nid, mid, side, source, enabled, spec)
        if len(enabled) > 1:
            self._overlap(nid, mid, enabled)
        if not enabled:
            self._refuse(nid, side, mid, data, before)
        else:
            self._take(nid, side, mid, enabled[0], data, names)
        return names or set()

    def _conformance(
        self,
        nid: int,
        mid: int,
        side: Side,
        source: str,
        enabled: list[CompiledTransition],
        spec: tuple[str, str | None] | None,
    ) -> None:
        """Two-way: the machine takes exactly the edge the spec's first holding row names.

        The contract is closed: between two states it knows, an edge of an event it does not
        know is an extra row too. Only edges from or to an extension's own states are free.
        """
        event = self.moves[mid].event
        took = enabled[0].target if enabled else None
        governed = (source, event) in side.spec
        if not governed and source not in side.spec_states:
            return  # a state the spec does not know: an extension's
        known = event in side.spec_events
        if not governed and not known and took not in side.spec_states:
            return  # an extension's event, refused here or into an extension's state
        message = nonconformance(event, source, took, spec, governed=governed, known=known)
        if message is not None:
            self._violate("conformance", nid, mid, took, message)

    def _overlap(self, nid: int, mid: int, enabled: list[CompiledTransition]) -> None:
        message = overlap(self.moves[mid].event, enabled)
        self._violate("determinism", nid, mid, enabled[0].target, message)

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
        except Exception as error:
            if not isinstance(error, IllegalTransitionError):
                self.restore(data, before)
                self.emitter.seq = seq
                self._raised(nid, mid, f"refusing {move.event!r} in {state!r}", error)
                return
            changed = self.snapshot(data) != before or self.emitter.seq != seq
            allowed = side.compiled.allowed.get(state, ())
            named = (error.state, error.event, error.allowed) == (state, move.event, allowed)
            if changed or not named:
                what = changes(self._fields, before, data) if changed else f"named {error.state!r}"
                self.restore(data, before)
                self.emitter.seq = seq
                self._violate("I4", nid, mid, None, f"refusing {move.event!r} {what}")
            return
        outcome = getattr(data, side.compiled.state_field)
        self.restore(data, before)
        self.emitter.seq = seq
        message = f"{move.event!r} was accepted in {state!r} though no transition was enabled"
        self._violate("I4", nid, mid, outcome, message)

    def _take(
        self,
        nid: int,
        side: Side,
        mid: int,
        chosen: CompiledTransition,
        data: RunData,
        names: set[str] | None,
    ) -> None:
        move = self.moves[mid]
        source = getattr(data, side.compiled.state_field)
        work = self.copy(data)
        self.sends += 1
        try:
            emitted = Machine(side.compiled, work, self.emitter).send(move.event, **move.arguments)
        except IllegalTransitionError:
            message = (
                f"the machine refused {move.event!r} though {chosen.target!r} was enabled a "
                "moment before: a guard's answer changed between two identical calls"
            )
            self._violate("determinism", nid, mid, None, message)
            return
        except Exception as error:  # and a raising effect
            what = f"an effect of {move.event!r} {source} → {chosen.target}"
            self._raised(nid, mid, what, error)
            return
        if names is not None and (chosen.effects or chosen.enters):
            names.update(self._trace_effects(nid, mid, side, chosen, data))
        if emitted.target != chosen.target:
            message = (
                f"the machine took {source!r} → {emitted.target!r}, though the first "
                f"enabled transition goes to {chosen.target!r}"
            )
            self._violate("determinism", nid, mid, emitted.target, message)
        self._after(nid, side, mid, source, data, work, acts=bool(chosen.effects or chosen.enters))
        if side is self.run and work.loop_state is None and work.state in self.domains.turn_states:
            try:
                Machine(self.loop.compiled, work, self.emitter)  # the turn's loop starts
            except Exception as error:  # or enter action
                self._raised(nid, mid, "entering the loop's initial state", error)
                return
        node = self.nodes[nid]
        target = self._add(work, node.depth + 1, nid, mid, node.origin)
        self.out[nid].append((target, mid))

    def _trace_effects(
        self, nid: int, mid: int, side: Side, chosen: CompiledTransition, data: RunData
    ) -> set[str]:
        """Run the step's effects and enter actions again, on a copy, to see what they read."""
        field = side.compiled.state_field
        reads, writes = traced_effects(chosen, self.copy(data), field, self.moves[mid].arguments)
        self._record("effect", chosen, nid, mid, reads)
        key = ("effect", side.name.value, chosen.event, chosen.source, chosen.target)
        self.writes.setdefault(key, set()).update(writes)
        return set(reads)

    def _after(
        self,
        nid: int,
        side: Side,
        mid: int,
        source: str,
        data: RunData,
        work: RunData,
        *,
        acts: bool = True,
    ) -> None:
        """The checks on a step's outcome: I1, I5 and the effects' postconditions."""
        move = self.moves[mid]
        target = getattr(work, side.compiled.state_field)
        is_run = side is self.run
        if is_run and source in self.domains.absorbing:
            message = f"{source!r} accepted {move.event!r} (to {target!r})"
            self._violate("I1", nid, mid, target, message)
        turns = self.domains.turn_states
        starts = is_run and move.event == RunEvent.SUBMIT and source not in turns
        miscount = turn_miscount(move.event, data.turn, work.turn, starts and target in turns)
        if miscount is not None:
            self._violate("I5", nid, mid, target, miscount)
        if (source, move.event) not in side.spec:
            return  # an edge the spec does not govern: its effects are the extension's own
        posts = side.effects.get((source, move.event), ())
        wanted = expected(posts, move.event, source, target, data, move.arguments)
        fields = [f for f in self._fields if f != side.compiled.state_field]
        wrong = effect_mismatch(fields, data, work, wanted)
        if wrong is not None:
            message = f"{move.event!r} {source} → {target} left {wrong}"
            self._violate("effects", nid, mid, target, message)
        elif acts and self._loads:  # a step with no action changes nothing
            self._loaded(nid, side, mid, source, target, data, posts, fields)

    def _loaded(
        self,
        nid: int,
        side: Side,
        mid: int,
        source: str,
        target: str,
        data: RunData,
        posts: tuple[Postcondition, ...],
        fields: list[str],
    ) -> None:
        """The step again, with the fields outside the configuration loaded (`LOADS`).

        A configuration holds no queued input, question, reason or cancellation request (no
        guard reads them: `varied`), so the step from it cannot show an effect that loses
        or rewrites one. Taken again with each holding a value, it must change them only as
        the effect table says. A step that the loaded fields turn another way or refuse is
        left to `varied` (a guard read them); one that then raises is an exception. The
        counterexample names what was loaded (`Counterexample.loaded`).
        """
        move = self.moves[mid]
        before = self.copy(data)
        for name, load in self._loads:
            setattr(before, name, load(getattr(before, name)))
        work = self.copy(before)
        seq = self.emitter.seq
        try:  # the arguments passed `send`'s check when the step was first taken
            Machine(side.compiled, work, self.emitter).send_trusted(
                move.event, dict(move.arguments)
            )
        except IllegalTransitionError:
            return
        except Exception as error:
            loaded, shown = self._shown_loads(before)
            message = (
                f"an effect of {move.event!r} {source} → {target}, from data also holding "
                f"{shown}, raised {type(error).__name__}: {error}"
            )
            self._violate("exceptions", nid, mid, None, message, loaded)
            return
        finally:
            self.emitter.seq = seq
        if getattr(work, side.compiled.state_field) != target:
            return
        wanted = expected(posts, move.event, source, target, before, move.arguments)
        wrong = effect_mismatch(fields, before, work, wanted)
        if wrong is not None:
            loaded, shown = self._shown_loads(before)
            message = (
                f"{move.event!r} {source} → {target}, from data also holding {shown}, left {wrong}"
            )
            self._violate("effects", nid, mid, target, message, loaded)

    def _shown_loads(self, data: RunData) -> tuple[dict[str, object], str]:
        """The loaded fields of ``data``, and the same as text, for a counterexample."""
        loaded = {name: getattr(data, name) for name, _ in self._loads}
        return loaded, ", ".join(f"{name}={value!r}" for name, value in loaded.items())


LOADS: Mapping[str, Callable[[object], object]] = {
    "queued": lambda queued: (*cast("tuple[str, ...]", queued), "queued while busy"),
    "question": lambda question: "a question asked before?" if question is None else question,
    "reason": lambda reason: "a reason from before" if reason is None else reason,
    "cancel_requested": lambda requested: not requested,
}
"""`RunData`'s fields that no guard reads, and a value of each that the explored
configurations do not hold: the witness `Explorer` loads them with, to see that an effect
keeps them (a machine that dropped the queued inputs at a wait passed every property)."""


def _events(compiled: CompiledMachine) -> list[str]:
    return [event for by_event in compiled.dispatch.values() for event in by_event]


def _guard(guards: Mapping[str, Guard], name: str) -> Guard:
    try:
        return guards[name]
    except KeyError:
        raise ValueError(
            f"the spec names guard {name!r}, but spec_guards has no function of that name"
        ) from None
