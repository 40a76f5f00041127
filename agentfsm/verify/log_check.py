"""`check_log`: is a recorded event log a legal path of the machines?

The log is replayed through fresh compiled machines, from ``created``, with each event's
recorded ``data`` as its arguments. What the log does not record — the environment fields
(``at_boundary``, ``input_policy``) — is searched: before each event every valuation of
them is tried, the current one first, and the event conforms if one of them makes the
machine take exactly the recorded edge. The run's configuration (``max_iterations``,
``max_turns``, ``output_retries``) is not searched: it is what the log's ``start`` records
(an `Agent` records its caps there), or what the caller passes.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from statemachine import StateChart

from agentfsm.errors import IllegalTransitionError
from agentfsm.fsm.compiled import CompiledMachine, Machine, compile_machine
from agentfsm.fsm.data import RunData
from agentfsm.fsm.emitter import Emitter
from agentfsm.fsm.lifecycle import RunLifecycle
from agentfsm.fsm.turnloop import TurnLoop
from agentfsm.states.events import Event, event_list
from agentfsm.states.names import MachineName
from agentfsm.verify.domains import Domains, default_domains

DivergenceKind = Literal["seq", "run_id", "no_turn", "source", "not_allowed", "target", "refused"]
"""Where a log stops being a path of the machines.

- ``seq``: its sequence numbers are not 1, 2, 3, … (a gap, a repeat or a reordering).
- ``run_id``: the event belongs to another run.
- ``no_turn``: a loop event while no turn has started a loop.
- ``source``: the recorded source is not the state the machine is in.
- ``not_allowed``: the machine has no transition of that event from its state.
- ``target``: the machine has no edge of that event to the recorded target, or its guards,
  in every environment, choose another edge.
- ``refused``: the machine refuses the event with those arguments in every environment.
"""


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first event of a log that the machines could not have emitted."""

    index: int
    """Its position in the log (0 for the first event)."""
    event: Event
    """The event itself."""
    kind: DivergenceKind
    """What is wrong with it."""
    message: str
    """What is wrong, with the states and events involved."""

    def __str__(self) -> str:
        return f"event {self.index + 1} (seq {self.event.seq}, {self.kind}): {self.message}"


@dataclass(frozen=True, slots=True)
class LogCheck:
    """What `check_log` found."""

    run_id: str | None
    """The log's run (its first event's), or None for an empty log."""
    events: int
    """How many events the log has."""
    replayed: int
    """How many were replayed before the first divergence (all of them when `ok`)."""
    divergence: Divergence | None
    """The first divergence, or None when the whole log is a legal path."""
    data: RunData
    """The run's data after the replayed events (its state, loop state, turn, iteration,
    pending calls…), to compare with a stored snapshot."""
    assumed: tuple[tuple[int, Mapping[str, object]], ...] = ()
    """(seq, environment) for each event that needed the environment to change before it,
    e.g. ``(7, {"at_boundary": False, ...})``: what the log implies but does not record."""

    @property
    def ok(self) -> bool:
        """True when every event of the log was replayed as recorded."""
        return self.divergence is None

    def __str__(self) -> str:
        name = repr(self.run_id) if self.run_id is not None else "(empty)"
        if self.divergence is None:
            return f"the log of run {name} is a legal path: {self.replayed} events replayed"
        return f"the log of run {name} diverges at {self.divergence}"


class _Replay:
    """One log's replay: the machines' data, the emitter and the environment's domain."""

    def __init__(
        self,
        run: CompiledMachine,
        loop: CompiledMachine,
        domains: Domains,
        data: RunData,
    ) -> None:
        self.machines = {MachineName.RUN: run, MachineName.LOOP: loop}
        self.domains = domains
        self.data = data
        self.emitter = Emitter(data.run_id)
        names = tuple(domains.environment)
        self.environments = [
            dict(zip(names, values, strict=True))
            for values in itertools.product(*domains.environment.values())
        ]
        self.assumed: list[tuple[int, Mapping[str, object]]] = []

    def step(self, index: int, event: Event) -> Divergence | None:
        """Replay one event; the divergence if the machines could not have emitted it."""
        compiled = self.machines[event.machine]
        state = getattr(self.data, compiled.state_field)
        if state is None:
            return Divergence(index, event, "no_turn", "a loop event, but no turn has started")
        if event.source != state:
            return Divergence(
                index,
                event,
                "source",
                f"recorded source {event.source!r}, but the {event.machine.value} machine "
                f"is in {state!r}",
            )
        candidates = compiled.dispatch.get(state, {}).get(event.event)
        if candidates is None:
            allowed = ", ".join(map(repr, compiled.allowed.get(state, ()))) or "none"
            return Divergence(
                index,
                event,
                "not_allowed",
                f"{event.event!r} is not allowed in {state!r} of the {event.machine.value} "
                f"machine; allowed: {allowed}",
            )
        targets = {t.target for t in candidates}
        if event.target not in targets:
            return Divergence(
                index,
                event,
                "target",
                f"{event.event!r} has no edge {state!r} → {event.target!r}; its edges go "
                f"to {', '.join(map(repr, sorted(targets)))}",
            )
        return self._take(index, event, compiled)

    def _take(self, index: int, event: Event, compiled: CompiledMachine) -> Divergence | None:
        current = {name: getattr(self.data, name) for name in self.domains.environment}
        elsewhere: set[str] = set()
        refusals: list[str] = []
        for environment in [current, *(e for e in self.environments if e != current)]:
            trial = _copy(self.data)
            for name, value in environment.items():
                setattr(trial, name, value)
            self.emitter.seq = event.seq - 1
            try:
                emitted = Machine(compiled, trial, self.emitter).send(event.event, **event.data)
            except IllegalTransitionError as error:
                refusals.append(str(error))
                continue
            except Exception as error:  # a guard or effect that cannot read these values
                refusals.append(f"the machine raised {type(error).__name__}: {error}")
                continue
            if emitted.target != event.target:
                elsewhere.add(emitted.target)
                continue
            if environment != current:
                self.assumed.append((event.seq, environment))
            self._start_turn(trial, compiled)
            self.data = trial
            return None
        return self._diverged(index, event, elsewhere, refusals)

    def _start_turn(self, data: RunData, compiled: CompiledMachine) -> None:
        loop = self.machines[MachineName.LOOP]
        starts = data.loop_state is None and data.state in self.domains.turn_states
        if compiled.name is MachineName.RUN and starts:
            Machine(loop, data, self.emitter)  # the new turn's loop enters its initial state

    def _diverged(
        self, index: int, event: Event, elsewhere: set[str], refusals: list[str]
    ) -> Divergence:
        config = ", ".join(f"{name}={getattr(self.data, name)!r}" for name in self.domains.initial)
        hint = f" (replayed with {config}: pass the run's own as config=)" if config else ""
        if elsewhere:
            return Divergence(
                index,
                event,
                "target",
                f"with these arguments {event.event!r} takes {event.source!r} → "
                f"{' or '.join(map(repr, sorted(elsewhere)))}, never to the recorded "
                f"{event.target!r}, whatever the environment{hint}",
            )
        return Divergence(
            index,
            event,
            "refused",
            f"the machine refuses these arguments whatever the environment{hint}: {refusals[0]}",
        )


