"""agentfsm: an embeddable agent loop whose every step is an explicit, guarded transition.

The run lifecycle and the turn loop are state machines declared with python-statemachine
and dispatched through tables compiled from them; every transition emits a typed `Event`;
an event that is not allowed raises `IllegalTransitionError` and changes nothing.
"""

from __future__ import annotations

from agentfsm.errors import (
    AgentFSMError,
    DuplicateToolError,
    GuardFailedError,
    HookFailedError,
    HookMessageError,
    IllegalTransitionError,
    InvalidToolNameError,
    MachineDefinitionError,
    ModelCallError,
    ModelConfigError,
    ModelError,
    ModelResponseError,
    ToolArgumentsError,
    ToolCallError,
    ToolDefinitionError,
    ToolDeniedError,
    ToolDisabledError,
    ToolOutputError,
    ToolRoundError,
    ToolSchemaError,
    ToolTimeoutError,
    UnknownToolError,
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
from agentfsm.fsm.agent import Agent
from agentfsm.fsm.turns import TurnOutcome
from agentfsm.llm import OpenAIModel
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
from agentfsm.tools import (
    Decision,
    Tool,
    ToolContext,
    ToolPolicy,
    ToolRegistry,
    ToolResult,
    ToolStatus,
    ToolSystem,
    tool,
)

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "AgentFSMError",
    "CompletedReason",
    "Decision",
    "DuplicateToolError",
    "Emitter",
    "Event",
    "FailedReason",
    "GuardFailedError",
    "HookFailedError",
    "HookMessageError",
    "IllegalTransitionError",
    "InputPolicy",
    "InvalidToolNameError",
    "JSONValue",
    "LoopEvent",
    "LoopState",
    "Machine",
    "MachineDefinitionError",
    "MachineName",
    "Message",
    "ModelCallError",
    "ModelConfigError",
    "ModelError",
    "ModelResponseError",
    "OpenAIModel",
    "RunData",
    "RunEvent",
    "RunLifecycle",
    "RunState",
    "Tool",
    "ToolArgumentsError",
    "ToolCall",
    "ToolCallError",
    "ToolContext",
    "ToolDefinitionError",
    "ToolDeniedError",
    "ToolDisabledError",
    "ToolOutputError",
    "ToolPolicy",
    "ToolRegistry",
    "ToolResult",
    "ToolRoundError",
    "ToolSchemaError",
    "ToolStatus",
    "ToolSystem",
    "ToolTimeoutError",
    "TurnLoop",
    "TurnOutcome",
    "UnknownToolError",
    "loop_machine",
    "run_machine",
    "tool",
]
