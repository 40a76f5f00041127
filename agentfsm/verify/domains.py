"""What the verifier tries, as data: the finite domains of its inputs and the roles of states.

A *configuration* is the two machines' states plus an abstraction of the run's data: the
fields the guards read. The verifier starts from one configuration per valuation of
`Domains.initial`, and from each configuration it sends every event of either machine with
every valuation of its arguments (`Domains.events`), after setting the environment fields
(`Domains.environment`) to every combination of their values. The domains are plain
mappings, so a subclass with more states, events or guards is verified by extending them
(`Domains.extended`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TypeVar

from agentfsm import _checks
from agentfsm.fsm.data import RunData
from agentfsm.states.json import JSONValue
from agentfsm.states.names import (
    RUN_FINAL,
    InputPolicy,
    LoopEvent,
    LoopState,
    RunEvent,
    RunState,
)

Arguments = Mapping[str, JSONValue]
"""One valuation of an event's arguments: argument name → value."""

KeyPart = Callable[[RunData], Hashable]
"""A function of the run's data that is part of a configuration's identity."""


def valuations(**choices: Sequence[JSONValue]) -> tuple[Arguments, ...]:
    """Every combination of the given argument values, as argument mappings.

    Args:
        **choices: For each argument, the values to try.

    Returns:
        One mapping per combination, in order (the last argument varies fastest);
        ``({},)`` when no argument is given.

    Example:
        ``valuations(text=("hi", ""))`` is ``({"text": "hi"}, {"text": ""})``.
    """
    names = tuple(choices)
    return tuple(
        MappingProxyType(dict(zip(names, values, strict=True)))
        for values in itertools.product(*(tuple(choices[name]) for name in names))
    )


def turn_limit_reached(data: RunData) -> bool | None:
    """Whether the run used all its turns (None when it has no cap): what ``submit`` reads."""
    return None if data.max_turns is None else data.turn >= data.max_turns


_V = TypeVar("_V")


def _merged(old: Mapping[str, _V], new: Mapping[str, _V] | None = None) -> Mapping[str, _V]:
    return MappingProxyType({**old, **(new or {})})


@dataclass(frozen=True, slots=True)
class Domains:
    """The verifier's inputs and how it reads a configuration.

    Build the default with `default_domains`; add to it with `extended`.
    """

    events: Mapping[str, tuple[Arguments, ...]]
    """Event name → the argument valuations to send it with. An event of either machine that
    is not listed is sent without arguments."""
    environment: Mapping[str, tuple[object, ...]]
    """Data field → its values. Fields that change outside the machines (a tool starts, the
    application changes its input policy): before every step each combination is tried, so
    they are inputs of the step, not part of the configuration."""
    initial: Mapping[str, tuple[object, ...]]
    """Data field → its values. Fields fixed for a run (its caps): each combination is one
    initial configuration, and these fields are part of every configuration's identity."""
    abstraction: Mapping[str, KeyPart | None]
    """The parts of a configuration besides the two states: name → a function of the data
    (None: the data field of that name, as it is). List every field a guard reads, directly
    or through a function that keeps what the guard needs (`turn_limit_reached`)."""
    waiting: frozenset[str] = frozenset()
    """States, of either machine, that wait for an answer from outside (I2: each needs an
    exit that needs no answer)."""
    answers: frozenset[str] = frozenset()
    """Events that answer a wait; they do not count as its exit without an answer."""
    detours: frozenset[str] = frozenset()
    """Events that leave a wait without ending it (``pause`` comes back to it; ``shutdown``
    ends the run rather than the wait); they do not count as its exit either."""
    absorbing: frozenset[str] = RUN_FINAL
    """Run states that no event may leave (I1) and that every configuration must be able to
    reach (I2)."""
    turn_states: frozenset[str] = frozenset({RunState.BUSY})
    """Run states in which a run without a loop starts one: after ``submit`` resets the
    loop, the next turn's TurnLoop enters its initial state."""
    max_configurations: int = field(default=200_000)
    """Stop exploring past this many configurations (and report the exploration as
    incomplete): a guard against an abstraction that is not finite."""

    def validate(self) -> None:
        """Check that the domains can be explored.

        Raises:
            ValueError: An environment or initial field has no values, or a field is both
                environment (set afresh before every step) and part of a configuration.
        """
        fields = {**self.environment, **self.initial}
        empty = sorted(name for name, values in fields.items() if not values)
        if empty:
            raise ValueError(f"{empty!r} have no values to try: give each at least one")
        both = sorted(set(self.environment) & {*self.abstraction, *self.initial})
        if both:
            raise ValueError(
                f"{both!r} cannot be both environment (set before every step) and part of a "
                "configuration (Domains.abstraction or Domains.initial)"
            )

    def extended(
        self,
        *,
        events: Mapping[str, tuple[Arguments, ...]] | None = None,
        environment: Mapping[str, tuple[object, ...]] | None = None,
        initial: Mapping[str, tuple[object, ...]] | None = None,
        abstraction: Mapping[str, KeyPart | None] | None = None,
        waiting: frozenset[str] = frozenset(),
        answers: frozenset[str] = frozenset(),
        detours: frozenset[str] = frozenset(),
        absorbing: frozenset[str] = frozenset(),
    ) -> Domains:
        """These domains with more entries.

        Mappings are merged (a new entry replaces an old one of the same name); sets are
        joined.

        Args:
            events: More (or replacement) argument valuations per event.
            environment: More environment fields, or new values for one.
            initial: More initial fields, or new values for one.
            abstraction: More parts of a configuration.
            waiting: More waiting states.
            answers: More events that answer a wait.
            detours: More events that leave a wait without ending it.
            absorbing: More absorbing run states.
        """
        return replace(
            self,
            events=_merged(self.events, events),
            environment=_merged(self.environment, environment),
            initial=_merged(self.initial, initial),
            abstraction=_merged(self.abstraction, abstraction),
            waiting=self.waiting | waiting,
            answers=self.answers | answers,
            detours=self.detours | detours,
            absorbing=self.absorbing | absorbing,
        )


