"""The steps already taken: a clean step is taken once per set of values it depends on.

A step is one move (an event, its arguments, the environment) sent from one configuration.
Its guards, effects and enter actions are functions of the fields of the run's data they
read and of the move; the checks made on it (conformance, I4, I5, the effects and the
loaded re-send) read, besides, the fields the effect table names for it, the fields it
writes and the loaded ones. A step taken from a configuration is recorded with the names
of all those fields; from any later configuration that holds the same values in them (of
the same types) the step cannot go another way, so the explorer replays its outcome (the
fields it changed, to their new values) instead of sending the event again. Only steps that
broke nothing are recorded: a step that shows a violation, or whose guard wrote to the data,
is taken afresh every time, so every violation is found where a full exploration finds it
(breadth first: at its shortest path).

This assumes what the verifier assumes anyway: that guards and effects read the run's data
only through its attributes, and answer the same twice for the same inputs (a guard whose
answer changes between two identical calls is caught on the first step that shows it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import attrgetter

from agentfsm.fsm.data import RunData
from agentfsm.verify.configurations import Record


@dataclass(slots=True)
class Outcome:
    """How a clean step ended, enough to replay it from another configuration."""

    delta: tuple[tuple[str, object], ...] | None
    """The fields the step changed, with their new values; None when it was refused."""
    names: frozenset[str]
    """The fields its guards (the spec's too) and effects read."""
    records: tuple[Record, ...]
    """Its reads for `vacuity`, made at the first breadth-first step that records them."""
    recorded: bool
    """Whether ``records`` were made already (by a step whose reads are recorded)."""


Reader = Callable[[RunData], tuple[object, ...]]


class StepMemo:
    """The outcomes of the clean steps taken so far, by move, source state and values."""

    __slots__ = ("_groups", "hits")

    def __init__(self) -> None:
        self._groups: dict[
            tuple[int, str], dict[tuple[str, ...], tuple[Reader, dict[object, Outcome]]]
        ] = {}
        """(move, source) → the fields its steps depended on → how to read their values,
        and values → outcome. Usually one set of fields per move and state."""
        self.hits = 0
        """How many steps were replayed rather than taken."""

    def find(self, move: int, source: str, data: RunData) -> Outcome | None:
        """The outcome of ``move`` from ``source`` with the values ``data`` holds, if known."""
        groups = self._groups.get((move, source))
        if groups is None:
            return None
        for read, outcomes in groups.values():
            try:
                values = read(data)
                found = outcomes.get((values, tuple(map(type, values))))
            except (TypeError, AttributeError):  # unhashable, or a field not set: take it
                return None
            if found is not None:
                self.hits += 1
                return found
        return None

    def store(
        self, move: int, source: str, data: RunData, names: Iterable[str], outcome: Outcome
    ) -> None:
        """Record a clean step's outcome under the values ``data`` holds in ``names``."""
        fields = tuple(sorted(set(names)))
        groups = self._groups.setdefault((move, source), {})
        group = groups.get(fields)
        if group is None:
            group = groups[fields] = (_reader(fields), {})
        read, outcomes = group
        # Values with their types: 1, 1.0 and True are equal keys, but a guard may tell
        # them apart.
        try:
            values = read(data)
            outcomes[values, tuple(map(type, values))] = outcome
        except (TypeError, AttributeError):  # unhashable, or written but not a field here
            return


def _reader(fields: tuple[str, ...]) -> Reader:
    """A function reading ``fields`` of the data as a tuple (C-speed for two or more)."""
    if len(fields) >= 2:
        return attrgetter(*fields)  # a tuple for two names or more
    if fields:
        single = attrgetter(fields[0])
        return lambda data: (single(data),)
    return lambda _: ()
