"""The fast path: a machine class compiled once into a dispatch table shared by every run.

`compile_machine` reads a declared python-statemachine class (its states, transitions,
guards, effects and enter actions) and builds plain dicts and tuples from it. A `Machine`
is then only three references: the shared table, the run's data and the run's emitter.
Dispatching an event is a dict lookup, the guards, the effects and one `Event`; the
differential test in ``tests/properties`` proves it agrees with python-statemachine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from agentfsm.errors import (
    EventArgumentsError,
    GuardFailedError,
    IllegalTransitionError,
    MachineDefinitionError,
)
from agentfsm.fsm.emitter import Emitter
from agentfsm.fsm.guards import Args, Check, Selector, check_of, selector_of
from agentfsm.states.events import Event
from agentfsm.states.json import JSONValue, json_problem
from agentfsm.states.names import MachineName
from agentfsm.states.tables import GUARDS, TransitionRow

Callback = Callable[..., Any]

RESERVED_ARGS = frozenset(
    {"model", "source", "target", "state", "event", "machine", "transition", "event_data"}
)
"""Argument names python-statemachine injects itself, so an event may not carry them."""

_JSON_LEAVES = frozenset((str, int, bool, type(None)))


@dataclass(frozen=True, slots=True)
class CompiledTransition:
    """One edge, with its callables resolved."""

    event: str
    source: str
    target: str
    guards: tuple[Callback, ...]
    """The predicates that must all hold (an ``unless`` guard compiled to its negation)."""
    guard_names: tuple[str, ...]
    """The guards' names (``not name`` for an ``unless`` guard)."""
    checks: tuple[Check, ...]
    """The same guards as `send` calls them, ``check(model, event_args)``: a guard of
    `agentfsm.fsm.guards` as its check (no keyword unpacking), any other through
    `_keywords`; resolved once, here."""
    effects: tuple[Callback, ...]
    """The transition's ``on`` actions, in order: ``effect(model, source, **args)``."""
    enters: tuple[Callback, ...]
    """The target's enter actions; empty for an internal transition."""
    internal: bool
    select: Selector | None = None
    """On the first transition of a group whose checks a selector asks at once (see
    `agentfsm.fsm.guards.selector_of`): that selector, which `send` asks instead of the
    group's checks one by one. None on every other transition."""

    def row(self) -> TransitionRow:
        """This edge as a row of `agentfsm.states.tables` (at most one guard per row)."""
        names = self.guard_names
        if len(names) > 1:
            raise MachineDefinitionError(
                f"{self.event!r} from {self.source!r} has guards {names!r}; a table row "
                "names one guard"
            )
        guard = names[0] if names else None
        return TransitionRow(self.event, self.source, self.target, guard, self.internal)


def _callables(specs: Any, where: str, *, allow_convention: bool = True) -> list[Any]:
    found = []
    for spec in specs:
        if spec.is_convention:
            continue  # names like on_enter_<state> that nobody defined: never called
        if not callable(spec.func):
            raise MachineDefinitionError(
                f"{where} uses {spec.func!r} by name; the compiled machine needs callables "
                "of the form fn(model, **event_args)"
            )
        found.append(spec)
    return found


@dataclass(frozen=True, slots=True)
class CompiledMachine:
    """A machine class as plain data, shared by every run of that class."""

    name: MachineName
    chart: type[Any]
    """The declared python-statemachine class it was compiled from."""
    state_field: str
    """The field of the run's data that holds this machine's state."""
    states: tuple[str, ...]
    initial: str
    final: frozenset[str]
    initial_enters: tuple[Callback, ...]
    dispatch: dict[str, dict[str, tuple[CompiledTransition, ...]]]
    """state → event → the candidate transitions, in priority order."""
    allowed: dict[str, tuple[str, ...]]
    """state → the events with a transition out of it."""

    def rows(self) -> tuple[TransitionRow, ...]:
        """Every edge as table rows, in declaration order of states then transitions."""
        return tuple(
            transition.row()
            for by_event in self.dispatch.values()
            for transitions in by_event.values()
            for transition in transitions
        )


def _unsupported(chart: type[Any]) -> None:
    for state in chart.states_map.values():
        if state.states or state.parallel:
            raise MachineDefinitionError(
                f"{chart.__name__}.{state.id} is compound; the compiled machine is flat"
            )
        if _callables(state.exit, f"{chart.__name__}.{state.id} exit"):
            raise MachineDefinitionError(f"{chart.__name__}.{state.id} has exit actions")


def _negate(guard: Callback) -> Callback:
    def unless(model: Any, **args: Any) -> bool:
        return not guard(model, **args)

    return unless


def _keywords(guard: Callback) -> Check:
    """A guard that is not one of `agentfsm.fsm.guards` as a check: called with keywords."""

    def check(model: Any, args: Args) -> bool:
        return bool(guard(model, **args) if args else guard(model))

    return check