def _copy(data: RunData) -> RunData:
    twin: RunData = object.__new__(type(data))
    for field in dataclasses.fields(data):
        setattr(twin, field.name, getattr(data, field.name))
    return twin


def _numbering(index: int, event: Event, run_id: str) -> Divergence | None:
    if event.run_id != run_id:
        return Divergence(
            index, event, "run_id", f"run_id {event.run_id!r}, but the log is of {run_id!r}"
        )
    if event.seq == index + 1:
        return None
    if event.seq <= index:
        problem = f"seq {event.seq} again, or out of order: expected {index + 1}"
    else:
        problem = f"seq {event.seq} where {index + 1} was expected: events are missing"
    return Divergence(index, event, "seq", problem)


def check_log(
    events: Iterable[Event],
    *,
    run: type[StateChart[RunData]] = RunLifecycle,
    loop: type[StateChart[RunData]] = TurnLoop,
    config: Mapping[str, object] | None = None,
    domains: Domains | None = None,
    data: Callable[[str], RunData] = RunData,
) -> LogCheck:
    """Replay a recorded run through fresh machines, and say where it stops being legal.

    Args:
        events: The run's events, in log order, both machines interleaved, seq from 1.
            ``conversation`` records (an Agent's messages and tool calls) are numbered
            with the transitions but are not transitions: only their numbering is checked.
        run: The RunLifecycle class that recorded it.
        loop: The TurnLoop class that recorded it.
        config: The run's configuration, set on its data before the first event (e.g.
            ``{"max_iterations": 3, "max_turns": 1}``). None (the default): what the log's
            first event records, if it is the run machine's ``start`` (an `Agent` records
            its ``max_iterations``, ``max_turns`` and ``output_retries`` there: see
            `recorded_config`); `RunData`'s defaults for anything else.
        domains: Where the environment's values come from, and the run states in which a
            turn starts its loop; `default_domains` by default.
        data: Builds the run's data from its run id: `RunData` or a subclass of it.

    Returns:
        The result: `LogCheck.ok` when the log is a legal path, otherwise its first
        `Divergence`. It never raises for a bad log (nor for a configuration the machines
        cannot read: the first event they raise on is refused, with the error).

    Raises:
        TypeError: ``events`` is not an iterable of `Event` (bad input, not a bad log).
    """
    log = event_list(events)
    run_id = log[0].run_id if log else None
    domains = domains if domains is not None else default_domains()
    if config is None:
        config = recorded_config(log, domains.initial)
    start = data(run_id or "empty")
    for name, value in config.items():
        setattr(start, name, value)
    run_compiled = compile_machine(run, MachineName.RUN, "state")
    Machine(run_compiled, start, Emitter(start.run_id))  # enters the initial state if unset
    replay = _Replay(
        run_compiled, compile_machine(loop, MachineName.LOOP, "loop_state"), domains, start
    )
    for index, event in enumerate(log):
        divergence = _numbering(index, event, log[0].run_id)
        if divergence is None and event.machine != MachineName.CONVERSATION:
            divergence = replay.step(index, event)
        if divergence is not None:
            return LogCheck(
                run_id, len(log), index, divergence, replay.data, tuple(replay.assumed)
            )
    return LogCheck(run_id, len(log), len(log), None, replay.data, tuple(replay.assumed))


def recorded_config(log: Sequence[Event], names: Collection[str]) -> dict[str, object]:
    """The run's configuration as its log records it: what `check_log` replays by default.

    An `Agent` records its caps in its run's ``start`` event (``max_iterations``,
    ``max_turns``, ``output_retries``, with ``input_policy`` and ``system_prompt``).

    Args:
        log: The run's events, in log order.
        names: The configuration's fields (`Domains.initial`'s).

    Returns:
        The fields of ``names`` that the log's first event holds in its ``data``, if that
        event is the run machine's ``start``; otherwise none (a log that does not begin at
        ``start`` records no configuration).
    """
    first = log[0] if log else None
    if first is None or first.machine != MachineName.RUN or first.event != "start":
        return {}
    return {name: first.data[name] for name in names if name in first.data}
