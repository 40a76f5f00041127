"""`Event`: the typed, serialisable record every transition of either machine emits."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat

from agentfsm._checks import given
from agentfsm.states.json import JSONObject
from agentfsm.states.names import MachineName
from agentfsm.states.unchecked import twin


class Event(BaseModel):
    """One accepted transition: which machine, which event, from where to where, when.

    ``seq`` numbers the events of a run contiguously from 1 across both of its machines, so a
    run's event log is totally ordered and a gap means an event was lost.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    seq: int = Field(ge=1)
    """Position in the run's event log: 1, 2, 3, … with no gaps, across both machines."""
    run_id: str
    """The run the transition belongs to."""
    machine: MachineName
    """RunLifecycle (``run``) or TurnLoop (``loop``)."""
    event: str
    """The event that was accepted, e.g. ``submit``."""
    source: str
    """The state before the transition."""
    target: str
    """The state after it (equal to ``source`` for an internal transition)."""
    at: FiniteFloat
    """When it happened, in seconds since the Unix epoch (UTC), from the run's clock."""
    data: JSONObject = Field(default_factory=dict)
    """The event's arguments, e.g. ``{"text": "hi"}`` for ``submit``."""


# One set shared by every unchecked event: pydantic reads it, and copies it before any
# change (model_copy), so sharing it is safe; it must be a set, not a frozenset.
EVENT_FIELDS = set(Event.model_fields)
"""The ``__pydantic_fields_set__`` of every unchecked event (all fields are given)."""
EventTwin = twin(Event)
"""`Event`'s layout, with plain attribute stores: see `agentfsm.states.unchecked.twin`.

Only `unchecked_event` and the two places that inline it (`RunRecord._note`,
`RunEmitter.emit`) build from it, each exactly as `unchecked_event` does."""


def unchecked_event(
    seq: int,
    run_id: str,
    machine: MachineName,
    event: str,
    source: str,
    target: str,
    at: float,
    data: JSONObject,
) -> Event:
    """Build an `Event` without validating it: for the machines' hot path only.

    Every transition emits one event, and pydantic's own unvalidated constructor
    (``model_construct``) costs about 5 µs, more than the rest of a transition. This builds
    an instance of `Event`'s twin with plain stores and makes it an `Event` (see
    `agentfsm.states.unchecked.twin`), at about the cost of a plain slotted object's
    construction; a test checks that the result equals ``Event(...)`` field for field, so a
    pydantic change that broke this would fail the suite. The caller guarantees the values
    are valid.
    """
    record = EventTwin()
    record.seq = seq  # (in the class's field order: the keys are shared, see `twin`)
    record.run_id = run_id
    record.machine = machine
    record.event = event
    record.source = source
    record.target = target
    record.at = at
    record.data = data
    record.__pydantic_fields_set__ = EVENT_FIELDS
    record.__pydantic_extra__ = None
    record.__pydantic_private__ = None
    record.__class__ = Event
    made: Event = record
    return made


def event_list(events: Iterable[Event], name: str = "events") -> list[Event]:
    """``events`` as a list, refusing what is not an iterable of `Event` (a run's log).

    Args:
        events: The events, in order (a list, a tuple, a store's log, a generator).
        name: The argument's name, for the error.

    Raises:
        TypeError: ``events`` is not iterable, is a str or a mapping, or holds something
            other than an `Event` (the first such item is named, with its index).
    """
    allowed = "an iterable of Event (a run's log, in order)"
    if isinstance(events, (str, bytes, dict)) or not isinstance(events, Iterable):
        raise TypeError(f"{name} must be {allowed}, not {given(events)}")
    log = events if type(events) is list else list(events)
    for index, event in enumerate(log):
        if not isinstance(event, Event):
            raise TypeError(f"{name} must be {allowed}; {name}[{index}] is {given(event)}")
    return log
