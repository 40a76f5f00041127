"""What a tool round produces: a `ToolResult` per call, observations, and the round's outcome."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentfsm._compat import StrEnum
from agentfsm._redact import redact
from agentfsm.states.json import JSONValue
from agentfsm.states.messages import Message
from agentfsm.states.unchecked import twin

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class ToolStatus(StrEnum):
    """How one tool call ended.

    The refusals (``not_found``, ``disabled``, ``denied``, ``invalid_arguments``) guarantee
    that the body did not run (the contract's I9); `ToolResult.attempts` says how many times
    it did run otherwise.
    """

    SUCCESS = "success"
    """The body returned a JSON value (or the application gave a client-side output)."""
    ERROR = "error"
    """The body raised, or returned something that is not JSON."""
    TIMEOUT = "timeout"
    """The body did not finish within the tool's timeout."""
    NOT_FOUND = "not_found"
    """No tool of the called name is registered."""
    DISABLED = "disabled"
    """The tool is registered but not enabled for this run."""
    DENIED = "denied"
    """The tool's policy or the application's decision did not permit the call."""
    INVALID_ARGUMENTS = "invalid_arguments"
    """The arguments were too big, too deep, not a JSON object, or did not match the schema."""


class ToolErrorInfo(BaseModel):
    """Why a call did not succeed, as the model and the trace see it."""

    model_config = _FROZEN

    type: str
    """The exception's class name: the tool's own (``ValueError``) or agentfsm's
    (``ToolArgumentsError``, ``ToolDeniedError``…)."""
    message: str
    """The exception's message: what went wrong and, for a refusal, what is allowed."""


@dataclass(frozen=True, slots=True)
class ErrorDetails:
    """What went wrong in a model call or a tool call, for the application.

    `TurnOutcome.error` holds the error that failed a turn; `HookContext.error` the one an
    ``on_error`` handler is told of, from a model call or a tool call alike.

    Example:
        >>> from agentfsm.errors import ModelCallError
        >>> error = ModelCallError(
        ...     "HTTP 429", model="m", reason="http_status", retryable=True, retry_after=30.0
        ... )
        >>> ErrorDetails.of(error)
        ErrorDetails(type='ModelCallError', message='HTTP 429', retryable=True, retry_after=30.0)
    """

    type: str
    """The exception's class name (``ModelCallError``, ``ToolTimeoutError``, ``ValueError``…)."""
    message: str
    """What went wrong (credentials in it are redacted, as in the run's events)."""
    retryable: bool = False
    """Whether the failure was of a transient kind: the same call may succeed later (a
    model call's `ModelCallError.retryable`; a tool call that timed out)."""
    retry_after: float | None = None
    """The wait, in seconds, the server asked for before a retry (a model call's
    `ModelCallError.retry_after`), else None."""

    @classmethod
    def of(cls, error: BaseException) -> ErrorDetails:
        """The details of ``error``: its type, its message, and whether and when to retry.

        ``retryable`` and ``retry_after`` are read from the error's attributes of those
        names (`ModelCallError` has them); other errors are not retryable.
        """
        retryable = getattr(error, "retryable", False)
        retry_after = getattr(error, "retry_after", None)
        return cls(
            type=type(error).__name__,
            message=redact(str(error)) or type(error).__name__,
            retryable=retryable is True,
            retry_after=_seconds(retry_after),
        )

    @classmethod
    def of_result(cls, result: ToolResult) -> ErrorDetails | None:
        """The details of a tool call that did not succeed (None for a success)."""
        if result.error is None:
            return None
        return cls(
            type=result.error.type,
            message=result.error.message,
            retryable=result.status is ToolStatus.TIMEOUT,
        )

    @classmethod
    def of_event(cls, data: Mapping[str, object]) -> ErrorDetails:
        """The details a ``fail`` event's data holds.

        That is ``error_type`` and ``message``, and, for a failed model call, ``retryable``
        and ``retry_after``.
        """
        retryable, retry_after = data.get("retryable"), data.get("retry_after")
        return cls(
            type=str(data.get("error_type", "Error")),
            message=str(data.get("message", "")),
            retryable=retryable is True,
            retry_after=_seconds(retry_after),
        )

    def event_data(self) -> dict[str, JSONValue]:
        """As a ``fail`` event's data.

        That is ``error_type`` and ``message``, and ``retryable`` and ``retry_after`` when
        they say more than their defaults.
        """
        data: dict[str, JSONValue] = {"error_type": self.type, "message": self.message}
        if self.retryable:
            data["retryable"] = True
        if self.retry_after is not None:
            data["retry_after"] = self.retry_after
        return data


def _seconds(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


class ToolResult(BaseModel):
    """The outcome of one tool call; its tool message answers exactly that call."""

    model_config = _FROZEN

    call_id: str
    """The id of the call this answers."""
    tool_name: str
    """The tool name the call asked for (even when no such tool exists)."""
    status: ToolStatus
    """How the call ended."""
    output: JSONValue = None
    """What the body returned, as JSON (None unless ``status`` is ``success``)."""
    error: ToolErrorInfo | None = None
    """Why it did not succeed (None exactly when ``status`` is ``success``)."""
    duration: float = Field(default=0.0, ge=0.0)
    """Seconds spent on the call, checks and retries included."""
    attempts: int = Field(default=0, ge=0)
    """How many times the body was started: 0 when it never ran (a refusal or a
    client-side output), more than 1 when an idempotent tool was retried."""

    @model_validator(mode="after")
    def _error_iff_not_success(self) -> ToolResult:
        if (self.error is None) != (self.status is ToolStatus.SUCCESS):
            raise ValueError("a result has an error exactly when its status is not 'success'")
        return self

    @property
    def ok(self) -> bool:
        """Whether the call succeeded."""
        return self.status is ToolStatus.SUCCESS

    def content(self) -> str:
        """The text of the call's tool message, as the model will read it.

        A string output is sent as it is, any other output as JSON; a failure as
        ``"[<status>] <error type>: <error message>"``.
        """
        if self.error is not None:
            return failure_content(self.status, self.error)
        if isinstance(self.output, str):
            return self.output
        return json.dumps(self.output, ensure_ascii=False)

    def to_message(self) -> Message:
        """The tool message answering the call."""
        return Message.tool(self.call_id, self.content(), name=self.tool_name)


RESULT_GIVEN = set(ToolResult.model_fields)
"""Every field of a `ToolResult`: `tool_result` gives them all (the set every result it
builds shares: ``result.__pydantic_fields_set__ is RESULT_GIVEN`` tells them apart)."""
_ResultTwin = twin(ToolResult)
"""`ToolResult`'s layout with plain attribute stores (see `agentfsm.states.unchecked.twin`)."""


def tool_result(
    call_id: str,
    tool_name: str,
    status: ToolStatus,
    output: JSONValue,
    error: ToolErrorInfo | None,
    duration: float,
    attempts: int,
) -> ToolResult:
    """A `ToolResult` built without validation, by the `ToolSystem` for each call it answers.

    The caller guarantees what validation would check: ``error`` is None exactly when
    ``status`` is ``success``, ``output`` is JSON (from `json_output`) and ``attempts`` is
    not negative. A ``duration`` below zero (a timer that went backwards) is taken as 0.
    """
    # An instance of the twin, each field and slot a plain store (in the class's field order:
    # see agentfsm.states.unchecked), made a `ToolResult`: a run builds one result per call,
    # and keeps it (with a ``__dict__`` object, as pydantic's own results have).
    result = _ResultTwin()
    result.call_id = call_id
    result.tool_name = tool_name
    result.status = status
    result.output = output
    result.error = error
    result.duration = float(duration) if duration > 0 else 0.0
    result.attempts = attempts
    result.__pydantic_fields_set__ = RESULT_GIVEN
    result.__pydantic_extra__ = None
    result.__pydantic_private__ = None
    result.__class__ = ToolResult
    made: ToolResult = result
    return made


_SCALARS = (int, float, bool)
_PLAIN_OUTPUT = frozenset({str, int, float, bool, type(None)})


def result_json(result: ToolResult) -> dict[str, JSONValue]:
    """``result.model_dump(mode="json")``, built directly (a test pins them equal).

    A run records every result as JSON; this is a third of pydantic's cost. An output
    that is an array or an object goes through pydantic, which copies it.
    """
    if type(result) is not ToolResult or type(result.output) not in _PLAIN_OUTPUT:
        return result.model_dump(mode="json")
    error = result.error
    return {
        "call_id": result.call_id,
        "tool_name": result.tool_name,
        "status": str(result.status),
        "output": result.output,
        "error": None if error is None else {"type": error.type, "message": error.message},
        "duration": result.duration,
        "attempts": result.attempts,
    }


def json_output(value: object) -> tuple[JSONValue, str]:
    """A body's return value as JSON, and the text of its tool message.

    A pydantic model is dumped in JSON mode; tuples become lists. A string is sent as it
    is, anything else as JSON text.

    Raises:
        TypeError: The value (or something inside it) is not JSON-serialisable.
        ValueError: It holds NaN or an infinity, or refers to itself.
        RecursionError: It is nested too deeply to serialise.
    """
    if type(value) is str:
        return value, value
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    if value is None:
        return None, text
    if isinstance(value, (int, float)) and type(value) in _SCALARS:
        return value, text  # exactly int, float or bool: already JSON
    output: JSONValue = json.loads(text)
    return output, output if isinstance(output, str) else text


def failure_content(status: ToolStatus, error: ToolErrorInfo) -> str:
    """The tool-message text of a failed call."""
    return f"[{status}] {error.type}: {error.message}"


class ObservationType(StrEnum):
    """The kinds of trace entry a tool round produces."""

    STARTED = "tool.call.started"
    """A body is about to run (all checks passed). With no matching ``finished`` entry in a
    crashed run's trace, the call's outcome is unknown (the contract's I11)."""
    FINISHED = "tool.call.finished"
    """A call has its result and tool message (whether or not its body ran)."""


class ToolObservation(BaseModel):
    """One trace entry of a tool round, given to the `ToolSystem`'s observer as it happens.

    The Agent turns these into its trace and its event stream.
    """

    model_config = _FROZEN

    type: ObservationType
    """What happened."""
    run_id: str
    """The run the round belongs to."""
    turn: int
    """The run's turn."""
    iteration: int
    """The iteration of the turn whose model response asked for the call."""
    index: int = Field(ge=0)
    """The call's position in the round (0 for the first call)."""
    call_id: str
    """The call's id."""
    tool_name: str
    """The tool name the call asked for."""
    at: float
    """When it happened, in seconds since the Unix epoch, from the system's clock."""
    result: ToolResult | None = None
    """For ``tool.call.finished``: the call's result."""


@dataclass(frozen=True, slots=True)
class RoundResult:
    """Everything a tool round adds to the conversation, in order."""

    results: tuple[ToolResult, ...]
    """One result per call, in call order."""
    messages: tuple[Message, ...]
    """The messages to append: one tool message per call, in call order (the contract's I7),
    then the messages that ``before_tools`` and ``after_tools`` hooks added."""

    @property
    def tool_messages(self) -> tuple[Message, ...]:
        """Only the tool messages, one per call, in call order."""
        return self.messages[: len(self.results)]


class _Unfrozen:
    """`RoundResult`'s layout without its frozen ``__setattr__`` (see `round_result`)."""

    __slots__ = RoundResult.__slots__
    results: tuple[ToolResult, ...]
    messages: tuple[Message, ...]


def round_result(results: tuple[ToolResult, ...], messages: tuple[Message, ...]) -> RoundResult:
    """``RoundResult(results, messages)``, built directly.

    A frozen dataclass's constructor sets each field through ``object.__setattr__``; a round
    makes one of these, so this stores each slot of an unfrozen twin and then gives it
    `RoundResult`'s class (allowed between classes with the same slots); a property test
    pins the two equal.
    """
    made = _Unfrozen()
    made.results = results
    made.messages = messages
    made.__class__ = RoundResult  # type: ignore[assignment]  # the same slots
    return made  # type: ignore[return-value]  # now a RoundResult
