"""agentfsm: an embeddable agent loop whose every step is an explicit, guarded transition.

The run lifecycle and the turn loop are state machines declared with python-statemachine
and dispatched through tables compiled from them; every transition emits a typed `Event`;
an event that is not allowed raises `IllegalTransitionError` and changes nothing.
"""

from __future__ import annotations

from agentfsm.errors import (
    AgentFSMError,
    GuardFailedError,
    IllegalTransitionError,
    MachineDefinitionError,
)
from agentfsm.fsm import (
    Emitter,
    Machine,
    RunData,
    RunLifecycle,
    TurnLoop,
    loop_machine,
    run_machine,
)
from agentfsm.states import (
    CompletedReason,
    Event,
    FailedReason,
    InputPolicy,
    JSONValue,
    LoopEvent,
    LoopState,
    MachineName,
    Message,
    RunEvent,
    RunState,
    ToolCall,
)

__version__ = "0.1.0"

__all__ = [
    "AgentFSMError",
    "CompletedReason",
    "Emitter",
    "Event",
    "FailedReason",
    "GuardFailedError",
    "IllegalTransitionError",
    "InputPolicy",
    "JSONValue",
    "LoopEvent",
    "LoopState",
    "Machine",
    "MachineDefinitionError",
    "MachineName",
    "Message",
    "RunData",
    "RunEvent",
    "RunLifecycle",
    "RunState",
    "ToolCall",
    "TurnLoop",
    "loop_machine",
    "run_machine",
]
