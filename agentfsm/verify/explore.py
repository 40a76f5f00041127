"""The exploration: every reachable configuration of both machines, by sending real events.

Breadth first from one configuration per initial valuation, each step sends one event to
one of the run's compiled machines (`Machine.send`) with one valuation of its arguments
and of the environment (`stepping`). A configuration is identified by its key (both states
and the abstraction of the data), so each is expanded once, and its first visit is by a
shortest path (`configurations`). Checks that concern one step (I1, I4, I5, I8,
determinism, conformance, effects, exceptions) are made as the steps are taken; the first
failure of each, in breadth-first order, is a shortest counterexample. The graph is kept
for the checks that concern paths (`properties`, `agent`).

A step that broke nothing is remembered with the values of the fields it depended on
(`memo`): the same move from another configuration holding the same values is replayed
instead of sent again, which is most steps.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping, Set
from operator import attrgetter

from agentfsm.fsm.compiled import CompiledMachine, CompiledTransition, Machine
from agentfsm.fsm.data import RunData
from agentfsm.fsm.emitter import Emitter
from agentfsm.fsm.guards import Guard
from agentfsm.states.names import MachineName
from agentfsm.states.tables import MachineTable
from agentfsm.verify.domains import Domains
from agentfsm.verify.graph import Move, Side
from agentfsm.verify.loaded import LOADS
from agentfsm.verify.memo import Outcome, StepMemo
from agentfsm.verify.stepping import Stepping

__all__ = ["LOADS", "Explorer"]

_NONE: dict[str, tuple[CompiledTransition, ...]] = {}

Step = tuple[str, tuple[CompiledTransition, ...], "tuple[tuple[int, ...], ...] | None"]
"""An event to send from a state: its candidate transitions there, and its moves (for each
valuation of its arguments, one per valuation of the environment); None for an event with
no edge from the state, which the table refuses before reading any data."""


class Explorer(Stepping):
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
        super().__init__()
        domains.validate()
        self.domains = domains
        self.make_data = make_data
        self.run = Side(MachineName.RUN, run)
        self.loop = Side(MachineName.LOOP, loop)
        self.emitter = Emitter("verify", clock=lambda: 0.0)
        self.memo = StepMemo()
        self.sends = 0
        self.complete = True
        self.fail_fast = False
        """Whether to stop after the first configuration whose steps show a violation."""
        self.stopped = False
        """Whether `fail_fast` stopped the exploration (it is then not `complete`)."""
        self.events = tuple(dict.fromkeys([*_events(run), *_events(loop), *domains.events]))
        self._fields = tuple(f.name for f in dataclasses.fields(make_data("probe")))
        self.snapshot = attrgetter(*self._fields)
        self._abstraction()
        names = tuple(domains.environment)
        self.environments: tuple[dict[str, object], ...] = tuple(
            dict(zip(names, values, strict=True))
            for values in itertools.product(*domains.environment.values())
        )
        self._environment_fields = frozenset(names)
        held = {"state", "loop_state", *domains.abstraction, *domains.initial, *names}
        self._loads = tuple(
            (name, load)
            for name, load in LOADS.items()
            if name in self._fields and name not in held
        )
        """The fields no configuration holds a value of, each with how to load it."""
        for side in (self.run, self.loop):
            self._prepare(side, spec, spec_guards)
        self._environment_of = tuple(tuple(move.environment.items()) for move in self.moves)
        """Move → the environment fields it sets, with their values."""

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
                side.effect_fields[source, post.event] = side.effect_fields.get(
                    (source, post.event), frozenset()
                ).union(post.sets, post.when)
        for row in table.rows:
            guard = None if row.guard is None else _guard(spec_guards, row.guard)
            side.spec.setdefault((row.source, row.event), ())
            side.spec[row.source, row.event] += ((row.target, row.guard, guard),)

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
        for origin, data in enumerate(self._initial_data()):
            self._add(data, 0, -1, -1, origin)
        at = 0  # nodes are numbered in the order they are found: the queue is a range of them
        while at < len(self.nodes):
            if len(self.nodes) > self.domains.max_configurations:
                self.complete = False
                return
            self._expand(at)
            at += 1
            if self.fail_fast and self.violations:
                # Breadth first, nothing shorter is left to find: every violation recorded
                # so far is a shortest one of its property.
                self.complete, self.stopped = False, True
                return

    # -- one configuration's steps -----------------------------------------------------

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
            plan = side.plans.get(state)
            if plan is None:  # the first configuration of this state: its shortest path
                for event, candidates, groups in self._plan(side, state):
                    if groups is None:
                        # An event with no edge out of this state (the other machine's, or
                        # one of this machine's from other states) is refused by the table
                        # lookup before any data is read, so the first configuration of
                        # each state (breadth first: the one with the shortest path) stands
                        # for all of them.
                        self._refuse(nid, side, side.bare[event], data)
                        continue
                    for by_environment in groups:
                        self._vary(nid, side, by_environment, candidates)
                continue
            for candidates, groups in plan:
                for by_environment in groups:
                    self._vary(nid, side, by_environment, candidates)

    def _plan(self, side: Side, state: str) -> list[Step]:
        """What to send from ``state``, in event order; keeps the part that has edges."""
        by_event = side.compiled.dispatch.get(state, _NONE)
        steps: list[Step] = []
        for event in self.events:
            candidates = by_event.get(event)
            if candidates is None and (state, event) not in side.spec:
                steps.append((event, (), None))
            else:
                steps.append((event, candidates or (), side.moves[event]))
        side.plans[state] = tuple(
            (candidates, groups) for _, candidates, groups in steps if groups is not None
        )
        return steps

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

    def _step(
        self,
        nid: int,
        side: Side,
        mid: int,
        candidates: tuple[CompiledTransition, ...],
        *,
        traced: bool,
    ) -> Set[str]:
        """Take one move from a node, or replay it; the fields its guards and effects read.

        Only a ``traced`` step (the first valuation of the environment) records its reads
        for `vacuity`, as the step first taken with the same values would have.
        """
        data = self.nodes[nid].data
        for name, value in self._environment_of[mid]:
            setattr(data, name, value)
        source: str = getattr(data, side.compiled.state_field)
        known = self.memo.find(mid, source, data)
        if known is not None:
            return self._replay(nid, mid, data, known, traced=traced)
        names = self.take_step(nid, side, mid, candidates, data)
        records = tuple(self.records)
        if traced:
            self._commit(records, (nid, mid))
        if not self.dirty:
            outcome = Outcome(self.delta, frozenset(names), records, recorded=traced)
            self.memo.store(mid, source, data, self.depends.union(names), outcome)
        return names

    def _replay(
        self, nid: int, mid: int, data: RunData, outcome: Outcome, *, traced: bool
    ) -> Set[str]:
        """A step with the outcome of one taken before from the same values."""
        if traced and not outcome.recorded:
            self._commit(outcome.records, (nid, mid))
            outcome.recorded = True
        delta = outcome.delta
        if delta is not None:
            # The step's changes made on the node's data for a moment, to read the key of
            # the configuration it reaches: most are known already, and need no copy.
            olds = [getattr(data, name) for name, _ in delta]
            for name, value in delta:
                setattr(data, name, value)
            key = self.key(data)
            found = self.index.get(key)
            work = self.copy(data) if found is None else data
            for (name, _), old in zip(delta, olds, strict=True):
                setattr(data, name, old)
            if found is None:
                node = self.nodes[nid]
                found = self._add(work, node.depth + 1, nid, mid, node.origin, key)
            self.out[nid].append((found, mid))
        return outcome.names


def _events(compiled: CompiledMachine) -> list[str]:
    return [event for by_event in compiled.dispatch.values() for event in by_event]


def _guard(guards: Mapping[str, Guard], name: str) -> Guard:
    try:
        return guards[name]
    except KeyError:
        raise ValueError(
            f"the spec names guard {name!r}, but spec_guards has no function of that name"
        ) from None
