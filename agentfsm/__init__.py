"""agentfsm: an embeddable agent loop whose every step is an explicit, guarded transition.

The run lifecycle and the turn loop are state machines declared with python-statemachine
and dispatched through tables compiled from them; every transition emits a typed `Event`;
an event that is not allowed raises `IllegalTransitionError` and changes nothing.

This module re-exports the names most applications need. Everything else is public in its
subpackage, under the same name: the machines and their data in `agentfsm.fsm`, the
vocabulary in `agentfsm.states`, tools and hooks in `agentfsm.tools`, models in
`agentfsm.llm`, stores in `agentfsm.stores`, diagrams in `agentfsm.diagrams`, the verifier in
`agentfsm.verify`, the testing kit in `agentfsm.testing`, and every error in
`agentfsm.errors`. (The verifier's function is `agentfsm.verify.verify`: a top-level
``verify`` would hide the subpackage of that name.)
"""

from __future__ import annotations

from agentfsm.agent.core import Agent
from agentfsm.agent.deltas import Delta
from agentfsm.agent.vocabulary import TurnOutcome
from agentfsm.diagrams import combined_diagram, run_diagram, save_diagram
from agentfsm.errors import (
    AgentFSMError,
    IllegalTransitionError,
    ModelError,
    StoreError,
    ToolCallError,
)
from agentfsm.llm import Model, ModelResponse, ModelSettings, OpenAIModel, ScriptedModel
from agentfsm.states import Event, InputPolicy, Message, RunState, ToolCall
from agentfsm.stores import MemoryStore, RunStore, Snapshot, SQLiteStore, open_store, replay
from agentfsm.tools import (
    Decision,
    Tool,
    ToolContext,
    ToolPolicy,
    ToolRegistry,
    ToolResult,
    tool,
)
from agentfsm.verify import check_log

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "AgentFSMError",
    "Decision",
    "Delta",
    "Event",
    "IllegalTransitionError",
    "InputPolicy",
    "MemoryStore",
    "Message",
    "Model",
    "ModelError",
    "ModelResponse",
    "ModelSettings",
    "OpenAIModel",
    "RunState",
    "RunStore",
    "SQLiteStore",
    "ScriptedModel",
    "Snapshot",
    "StoreError",
    "Tool",
    "ToolCall",
    "ToolCallError",
    "ToolContext",
    "ToolPolicy",
    "ToolRegistry",
    "ToolResult",
    "TurnOutcome",
    "check_log",
    "combined_diagram",
    "open_store",
    "replay",
    "run_diagram",
    "save_diagram",
    "tool",
]