_E, _LE = RunEvent, LoopEvent
_CALLS: tuple[JSONValue, ...] = (["c1"], ["c1", "c2"], [])
_DECISIONS: tuple[JSONValue, ...] = (
    {"c1": "approve"},
    {"c2": "approve"},
    {"c1": "approve", "c2": "deny"},
    {},
)
_DEADLINES: tuple[JSONValue, ...] = (None, 100.0, "soon")

DEFAULT_EVENTS: Mapping[str, tuple[Arguments, ...]] = _merged(
    {
        _E.SUBMIT: valuations(text=("hello", "  ")),
        _E.NEED_ACTION: valuations(calls=_CALLS, deadline=_DEADLINES),
        _E.RESOLVE_ACTION: valuations(decisions=_DECISIONS),
        _E.NEED_INPUT: valuations(question=("Which city?", ""), calls=_CALLS, deadline=_DEADLINES),
        _E.PROVIDE_INPUT: valuations(text=("Paris", "")),
        _E.EXPIRE: valuations(now=(50.0, 150.0)),
        _LE.MODEL_REPLIED: valuations(
            tool_calls=(0, 1), needing_action=(0, 1), asking_user=(0, 1)
        ),
        _LE.RESOLVED: valuations(decisions=_DECISIONS),
        _LE.CHILD_ASKED: valuations(needing_action=(0, 1), asking_user=(0, 1)),
        _LE.ABORT: valuations(reason=("cancelled",)),
        _LE.OUTPUT_INVALID: valuations(errors=(["answer: field required"],)),
    }
)
"""The arguments tried for each event: one that satisfies its guards and one that does not
(empty text, no calls, a decision missing, a deadline not yet passed or that is no time),
and every
combination of has-tool-calls / needs-approval / asks-the-user for ``model_replied``.
Calls come one or two at a time, and decisions name one call, the other, both or none: a
guard that counts decisions instead of matching their ids is caught (one decision for the
wrong call has the right count)."""


def default_domains(max_iterations: int = 3, *, typed: bool = False) -> Domains:
    """The domains that cover every guard of RunLifecycle and TurnLoop both ways.

    Args:
        max_iterations: The bound: runs are explored with every ``max_iterations`` from 1 to
            this, each with and without a one-turn cap.
        typed: Explore typed answers too: runs without an output type and with
            ``output_retries`` of 0 and 1 (a loop with a ``validating`` state needs it;
            `verify` sets it for such a loop when it builds the default domains).

    Raises:
        TypeError: ``max_iterations`` is not an int, or ``typed`` not a bool.
        ValueError: ``max_iterations`` is below 1.
    """
    _checks.whole("max_iterations", max_iterations, minimum=1)
    _checks.flag("typed", typed)
    return Domains(
        events=DEFAULT_EVENTS,
        environment=_merged({"at_boundary": (True, False), "input_policy": tuple(InputPolicy)}),
        initial=_merged(
            {
                "max_iterations": tuple(range(1, max_iterations + 1)),
                "max_turns": (None, 1),
                "output_retries": (None, 0, 1) if typed else (None,),
            }
        ),
        abstraction=_merged(
            {
                "iteration": None,
                "invalid_outputs": None,
                "pending": None,
                "deadline": None,
                "paused_from": None,
                "turn": turn_limit_reached,
            }
        ),
        waiting=frozenset(
            {
                RunState.REQUIRES_ACTION,
                RunState.INPUT_REQUIRED,
                LoopState.AWAITING_ACTION,
                LoopState.AWAITING_INPUT,
            }
        ),
        answers=frozenset({_E.RESOLVE_ACTION, _E.PROVIDE_INPUT, _LE.RESOLVED}),
        detours=frozenset({_E.PAUSE, _E.SHUTDOWN}),
    )
