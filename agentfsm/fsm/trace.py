"""The run's trace: what happened inside the transitions, as typed entries.

Transitions are `Event`s; the trace records the work between them — user inputs, model
calls (with duration and token usage), model retries and tool executions — so an
application can see cost and behaviour without parsing messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentfsm.llm.base import FinishReason, ModelResponse, Usage
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import ToolCall
from agentfsm.states.unchecked import inline_fields, new, put, sealed, twin
from agentfsm.tools.results import RESULT_GIVEN, ToolResult, ToolStatus, tool_result

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
    settings: JSONObject | None = None
    """The model settings the call asked for (`agentfsm.llm.ModelSettings`, as JSON: the
    Agent's merged with the turn's), or None when it asked for none."""
    response_id: str | None = None
    """The provider's id of the response (`ModelResponse.id`), when it sent one (entries
    recorded before it was kept have none)."""


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
_LLM_CALL_SETS = {
    (asked, named): {
        *_LLM_CALL_GIVEN,
        *(("settings",) if asked else ()),
        *(("response_id",) if named else ()),
    }
    for asked in (False, True)
    for named in (False, True)
}
"""The same, by whether the call asked for settings and its response had an id."""
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
    model: str,
    response: ModelResponse,
    turn: int,
    iteration: int,
    duration: float,
    at: float,
    settings: JSONObject | None = None,
) -> LLMCallTrace:
    """The trace entry of one model call that returned ``response``.

    Built without validation (one per iteration): every value comes from the validated
    ``response`` or is made a float here (by `packed_llm_call`); a test pins it equal to the
    validated entry.
    """
    packed = packed_llm_call(model, response, turn, iteration, duration, at, settings)
    return _llm_call(*packed[1:])


def _llm_call(
    model: str,
    turn: int,
    iteration: int,
    duration: float,
    tool_call_count: int,
    finish_reason: str,
    usage: Usage | None,
    at: float,
    settings: JSONObject | None = None,
    response_id: str | None = None,
) -> LLMCallTrace:
    # An instance of the twin, each field and slot a plain store (see `_tool_execution`).
    entry = _LLMCallTwin()
    entry.kind = "llm_call"
    entry.model = model
    entry.turn = turn
    entry.iteration = iteration
    entry.duration = duration
    entry.tool_call_count = tool_call_count
    entry.finish_reason = finish_reason
    entry.usage = usage
    entry.at = at
    entry.settings = settings
    entry.response_id = response_id
    entry.__pydantic_fields_set__ = _LLM_CALL_SETS[settings is not None, response_id is not None]
    entry.__pydantic_extra__ = None
    entry.__pydantic_private__ = None
    entry.__class__ = LLMCallTrace
    made: LLMCallTrace = entry
    return made


def tool_entries(
    calls: Sequence[ToolCall], results: Sequence[ToolResult], turn: int, iteration: int, at: float
) -> list[ToolExecutionTrace]:
    """The trace entries of a tool round: one per call, in call order.

    Built without validation (one per call), from validated calls and results (by
    `packed_tool_entries`); a test pins each equal to the validated entry.
    """
    entries: list[ToolExecutionTrace] = []
    packed_tool_entries(calls, results, turn, iteration, at, entries)
    return entries


def _tool_execution(
    name: str,
    arguments: str,
    call_id: str,
    turn: int,
    iteration: int,
    result: ToolResult,
    duration: float,
    error_type: str | None,
    at: float,
) -> ToolExecutionTrace:
    # An instance of the twin, each field and slot a plain store (in the class's field
    # order: see agentfsm.states.unchecked), made a `ToolExecutionTrace` (which gives it a
    # ``__dict__`` object, as pydantic's own entries have). Its status is its result's.
    entry = _ToolExecutionTwin()
    entry.kind = "tool_execution"
    entry.name = name
    entry.arguments = arguments
    entry.call_id = call_id
    entry.turn = turn
    entry.iteration = iteration
    entry.status = result.__dict__["status"]
    entry.result = result
    entry.duration = duration
    entry.error_type = error_type
    entry.at = at
    entry.__pydantic_fields_set__ = _TOOL_EXECUTION_GIVEN
    entry.__pydantic_extra__ = None
    entry.__pydantic_private__ = None
    entry.__class__ = ToolExecutionTrace
    made: ToolExecutionTrace = entry
    return made


# The trace as a run with no store keeps it.
#
# A run keeps every entry of its trace for its whole life, and most are model calls and
# tool executions: as records, a tool execution is four objects the cyclic collector tracks
# (the entry, its result and their two ``__dict__`` objects, about 480 bytes), a model call
# two (240 bytes). A run with no store keeps them packed instead: each a tuple of its
# fields (`packed_llm_call`, `packed_tool_entries`), one object, which the collector stops
# tracking once it has seen that it holds only strings and numbers (about 140 bytes for a
# tool execution). The entry is built from it only for whoever reads it (`entry_of`: a
# listener, `Agent.trace`, a snapshot), equal field for field to the one `llm_call_entry`
# or `tool_entries` builds (from the same values: they pack, then build), with the same
# fields set (property tests pin them equal). A run on a store keeps the entries themselves:
# each save's snapshot reads the whole trace.

Kept = AnyTraceEntry | tuple[Any, ...]
"""A trace entry as a run keeps it: the entry itself, or packed (see above)."""

_TOOL_EXECUTION, _LLM_CALL = 0, 1
"""The first item of a packed entry: which kind it packs (an int: the collector's atoms)."""
_STATUS: dict[str, ToolStatus] = {status.value: status for status in ToolStatus}
"""Each status by its text: a packed entry keeps the text (a str, which the collector does
not track), not the member."""


def packed_llm_call(
    model: str,
    response: ModelResponse,
    turn: int,
    iteration: int,
    duration: float,
    at: float,
    settings: JSONObject | None = None,
) -> tuple[Any, ...]:
    """`llm_call_entry`'s entry, packed (see `Kept`).

    `entry_of` gives the entry back (a test pins the two equal).
    """
    given = response.__dict__  # (a dict item costs less than a pydantic attribute)
    reason = given["finish_reason"]
    return (
        _LLM_CALL,
        given["model"] or model,
        turn,
        iteration,
        float(duration) if duration > 0 else 0.0,
        len(given["tool_calls"]),
        _FINISH_TEXT.get(reason) or str(reason),  # (one shared text)
        given["usage"],
        float(at),
        settings,
        given.get("id"),
    )


def packed_tool_entries(
    calls: Sequence[ToolCall],
    results: Sequence[ToolResult],
    turn: int,
    iteration: int,
    at: float,
    told: list[ToolExecutionTrace] | None = None,
) -> list[Kept]:
    """`tool_entries`' entries, packed (see `Kept`); with ``told``, also built into it.

    An entry is packed when its result is `tool_result`'s (every field given) and names the
    call and the tool as the call does (the same strings); any other is kept as it is.
    `entry_of` gives each back (a test pins them equal to `tool_entries`').
    """
    moment = float(at)
    items: list[Kept] = []
    for call, result in zip(calls, results, strict=True):
        asked = call.__dict__  # (a dict item costs less than a pydantic attribute)
        given = result.__dict__  # (the same, for the result)
        name, call_id, error = asked["name"], asked["id"], given["error"]
        packs = (
            result.__pydantic_fields_set__ is RESULT_GIVEN
            and type(result) is ToolResult
            and given["call_id"] is call_id
            and given["tool_name"] is name
        )
        entry = None
        if told is not None or not packs:
            entry = _tool_execution(
                name,
                asked["arguments"],
                call_id,
                turn,
                iteration,
                result,
                float(given["duration"]),
                error.type if error else None,
                moment,
            )
            if told is not None:
                told.append(entry)
        if not packs:  # kept as it is
            items.append(entry)  # type: ignore[arg-type]  # (built above)
            continue
        items.append(
            (
                _TOOL_EXECUTION,
                name,
                asked["arguments"],
                call_id,
                turn,
                iteration,
                moment,
                given["status"]._value_,
                given["output"],
                error,
                given["duration"],
                given["attempts"],
            )
        )
    return items


def _unpacked_tool(item: tuple[Any, ...]) -> ToolExecutionTrace:
    _, name, arguments, call_id, turn, iteration, at, status, output, error, duration, tries = item
    result = tool_result(call_id, name, _STATUS[status], output, error, duration, tries)
    return _tool_execution(
        name,
        arguments,
        call_id,
        turn,
        iteration,
        result,
        float(duration),
        error.type if error else None,
        at,
    )


def entry_of(item: Kept) -> AnyTraceEntry:
    """The trace entry a run keeps as ``item``: itself, or a new one built from the packed."""
    if type(item) is not tuple:
        return item  # type: ignore[return-value]  # (an entry kept as it is)
    if item[0] == _LLM_CALL:
        return _llm_call(*item[1:])
    return _unpacked_tool(item)


def entries_of(trace: Iterable[Kept]) -> list[AnyTraceEntry]:
    """Every entry of a trace as a run keeps it (see `Kept`), in order."""
    return [entry_of(item) for item in trace]


def last_llm_call(trace: Sequence[Kept]) -> LLMCallTrace | None:
    """The newest model call's entry in a trace as a run keeps it (see `Kept`), if any."""
    for item in reversed(trace):
        if type(item) is tuple:
            if item[0] == _LLM_CALL:
                return _llm_call(*item[1:])
        elif isinstance(item, LLMCallTrace):
            return item
    return None
