"""Errors across the wire: an agentfsm error becomes a Temporal failure and back, unchanged.

A refused update, a failed model call or a failed tool body crosses a process boundary as an
`ApplicationError` whose ``type`` is the exception's class name and whose details hold its
attributes. On the other side the same class is rebuilt with the same message and
attributes, so ``except IllegalTransitionError`` and ``str(error)`` read as in-process.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any

from temporalio.exceptions import ApplicationError

from agentfsm import errors
from agentfsm.agent.vocabulary import TurnOutcome
from agentfsm.states.json import JSONValue
from agentfsm.states.messages import ToolCall
from agentfsm.tools.results import ErrorDetails


def _plain(value: object) -> JSONValue:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    return str(value)


def attributes(error: BaseException) -> dict[str, JSONValue]:
    """The error's own attributes, as JSON values."""
    own = getattr(error, "__dict__", {})
    return {key: _plain(value) for key, value in own.items() if not key.startswith("_")}


def to_failure(
    error: BaseException, *, retryable: bool = False, attempt: int | None = None
) -> ApplicationError:
    """``error`` as an `ApplicationError` of its class name, message and attributes.

    ``attempt`` (a tool activity's) is the second detail, read back by `failure_attempt`.
    """
    details: list[object] = [attributes(error)]
    if attempt is not None:
        details.append(attempt)
    return ApplicationError(
        str(error),
        *details,
        type=type(error).__name__,
        non_retryable=not retryable,
    )


def failure_attempt(failure: ApplicationError) -> int | None:
    """The attempt ``failure`` was raised in (see `to_failure`), if it says."""
    details = failure.details
    attempt = details[1] if len(details) > 1 else None
    return attempt if isinstance(attempt, int) and not isinstance(attempt, bool) else None


def rebuild(type_name: str | None, message: str, details: object = None) -> Exception:
    """The exception a failure stands for.

    An agentfsm error is rebuilt as its own class, with its message and attributes; any
    other type as an `Exception` subclass of the same name (so its ``type(e).__name__``,
    what a tool result records, is the same).
    """
    name = type_name or "Exception"
    found = getattr(errors, name, None)
    if isinstance(found, type) and issubclass(found, errors.AgentFSMError):
        error: Exception = found.__new__(found)
        Exception.__init__(error, message)
        if isinstance(details, dict):
            for key, value in details.items():
                setattr(error, key, tuple(value) if isinstance(value, list) else value)
        return error
    builtin = getattr(builtins, name, None)
    if isinstance(builtin, type) and issubclass(builtin, Exception):
        return builtin(message)
    kind: type[Exception] = type(name, (Exception,), {})
    return kind(message)


def from_failure(failure: ApplicationError) -> Exception:
    """The exception ``failure`` carries (see `rebuild`)."""
    details: Any = failure.details[0] if failure.details else None
    return rebuild(failure.type, failure.message, details)


def outcome_json(outcome: TurnOutcome) -> dict[str, JSONValue]:
    """A `TurnOutcome` as JSON (what an update returns and a query answers)."""
    error = outcome.error
    return {
        "state": outcome.state,
        "reason": outcome.reason,
        "reply": outcome.reply,
        "pending": [call.model_dump(mode="json") for call in outcome.pending],
        "question": outcome.question,
        "error": None
        if error is None
        else {
            "type": error.type,
            "message": error.message,
            "retryable": error.retryable,
            "retry_after": error.retry_after,
        },
    }


def outcome_of(data: Mapping[str, Any]) -> TurnOutcome:
    """The `TurnOutcome` ``data`` (from `outcome_json`) stands for."""
    error = data.get("error")
    return TurnOutcome(
        state=data["state"],
        reason=data.get("reason"),
        reply=data.get("reply"),
        pending=tuple(ToolCall.model_validate(call) for call in data.get("pending") or ()),
        question=data.get("question"),
        error=None if not error else ErrorDetails(**error),
    )
