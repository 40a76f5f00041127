"""The run's trace: what happened inside the transitions, as typed entries.

Transitions are `Event`s; the trace records the work between them — user inputs, model
calls (with duration and token usage), model retries and tool executions — so an
application can see cost and behaviour without parsing messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentfsm.llm.base import FinishReason, ModelResponse, Usage
from agentfsm.states.messages import ToolCall
from agentfsm.states.unchecked import inline_fields, new, put, sealed, twin
from agentfsm.tools.results import ToolResult, ToolStatus

_FROZEN = ConfigDict(frozen=True, extra="forbid")


@inline_fields
class UserInputTrace(BaseModel):
    """A user input was recorded (by `submit` or `provide_input`)."""

    model_config = _FROZEN
    kind: Literal["user_input"] = "user_input"
    turn: int
    """The turn the input belongs to."""
    text: str
    """What the user said."""
    at: float
    """When, in seconds since the epoch."""


class LLMCallTrace(BaseModel):
    """One model call that returned a response."""

    model_config = _FROZEN
    kind: Literal["llm_call"] = "llm_call"
    model: str
    """The model's name."""
    turn: int
    iteration: int
    """The iteration the call began."""
    duration: float = Field(ge=0)
    """Seconds the call took, retries included."""
    tool_call_count: int = Field(ge=0)
    """How many tool calls the response asked for."""
    finish_reason: str
    """Why the model stopped."""
    usage: Usage | None = None
    """Token counts, when the provider reported them."""
    at: float


class LLMRetryTrace(BaseModel):
    """A model call failed transiently and was tried again."""

    model_config = _FROZEN
    kind: Literal["llm_retry"] = "llm_retry"
    model: str
    turn: int
    iteration: int
    attempt: int
    """The attempt that failed."""
    error_type: str
    message: str
    status_code: int | None = None
    wait: float = Field(ge=0)
    """Seconds before the next attempt."""
    at: float


class ToolExecutionTrace(BaseModel):
    """One tool call answered (run, refused or failed)."""

    model_config = _FROZEN
    kind: Literal["tool_execution"] = "tool_execution"
    name: str
    """The tool the model asked for."""
    arguments: str
    """The arguments as the model sent them."""
    call_id: str
    turn: int
    iteration: int
    status: ToolStatus
    result: ToolResult
    duration: float = Field(ge=0)
    error_type: str | None = None
    """The error's type when the call did not succeed."""
    at: float


TraceEntry = Annotated[
    UserInputTrace | LLMCallTrace | LLMRetryTrace | ToolExecutionTrace,
    Field(discriminator="kind"),
]
"""One entry of a run's trace, told apart by ``kind``."""

AnyTraceEntry = UserInputTrace | LLMCallTrace | LLMRetryTrace | ToolExecutionTrace
"""Any trace entry, as a plain union for annotations."""


_USER_INPUT_GIVEN = {"turn", "text", "at"}
"""The fields `user_input_entry` gives (``kind`` is the default): shared, see `sealed`."""
_LLM_CALL_GIVEN = {
    "model",
    "turn",
    "iteration",
    "duration",
    "tool_call_count",
    "finish_reason",
    "usage",
    "at",
}
"""The fields `llm_call_entry` gives (``kind`` is the default): shared, see `sealed`."""
_TOOL_EXECUTION_GIVEN = {
    "name",
    "arguments",
    "call_id",
    "turn",
    "iteration",
    "status",
    "result",
    "duration",
    "error_type",
    "at",
}
"""The fields `tool_entries` gives each entry."""
_LLMCallTwin = twin(LLMCallTrace)
"""`LLMCallTrace`'s layout with plain attribute stores (see `agentfsm.states.unchecked.twin`)."""
_ToolExecutionTwin = twin(ToolExecutionTrace)
"""The same, for `ToolExecutionTrace`."""


_FINISH_TEXT: dict[object, str] = {reason: reason.value for reason in FinishReason}
"""Each finish reason's text, one str shared by every entry (``str()`` of a member makes a
new one: about 60 bytes more per model call a run keeps in its trace)."""


def user_input_entry(turn: int, text: str, at: float) -> UserInputTrace:
    """The trace entry of a user input (``text`` already checked to be a str), unvalidated."""
    entry: UserInputTrace = new(UserInputTrace)
    put(entry, "kind", "user_input")  # (in field order: see agentfsm.states.unchecked)
    put(entry, "turn", turn)
    put(entry, "text", text)
    put(entry, "at", float(at))
    return sealed(entry, _USER_INPUT_GIVEN)


def llm_call_entry(
    model: str, response: ModelResponse, turn: int, iteration: int, duration: float, at: float
) -> LLMCallTrace:
    """The trace entry of one model call that returned ``response``.

    Built without validation (one per iteration): every value comes from the validated
    ``response`` or is made a float here; a test pins it equal to the validated entry.
    """
    entry = _LLMCallTwin()  # (see `tool_entries`)
    given = response.__dict__  # (a dict item costs less than a pydantic attribute)
    entry.kind = "llm_call"
    entry.model = given["model"] or model
    entry.turn = turn
    entry.iteration = iteration
    entry.duration = float(duration) if duration > 0 else 0.0
    entry.tool_call_count = len(given["tool_calls"])
    reason = given["finish_reason"]
    entry.finish_reason = _FINISH_TEXT.get(reason) or str(reason)  # (one shared text)
    entry.usage = given["usage"]
    entry.at = float(at)
    entry.__pydantic_fields_set__ = _LLM_CALL_GIVEN
    entry.__pydantic_extra__ = None
    entry.__pydantic_private__ = None
    entry.__class__ = LLMCallTrace
    made: LLMCallTrace = entry
    return made


def tool_entries(
    calls: Sequence[ToolCall], results: Sequence[ToolResult], turn: int, iteration: int, at: float
) -> list[ToolExecutionTrace]:
    """The trace entries of a tool round: one per call, in call order.

    Built without validation (one per call), from validated calls and results; a test pins
    each equal to the validated entry.
    """
    moment = float(at)
    entries = []
    for call, result in zip(calls, results, strict=True):
        # An instance of the twin, each field and slot a plain store (in the class's field
        # order: see agentfsm.states.unchecked), made a `ToolExecutionTrace` (which gives it
        # a ``__dict__`` object, as pydantic's own entries have).
        entry = _ToolExecutionTwin()
        entry.kind = "tool_execution"
        asked = call.__dict__  # (a dict item costs less than a pydantic attribute)
        entry.name = asked["name"]
        entry.arguments = asked["arguments"]
        entry.call_id = asked["id"]
        entry.turn = turn
        entry.iteration = iteration
        given = result.__dict__  # (the same, for the result)
        error = given["error"]
        entry.status = given["status"]
        entry.result = result
        entry.duration = float(given["duration"])
        entry.error_type = error.type if error else None
        entry.at = moment
        entry.__pydantic_fields_set__ = _TOOL_EXECUTION_GIVEN
        entry.__pydantic_extra__ = None
        entry.__pydantic_private__ = None
        entry.__class__ = ToolExecutionTrace
        entries.append(entry)
    return entries
