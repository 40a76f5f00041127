"""Tools: declaring them, registering them and running a round of calls.

`tool` / `Tool` declare a function (sync or async) as a tool with a JSON Schema generated
once from its type hints; a `ToolRegistry` holds them by name; `ToolSystem.run_round` answers
one round of calls in order, running a body only when the contract's I9 allows it and turning
every refusal and failure into a `ToolResult` the model can read.
"""

from __future__ import annotations

from agentfsm.states.content import ContentPart
from agentfsm.tools.arguments import ArgumentLimits
from agentfsm.tools.content import ToolContent
from agentfsm.tools.context import ToolContext
from agentfsm.tools.hooks import MESSAGE_HOOKS, HookContext, HookHandler, HookKind, Hooks
from agentfsm.tools.policy import Decision, DecisionKind, ToolPolicy
from agentfsm.tools.registry import AnyTool, ToolRegistry
from agentfsm.tools.results import (
    ErrorDetails,
    ObservationType,
    RoundResult,
    ToolErrorInfo,
    ToolObservation,
    ToolResult,
    ToolStatus,
)
from agentfsm.tools.sources import InputRequest, ToolSource
from agentfsm.tools.spec import NAME_PATTERN, Tool, tool
from agentfsm.tools.system import Clock, Observer, Timer, ToolSystem

__all__ = [
    "MESSAGE_HOOKS",
    "NAME_PATTERN",
    "AnyTool",
    "ArgumentLimits",
    "Clock",
    "ContentPart",
    "Decision",
    "DecisionKind",
    "ErrorDetails",
    "HookContext",
    "HookHandler",
    "HookKind",
    "Hooks",
    "InputRequest",
    "ObservationType",
    "Observer",
    "RoundResult",
    "Timer",
    "Tool",
    "ToolContent",
    "ToolContext",
    "ToolErrorInfo",
    "ToolObservation",
    "ToolPolicy",
    "ToolRegistry",
    "ToolResult",
    "ToolSource",
    "ToolStatus",
    "ToolSystem",
    "tool",
]
