"""`Event`: the typed, serialisable record every transition of either machine emits."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat

from agentfsm.states.json import JSONObject
from agentfsm.states.names import MachineName


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


def _slot_setter(name: str) -> Callable[[object, object], None]:
    setter: Callable[[object, object], None] = BaseModel.__dict__[name].__set__
    return setter


# One set shared by every unchecked event: pydantic reads it, and copies it before any
# change (model_copy), so sharing it is safe; it must be a set, not a frozenset.
_FIELDS = set(Event.model_fields)
_set_fields_set = _slot_setter("__pydantic_fields_set__")
_set_extra = _slot_setter("__pydantic_extra__")
_set_private = _slot_setter("__pydantic_private__")


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
    (``model_construct``) costs about 5 µs, more than the rest of a transition. This sets
    the same four slots pydantic sets on a validated instance, in about 1 µs; a test checks
    that the result equals ``Event(...)`` field for field, so a pydantic change that broke
    this would fail the suite. The caller guarantees the values are valid.
    """
    record: Event = object.__new__(Event)
    fields = record.__dict__
    fields["seq"] = seq
    fields["run_id"] = run_id
    fields["machine"] = machine
    fields["event"] = event
    fields["source"] = source
    fields["target"] = target
    fields["at"] = at
    fields["data"] = data
    _set_fields_set(record, _FIELDS)
    _set_extra(record, None)
    _set_private(record, None)
    return record