def _as_check(func: Callback, expected: bool) -> Check:
    """``func`` (or its negation, for an ``unless`` guard) as a check, resolved once."""
    found = check_of(func)
    check = _keywords(func) if found is None else found
    if expected:
        return check

    def unless(model: Any, args: Args) -> bool:
        return not check(model, args)

    return unless


def _compile_transition(chart: type[Any], transition: Any) -> list[CompiledTransition]:
    where = f"{chart.__name__} {transition.source.id}→{transition.target.id}"
    specs = _callables(transition.cond, where)
    guards = tuple(spec.func if spec.expected_value else _negate(spec.func) for spec in specs)
    checks = tuple(_as_check(spec.func, bool(spec.expected_value)) for spec in specs)
    names = tuple(
        spec.func.__name__ if spec.expected_value else f"not {spec.func.__name__}"
        for spec in specs
    )
    for group in (transition.before, transition.after):
        if _callables(group, where):
            raise MachineDefinitionError(f"{where} has before/after actions; use on=")
    effects = tuple(spec.func for spec in _callables(transition.on, where))
    enters = (
        ()
        if transition.internal
        else tuple(spec.func for spec in _callables(transition.target.enter, where))
    )
    return [
        CompiledTransition(
            event=event.id,
            source=transition.source.value,
            target=transition.target.value,
            guards=guards,
            guard_names=names,
            checks=checks,
            effects=effects,
            enters=enters,
            internal=bool(transition.internal),
        )
        for event in transition.events
    ]


def _selecting(group: tuple[CompiledTransition, ...]) -> tuple[CompiledTransition, ...]:
    """``group``, its first transition given the selector of its checks, if there is one."""
    if len(group) < 2 or any(len(transition.checks) != 1 for transition in group):
        return group
    select = selector_of(tuple(transition.checks[0] for transition in group))
    if select is None:
        return group
    return (replace(group[0], select=select), *group[1:])


def _compile(chart: type[Any], name: MachineName, state_field: str) -> CompiledMachine:
    _unsupported(chart)
    dispatch: dict[str, dict[str, tuple[CompiledTransition, ...]]] = {}
    for state in chart.states_map.values():
        by_event: dict[str, list[CompiledTransition]] = {}
        for transition in state.transitions:
            for compiled in _compile_transition(chart, transition):
                by_event.setdefault(compiled.event, []).append(compiled)
        dispatch[state.value] = {event: _selecting(tuple(ts)) for event, ts in by_event.items()}
    initial = chart.initial_state
    return CompiledMachine(
        name=name,
        chart=chart,
        state_field=state_field,
        states=tuple(state.value for state in chart.states_map.values()),
        initial=initial.value,
        final=frozenset(state.value for state in chart.states_map.values() if state.final),
        initial_enters=tuple(
            spec.func for spec in _callables(initial.enter, f"{chart.__name__} initial")
        ),
        dispatch=dispatch,
        allowed={state: tuple(by_event) for state, by_event in dispatch.items()},
    )


def _owned(chart: type[Any]) -> set[int]:
    """The ids of the transitions ``chart``'s own events declare."""
    return {
        id(transition)
        for event in chart.events
        for transition in getattr(getattr(event, "_transitions", None), "transitions", ())
    }


def _intruder(chart: type[Any], transition: Any) -> str:
    """The subclass of ``chart`` whose events declare ``transition``, for the message."""
    pending = list(chart.__subclasses__())
    while pending:
        sub = pending.pop()
        if id(transition) in _owned(sub):
            return f"its subclass {sub.__qualname__}"
        pending += sub.__subclasses__()
    return "something other than its own events (a subclass, or code that edits states)"


def _foreign(chart: type[Any]) -> tuple[Any, Any] | None:
    """A transition in ``chart``'s states that its own events do not declare, and its state."""
    owned = _owned(chart)
    for state in chart.states_map.values():
        for transition in state.transitions:
            if id(transition) not in owned:
                return state, transition
    return None


def _check_shared_states(chart: type[Any]) -> None:
    """Refuse a class whose states, or whose parents' states, hold others' transitions.

    python-statemachine shares `State` objects between a class and its subclasses, so a
    subclass that adds a transition to an inherited state adds it to the parent too: the
    parent then behaves differently from its declaration, and the subclass is not a new
    machine but a change to an old one.
    """
    classes: tuple[Any, ...] = chart.__mro__
    for cls in classes:
        if not isinstance(getattr(cls, "states_map", None), dict) or not cls.states_map:
            continue
        if cls is not chart and not any(
            own is cls.states_map.get(key) for key, own in chart.states_map.items()
        ):
            continue
        found = _foreign(cls)
        if found is None:
            continue
        state, transition = found
        events = ", ".join(repr(event.id) for event in transition.events)
        edge = f"{transition.source.id}→{transition.target.id} ({events})"
        if cls is chart:
            raise MachineDefinitionError(
                f"{chart.__qualname__}.{state.id} holds the transition {edge}, which "
                f"{chart.__qualname__} does not declare: {_intruder(chart, transition)} "
                "added it to a state they share. Declare the variant as a new class instead"
            )
        raise MachineDefinitionError(
            f"{chart.__qualname__} changes the states of its parent {cls.__qualname__}: "
            f"{cls.__qualname__}.{state.id} now holds {edge}. python-statemachine shares "
            "State objects between a class and its subclasses; declare the variant as a "
            "new class instead"
        )


