"""The formal vocabulary of agentfsm as data: names, transition tables and the data models.

Everything here is plain data with no behaviour beyond validation, so the machines, the
diagrams, the verifier and the tests all read the same definitions.
"""

from __future__ import annotations

from agentfsm.states.events import Event
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import Message, Role, ToolCall
from agentfsm.states.names import (
    LOOP_FINAL,
    LOOP_INITIAL,
    RUN_FINAL,
    RUN_INITIAL,
    RUN_WAITING,
    CompletedReason,
    FailedReason,
    InputPolicy,
    LoopEvent,
    LoopState,
    MachineName,
    RecordKind,
    RunEvent,
    RunState,
)
from agentfsm.states.projections import (
    PROJECTIONS,
    A2AState,
    AssistantsStatus,
    Projection,
    project,
)
from agentfsm.states.tables import (
    GUARDS,
    LOOP_TABLE,
    PAUSABLE,
    RUN_TABLE,
    TABLES,
    MachineTable,
    TransitionRow,
)

__all__ = [
    "GUARDS",
    "LOOP_FINAL",
    "LOOP_INITIAL",
    "LOOP_TABLE",
    "PAUSABLE",
    "PROJECTIONS",
    "RUN_FINAL",
    "RUN_INITIAL",
    "RUN_TABLE",
    "RUN_WAITING",
    "TABLES",
    "A2AState",
    "AssistantsStatus",
    "CompletedReason",
    "Event",
    "FailedReason",
    "InputPolicy",
    "JSONObject",
    "JSONValue",
    "LoopEvent",
    "LoopState",
    "MachineName",
    "MachineTable",
    "Message",
    "Projection",
    "RecordKind",
    "Role",
    "RunEvent",
    "RunState",
    "ToolCall",
    "TransitionRow",
    "project",
]
