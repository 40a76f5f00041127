"""`Event`: the typed, serialisable record every transition of either machine emits."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

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
    at: float
    """When it happened, in seconds since the Unix epoch (UTC), from the run's clock."""
    data: JSONObject = Field(default_factory=dict)
    """The event's arguments, e.g. ``{"text": "hi"}`` for ``submit``."""