def _fingerprint(chart: type[Any]) -> tuple[object, ...]:
    """What a compiled table depends on: every state and transition object, and events."""
    return tuple(
        (id(state), tuple((id(t), id(t.target), *map(id, t.events)) for t in state.transitions))
        for state in chart.states_map.values()
    )


_COMPILED: dict[
    tuple[type[Any], MachineName, str], tuple[tuple[object, ...], CompiledMachine]
] = {}


def compile_machine(chart: type[Any], name: MachineName, state_field: str) -> CompiledMachine:
    """Compile a declared python-statemachine class into a shared `CompiledMachine`.

    The table is cached per class, and is compiled again when the class's states or
    transitions changed since (so no cache hides a changed class).

    Args:
        chart: A flat `statemachine.StateChart` subclass whose guards, ``on`` actions and
            enter actions are callables of the form ``fn(model, **event_args)``.
        name: Which machine of the run this is (it names the emitted events' machine).
        state_field: The field of the run's data that holds the state.

    Raises:
        MachineDefinitionError: The class uses a feature the table cannot reproduce
            (compound or parallel states, exit/before/after actions, callbacks by name);
            or it is a subclass that added transitions to its parent's states, or a class
            whose states a subclass changed that way.
    """
    _check_shared_states(chart)
    key = (chart, name, state_field)
    fingerprint = _fingerprint(chart)
    cached = _COMPILED.get(key)
    if cached is not None and cached[0] == fingerprint:
        return cached[1]
    compiled = _compile(chart, name, state_field)
    _COMPILED[key] = (fingerprint, compiled)
    return compiled


_NOTHING: dict[str, tuple[CompiledTransition, ...]] = {}


def describe_guard(name: str) -> str:
    """A guard's name with what it checks, for error messages."""
    bare = name.removeprefix("not ")
    return f"{name}: {GUARDS[bare]}" if bare in GUARDS else name


def refusal(
    compiled: CompiledMachine, run_id: str, state: str, event: str
) -> IllegalTransitionError:
    """The error for ``event`` refused in ``state``: no transition, or no guard held.

    A state that is not one of the machine's (a loop left over from an earlier turn, whose
    state field a new turn reset) allows no event.
    """
    allowed = compiled.allowed.get(state, ())
    candidates = compiled.dispatch.get(state, _NOTHING).get(event)
    if candidates is None:
        return IllegalTransitionError(
            run_id=run_id, machine=compiled.name, state=state, event=event, allowed=allowed
        )
    return GuardFailedError(
        run_id=run_id,
        machine=compiled.name,
        state=state,
        event=event,
        allowed=allowed,
        failed_guards=tuple(describe_guard(name) for t in candidates for name in t.guard_names),
    )


def check_arguments(
    compiled: CompiledMachine, run_id: str, state: str, event: str, args: Args
) -> None:
    """Refuse ``event``'s arguments unless their names are free and their values are JSON.

    Raises:
        TypeError: An argument has a name python-statemachine injects itself.
        EventArgumentsError: An argument is not a JSON value (see `json_problem`).
    """
    if not RESERVED_ARGS.isdisjoint(args):
        raise TypeError(
            f"event arguments may not be named {sorted(RESERVED_ARGS & args.keys())!r}"
        )
    problem = arguments_problem(args)
    if problem is not None:
        raise EventArgumentsError(
            run_id=run_id,
            machine=compiled.name,
            state=state,
            event=event,
            allowed=compiled.allowed.get(state, ()),
            problem=problem,
        )


def arguments_refused(args: Args) -> bool:
    """Whether `check_arguments` would refuse ``args`` (for ``can_send``: no error built)."""
    return bool(args) and (
        not RESERVED_ARGS.isdisjoint(args) or arguments_problem(args) is not None
    )


def arguments_problem(args: Args) -> str | None:
    """What keeps an event's arguments from being JSON values, naming the argument; or None."""
    for name, value in args.items():
        if type(value) in _JSON_LEAVES:  # (the usual argument: a string, a count, a flag)
            continue
        try:
            problem = json_problem(value, f"argument {name!r}")
        except RecursionError:
            problem = f"argument {name!r} is nested too deeply to be written as JSON"
        if problem is not None:
            return problem
    return None


