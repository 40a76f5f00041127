"""Every error agentfsm raises, under one root.

::

    AgentFSMError
    ├── IllegalTransitionError      an event not allowed in the current state
    │   ├── GuardFailedError        allowed there, but none of its guards held
    │   └── EventArgumentsError     an event whose arguments are not JSON values
    ├── MachineDefinitionError      a declared machine the fast path cannot compile
    ├── ToolDefinitionError         a tool declared wrongly (signature, options)
    │   ├── InvalidToolNameError    a name the model API would refuse
    │   └── ToolSchemaError         an explicit schema that is not a valid object schema
    ├── DuplicateToolError          a second tool registered under a taken name
    ├── ToolCallError               one tool call refused or failed (becomes a ToolResult)
    │   ├── UnknownToolError        no tool of that name is registered
    │   ├── ToolDisabledError       the tool is not enabled for the run
    │   ├── ToolDeniedError         its policy or the application's decision refused it
    │   ├── ToolArgumentsError      arguments too big, too deep, not JSON, or off-schema
    │   ├── ToolTimeoutError        the body outlived its timeout (also a TimeoutError)
    │   ├── ToolOutputError         the body returned something that is not JSON
    │   ├── SubAgentError           a sub-agent's child run failed (any way)
    │   └── SubAgentDepthError      a sub-agent call that would nest past its max_depth
    ├── ToolRoundError              a tool round asked for with inconsistent inputs
    ├── MCPServerError              an MCP server failed: listing, protocol, transport, output
    │   ├── MCPConnectionError      the server could not be reached or went away mid-call
    │   └── MCPSessionLostError     the session whose server asked the user mid-call is gone
    ├── MCPToolError                an MCP tool answered with an error result (isError)
    ├── HookMessageError            a hook added a message where the lifecycle forbids it
    ├── HookFailedError             a hook handler raised (the cause is chained)
    ├── ReentrantCallError          a call into a run from inside one of its own steps
    ├── TurnFailedError             a failed turn's outcome, raised by raise_for_error()
    ├── ModelError                  a model call failed for good (after any retries)
    │   ├── ModelCallError          the request failed: status, connection or timeout
    │   └── ModelResponseError      the response cannot be used (cut off, filtered, empty)
    ├── ModelConfigError            a model that cannot be built: unknown spec, no API key
    ├── ModelSettingsError          model settings out of range, or naming no offered tool
    ├── OutputRejectedError         an output validator sends the answer back to the model
    ├── DiagramRenderError          a diagram that cannot be written: no `dot`, unknown suffix
    ├── ReplayError                 an event log that cannot be replayed into a run
    ├── ForkError                   a fork that cannot be made: no such run, bad seq, bad edit
    ├── ActionError                 an operator action of the live view refused (HTTP status)
    └── StoreError                  a run store refused or failed an operation
        ├── SnapshotConflictError   the stored version is not the one the save expected
        ├── RunBusyError            another process drives the run: its lease is live
        ├── InvalidSaveError        a save that does not continue the stored run (seq gap…)
        ├── RunNotFoundError        a run to restore that the store does not hold
        ├── StoreWriteError         a save failed in the database (disk full, I/O error)
        ├── StoreCorruptError       the store's file is not a readable database of runs
        ├── SchemaVersionError      a stored snapshot or file of an unknown schema version
        └── StoreURLError           a store URL that names no store agentfsm can open

    AssertionError
    └── InvariantError              the testing kit found an invariant of the contract broken
    RuntimeError
    └── InjectedError               a fault the testing kit injected (an Exception)
    BaseException
    └── InjectedInterrupt           a fault the testing kit injected (any other escape)
        └── ProcessCrashed          a simulated process crashed (testing.sim)

The roots an application usually catches are `AgentFSMError` itself,
`IllegalTransitionError` (an event refused: nothing changed), `ToolCallError` (inside a tool
round they become error tool results, not exceptions), `ModelError` and `StoreError`; those
five are also importable from ``agentfsm``. `InvariantError` is an ``AssertionError``, not
an `AgentFSMError`: it is a test failure of the testing kit, never raised by a run; the
two ``Injected`` errors are raised only by faults a test arms.

Each error carries structured fields as well as a message, so an application can react
without parsing text; messages quote identifiers with ``!r`` and say what is allowed.
"""

from agentfsm.errors._base import AgentFSMError
from agentfsm.errors.machine import (
    EventArgumentsError,
    GuardFailedError,
    IllegalTransitionError,
    MachineDefinitionError,
    ReentrantCallError,
)
from agentfsm.errors.mcp import (
    MCPConnectionError,
    MCPServerError,
    MCPSessionLostError,
    MCPToolError,
)
from agentfsm.errors.model import (
    ModelCallError,
    ModelConfigError,
    ModelError,
    ModelResponseError,
    ModelSettingsError,
    OutputRejectedError,
)
from agentfsm.errors.serve import ActionError, DiagramRenderError
from agentfsm.errors.store import (
    ForkError,
    InvalidSaveError,
    ReplayError,
    RunBusyError,
    RunNotFoundError,
    SchemaVersionError,
    SnapshotConflictError,
    StoreCorruptError,
    StoreError,
    StoreURLError,
    StoreWriteError,
)
from agentfsm.errors.testing import (
    InjectedError,
    InjectedInterrupt,
    InvariantError,
    ProcessCrashed,
)
from agentfsm.errors.tools import (
    DuplicateToolError,
    HookFailedError,
    HookMessageError,
    InvalidToolNameError,
    SubAgentDepthError,
    SubAgentError,
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
from agentfsm.errors.turn import TurnFailedError

__all__ = [
    "ActionError",
    "AgentFSMError",
    "DiagramRenderError",
    "DuplicateToolError",
    "EventArgumentsError",
    "ForkError",
    "GuardFailedError",
    "HookFailedError",
    "HookMessageError",
    "IllegalTransitionError",
    "InjectedError",
    "InjectedInterrupt",
    "InvalidSaveError",
    "InvalidToolNameError",
    "InvariantError",
    "MCPConnectionError",
    "MCPServerError",
    "MCPSessionLostError",
    "MCPToolError",
    "MachineDefinitionError",
    "ModelCallError",
    "ModelConfigError",
    "ModelError",
    "ModelResponseError",
    "ModelSettingsError",
    "OutputRejectedError",
    "ProcessCrashed",
    "ReentrantCallError",
    "ReplayError",
    "RunBusyError",
    "RunNotFoundError",
    "SchemaVersionError",
    "SnapshotConflictError",
    "StoreCorruptError",
    "StoreError",
    "StoreURLError",
    "StoreWriteError",
    "SubAgentDepthError",
    "SubAgentError",
    "ToolArgumentsError",
    "ToolCallError",
    "ToolDefinitionError",
    "ToolDeniedError",
    "ToolDisabledError",
    "ToolOutputError",
    "ToolRoundError",
    "ToolSchemaError",
    "ToolTimeoutError",
    "TurnFailedError",
    "UnknownToolError",
]
