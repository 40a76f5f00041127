"""The formal vocabulary of agentfsm as data: names, transition tables, effects and models.

Everything here is plain data with no behaviour beyond validation, so the machines, the
diagrams, the verifier and the tests all read the same definitions.
"""

from __future__ import annotations

from agentfsm.states.content import ContentPart
from agentfsm.states.effects import (
    COUPLINGS,
    FOLLOW_UPS,
    LOOP_EFFECTS,
    RUN_EFFECTS,
    Coupling,
    Expect,
    ExpectKind,
    Postcondition,
)
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
    "COUPLINGS",
    "FOLLOW_UPS",
    "GUARDS",
    "LOOP_EFFECTS",
    "LOOP_FINAL",
    "LOOP_INITIAL",
    "LOOP_TABLE",
    "PAUSABLE",
    "PROJECTIONS",
    "RUN_EFFECTS",
    "RUN_FINAL",
    "RUN_INITIAL",
    "RUN_TABLE",
    "RUN_WAITING",
    "TABLES",
    "A2AState",
    "AssistantsStatus",
    "CompletedReason",
    "ContentPart",
    "Coupling",
    "Event",
    "Expect",
    "ExpectKind",
    "FailedReason",
    "InputPolicy",
    "JSONObject",
    "JSONValue",
    "LoopEvent",
    "LoopState",
    "MachineName",
    "MachineTable",
    "Message",
    "Postcondition",
    "Projection",
    "RecordKind",
    "Role",
    "RunEvent",
    "RunState",
    "ToolCall",
    "TransitionRow",
    "project",
]
