"""The Agent: drives a run's two machines, its model, its tools and its store.

It sits above `agentfsm.fsm` (the machines) and `agentfsm.stores` (where runs persist), and
below the verifier, the testing kit and the command line.
"""

from __future__ import annotations

from agentfsm.agent.children import AgentTool, agent_tool, child_run_id
from agentfsm.agent.context import CONTEXT_WINDOWS, ContextUsage, context_window
from agentfsm.agent.core import Agent
from agentfsm.agent.deltas import Delta, StreamItem, StreamListener
from agentfsm.agent.output import FINAL_ANSWER, OutputSpec, OutputType, OutputValidator
from agentfsm.agent.rounds import OUTCOME_UNKNOWN
from agentfsm.agent.vocabulary import (
    ASK_USER,
    INCOMPLETE_MESSAGE,
    AgentEvent,
    AgentListener,
    DecisionLike,
    TurnOutcome,
)

__all__ = [
    "ASK_USER",
    "CONTEXT_WINDOWS",
    "FINAL_ANSWER",
    "INCOMPLETE_MESSAGE",
    "OUTCOME_UNKNOWN",
    "Agent",
    "AgentEvent",
    "AgentListener",
    "AgentTool",
    "ContextUsage",
    "DecisionLike",
    "Delta",
    "OutputSpec",
    "OutputType",
    "OutputValidator",
    "StreamItem",
    "StreamListener",
    "TurnOutcome",
    "agent_tool",
    "child_run_id",
    "context_window",
]
