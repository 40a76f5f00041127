"""The Agent's emitter and its run ids: the cheapest way to number and take a run's events.

Every run builds one `RunEmitter` and one run id, and each of its transitions goes through
`RunEmitter.emit`; both are part of a run's fixed cost.
"""

from __future__ import annotations

import os
import weakref
from typing import TYPE_CHECKING, cast

from agentfsm.agent.record import RunRecord
from agentfsm.fsm import Clock, Emitter, Listener
from agentfsm.fsm.emitter import ERROR_EVENTS, redacted
from agentfsm.llm.base import RetryNotice
from agentfsm.states.events import EVENT_FIELDS, Event, EventTwin
from agentfsm.states.json import JSONObject
from agentfsm.states.names import MachineName

if TYPE_CHECKING:
    from agentfsm.agent.turn import TurnDriver

_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
"""The bits of 16 random bytes that `uuid.uuid4` overwrites: its version and variant."""
_SET = (4 << 76) | (0x8000 << 48)
"""What it writes there: version 4, the RFC 4122 variant."""


def run_id_of(raw: bytes) -> str:
    """``uuid.UUID(bytes=raw, version=4).hex``, without building the `UUID` (16 bytes)."""
    return format(int.from_bytes(raw, "big") & _CLEAR | _SET, "032x")


def new_run_id() -> str:
    """A new run's id: ``uuid.uuid4().hex``, at a third of its cost."""
    return run_id_of(os.urandom(16))


_NO_LISTENERS: list[Listener] = []
"""The listener list of every `RunEmitter`: empty, shared, never read (its `emit` tells its
Agent directly) and never added to (the emitter is the Agent's own)."""


class RunEmitter(Emitter):
    """The Agent's emitter: tells the Agent of each event while the Agent lives.

    It holds the Agent weakly (no reference cycle, so an Agent nobody holds is freed at once,
    and its private event loop closed with it), and calls it directly: no listener list and
    no listener object per run, and no call through one per event.
    """

    __slots__ = ("_agent",)

    def __init__(self, run_id: str, agent: RunRecord, clock: Clock) -> None:
        super().__init__(run_id, _NO_LISTENERS, clock)
        self._agent = weakref.ref(agent)

    def emit(
        self, machine: MachineName, event: str, source: str, target: str, data: JSONObject
    ) -> Event:
        """Number one accepted transition, tell the Agent of it (if it lives), return it."""
        # `Emitter.number`, inlined: every transition of a run comes here.
        self.seq = seq = self.seq + 1
        if event in ERROR_EVENTS:
            data = redacted(data)
        # `unchecked_event`, inlined: built exactly as it builds (tests pin the two equal).
        made = EventTwin()
        made.seq = seq  # (in `Event`'s field order: the keys are shared, see `twin`)
        made.run_id = self.run_id
        made.machine = machine
        made.event = event
        made.source = source
        made.target = target
        made.at = self.clock()
        made.data = data
        made.__pydantic_fields_set__ = EVENT_FIELDS
        made.__pydantic_extra__ = None
        made.__pydantic_private__ = None
        made.__class__ = Event
        agent = self._agent()
        if agent is not None:
            agent._on_event(made)
        emitted: Event = made
        return emitted

    def __call__(self, notice: RetryNotice) -> None:
        """Tell the Agent (if it lives) of a retry of its model call: the model's listener.

        The Agent passes its emitter as ``on_retry`` rather than a bound method of its own:
        no new object per model call, and none held while a run waits on its model.
        """
        agent = self._agent()
        if agent is not None:
            cast("TurnDriver", agent)._on_retry(notice)  # (the Agent is one; retries are rare)
