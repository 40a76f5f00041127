"""`Emitter`: numbers a run's transitions and delivers them, as `Event`s, to its listeners."""

from __future__ import annotations

import time
from collections.abc import Callable

from agentfsm import _checks
from agentfsm._redact import redact
from agentfsm.states.events import Event, unchecked_event
from agentfsm.states.json import JSONObject
from agentfsm.states.names import MachineName

Listener = Callable[[Event], object]
"""Something told of every transition: ``listener(event)``; its return value is ignored."""

Clock = Callable[[], float]
"""The time in seconds since the Unix epoch; inject a fake one in tests."""

ERROR_EVENTS = frozenset({"fail", "model_failed"})
"""Events whose ``message`` is an error's text: credentials in it are masked."""


class Emitter:
    """One per run, shared by both of its machines, so ``seq`` is contiguous run-wide.

    Args:
        run_id: The run whose events these are.
        listeners: Called in order with each event. A listener's exception propagates to
            whoever sent the event, after the transition has taken place.
        clock: Where ``Event.at`` comes from; `time.time` by default.
        seq: The last sequence number already used (0 for a new run).

    The ``message`` of a ``fail`` or ``model_failed`` event has its credentials masked
    (URL user-info, key and token values, ``Authorization``; see `agentfsm._redact`).

    Raises:
        TypeError: ``run_id`` is not a str, ``listeners`` not a list of callables (a tuple
            is refused: the list is kept, so that appending to it adds a listener),
            ``clock`` not callable, or ``seq`` not an int.
        ValueError: ``seq`` is negative.
    """

    __slots__ = ("clock", "listeners", "run_id", "seq")

    def __init__(
        self,
        run_id: str,
        listeners: list[Listener] | None = None,
        clock: Clock = time.time,
        seq: int = 0,
    ) -> None:
        if not isinstance(run_id, str):
            _checks.refuse_type("run_id", run_id, "a str")
        if listeners is not None and (
            type(listeners) is not list or not all(map(callable, listeners))
        ):
            _listeners(listeners)
        if not callable(clock):
            _checks.refuse_type("clock", clock, "a callable returning seconds since the epoch")
        if type(seq) is not int or seq < 0:
            _checks.whole("seq", seq, minimum=0)
        self.run_id = run_id
        self.listeners: list[Listener] = listeners if listeners is not None else []
        self.clock = clock
        self.seq = seq

    def emit(
        self, machine: MachineName, event: str, source: str, target: str, data: JSONObject
    ) -> Event:
        """Number one accepted transition, deliver it to every listener and return it."""
        record = self.number(machine, event, source, target, data)
        for listener in self.listeners:
            listener(record)
        return record

    def number(
        self, machine: MachineName, event: str, source: str, target: str, data: JSONObject
    ) -> Event:
        """Number one accepted transition and return its `Event`, delivered to nobody.

        For an owner that is its emitter's only listener (the `Agent`): it takes the event
        itself, as `emit` would have given it, without the call through its listener.
        """
        self.seq = seq = self.seq + 1
        if event in ERROR_EVENTS:
            data = redacted(data)
        # The machine built every field from checked values; validating them again would
        # cost more than the whole rest of the transition.
        at = self.clock()
        return unchecked_event(seq, self.run_id, machine, event, source, target, at, data)


def redacted(data: JSONObject) -> JSONObject:
    """An error event's ``data`` with the credentials in its ``message`` masked.

    An error's text may quote a URL with user-info, a key or an Authorization value: the
    event log (and so the store) never records them.
    """
    message = data.get("message")
    if isinstance(message, str):
        return {**data, "message": redact(str(message))}
    return data


def _listeners(listeners: object) -> None:
    """Refuse listeners that are not a list of callables (the list is kept, not copied)."""
    allowed = "a list of callables (kept: appending to it later adds a listener) or None"
    if not isinstance(listeners, list):
        _checks.refuse_type("listeners", listeners, allowed)
    for listener in listeners:
        if not callable(listener):
            raise TypeError(f"listeners must be {allowed}; it holds {_checks.given(listener)}")