def _first_holding(
    candidates: tuple[CompiledTransition, ...], model: Any, args: Args
) -> CompiledTransition | None:
    """The first of ``candidates`` whose checks all hold; None if none does."""
    for transition in candidates:
        for check in transition.checks:
            if not check(model, args):
                break
        else:
            return transition
    return None


class MachineView:
    """What both engines share: a machine's state, read from the run's data."""

    __slots__ = ()
    compiled: CompiledMachine
    model: Any

    @property
    def state(self) -> str:
        """The current state's name."""
        state: str = getattr(self.model, self.compiled.state_field)
        return state

    @property
    def is_final(self) -> bool:
        """True in a final state, which no event leaves."""
        return self.state in self.compiled.final

    def allowed_events(self) -> tuple[str, ...]:
        """The events that have a transition out of the current state (guards aside)."""
        return self.compiled.allowed.get(self.state, ())


class Machine(MachineView):
    """One run's instance of a compiled machine: its table, its data and its emitter.

    A machine whose state field is still None is activated: it enters the initial state
    and runs that state's enter actions, as python-statemachine does. A machine built on
    data that already holds a state is restored there, and nothing is re-entered.

    Args:
        compiled: The shared table, from `compile_machine`.
        model: The run's data, read by the guards and written by the effects.
        emitter: The run's emitter, shared with the run's other machine.
    """

    __slots__ = ("compiled", "emitter", "model")

    def __init__(self, compiled: CompiledMachine, model: Any, emitter: Emitter) -> None:
        self.compiled = compiled
        self.model = model
        self.emitter = emitter
        if getattr(model, compiled.state_field) is None:
            setattr(model, compiled.state_field, compiled.initial)
            for enter in compiled.initial_enters:
                enter(model)

    def can_send(self, event: str, /, **args: JSONValue) -> bool:
        """Whether `send` with these arguments would be accepted (guards included)."""
        # `send`'s selection without the refusal: building the error only to throw it away
        # would cost more than the question (asked at every submit: is a wait overdue?).
        if arguments_refused(args):
            return False
        compiled, model = self.compiled, self.model
        state = getattr(model, compiled.state_field)
        candidates = compiled.dispatch.get(state, _NOTHING).get(event)
        return candidates is not None and any(
            all(check(model, args) for check in transition.checks) for transition in candidates
        )

    def send(self, event: str, /, **args: JSONValue) -> Event:
        """Take the transition ``event`` selects, or raise and change nothing.

        Args:
            event: The event's name.
            **args: The event's arguments, read by guards and effects and recorded as the
                emitted event's ``data``; they must be JSON values.

        Returns:
            The emitted `Event`, after every listener has seen it.

        Raises:
            IllegalTransitionError: No transition of ``event`` leaves the current state; or
                (as `GuardFailedError`) some do, but none of their guards held; or (as
                `EventArgumentsError`) an argument is not a JSON value. The state, the data
                and the event log are unchanged.
            TypeError: An argument has a name python-statemachine injects itself
                (``model``, ``source``, ``state``...).
        """
        if args:
            compiled = self.compiled
            state = getattr(self.model, compiled.state_field)
            check_arguments(compiled, self.emitter.run_id, state, event, args)
        return self.send_trusted(event, args)

    def send_trusted(self, event: str, args: dict[str, JSONValue]) -> Event:
        """`send` without checking the arguments: for arguments known to be JSON values.

        For agentfsm's own callers, whose arguments are built from validated records (the
        model's reply, a count, a list of call ids): checking them again would walk each
        reply once more per iteration. ``args`` becomes the event's ``data`` as it is.
        Anything else calls `send`.
        """
        # The hot path of every transition. The guards are called as checks, with the
        # arguments as one mapping (a keyword call would copy them into a new dict per
        # guard), or all at once by the group's selector; effects and enters spell out the
        # no-argument case because f(x, **{}) costs twice what f(x) does.
        compiled, model = self.compiled, self.model
        state = getattr(model, compiled.state_field)
        candidates = compiled.dispatch.get(state, _NOTHING).get(event)
        chosen = None
        if candidates is not None:
            select = candidates[0].select
            if select is not None:  # the group's checks, asked at once
                index = select(model, args)
                chosen = candidates[index] if index >= 0 else None
            else:
                chosen = _first_holding(candidates, model, args)
        if chosen is None:
            raise refusal(compiled, self.emitter.run_id, state, event)
        for effect in chosen.effects:
            if args:
                effect(model, state, **args)
            else:
                effect(model, state)
        target = chosen.target
        setattr(model, compiled.state_field, target)
        for enter in chosen.enters:
            if args:
                enter(model, **args)
            else:
                enter(model)
        return self.emitter.emit(compiled.name, event, state, target, args)
