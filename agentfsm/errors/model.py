"""Errors of models: calls, responses, configuration, rejected outputs."""

from __future__ import annotations

from agentfsm.errors._base import AgentFSMError


class ModelError(AgentFSMError):
    """A model call failed for good: transient failures were already retried.

    Attributes:
        model: The model's name.
        reason: A short machine-readable reason, e.g. ``"status"``, ``"length"``.
        attempts: How many attempts were made.
    """

    def __init__(self, message: str, *, model: str, reason: str, attempts: int = 1) -> None:
        self.model = model
        self.reason = reason
        self.attempts = attempts
        super().__init__(message)


class ModelCallError(ModelError):
    """The request failed: an HTTP error status, a connection error or a timeout.

    Attributes:
        status_code: The HTTP status, or None when no response arrived.
        retryable: Whether the failure was of a transient kind: the call may be tried again
            later (after ``retry_after`` seconds, when that is set).
        retry_after: The wait, in seconds, the server asked for before a retry, when the
            call failed at once rather than retry early (longer than the policy's
            ``max_retry_after`` or than the call's deadline leaves); else None.
    """

    def __init__(
        self,
        message: str,
        *,
        model: str,
        reason: str,
        attempts: int = 1,
        status_code: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        self.status_code = status_code
        self.retryable = retryable
        self.retry_after = retry_after
        super().__init__(message, model=model, reason=reason, attempts=attempts)


class ModelResponseError(ModelError):
    """A response arrived but cannot be used.

    It was cut off (``length``), filtered (``content_filter``), had no choices, was
    malformed, or was a stream that ended without a finish reason.
    """


class ModelConfigError(AgentFSMError):
    """A model cannot be built as asked: an unknown model spec, or no API key.

    Raised when the model is made, before any call, so a misconfiguration fails early.

    Attributes:
        spec: The model spec or name asked for.
    """

    def __init__(self, spec: str, problem: str) -> None:
        self.spec = spec
        super().__init__(f"model {spec!r} cannot be used: {problem}")


class ModelSettingsError(AgentFSMError, ValueError):
    """Model settings that cannot be sent: an unknown field, or a value out of its range.

    Raised when the settings are given (to the Agent, or with a turn's input), before
    anything changes: a temperature of 7, a ``tool_choice`` naming no offered tool, a
    setting the model cannot honour.

    Attributes:
        field: The setting that is wrong (e.g. ``"temperature"``).
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        super().__init__(f"model setting {field!r} {problem}")


class OutputRejectedError(AgentFSMError):
    """Raised by an output validator to send the model's answer back with ``message``.

    An Agent with an ``output_type`` runs its ``output_validators`` on an answer that
    validated against the type. One that raises this error makes the answer invalid: the
    loop records ``output_invalid`` with ``message`` as the error, and the model gets
    ``message`` to correct its answer while the turn's ``output_retries`` last (then the
    turn fails with reason ``output_invalid``). Any other exception a validator raises
    fails the turn with reason ``error``.

    Attributes:
        message: What is wrong with the answer, for the model to read.
    """

    def __init__(self, message: str) -> None:
        if not isinstance(message, str) or not message.strip():
            raise TypeError(
                f"OutputRejectedError needs a message for the model (a non-empty str), "
                f"not {message!r}"
            )
        self.message = message
        super().__init__(message)
