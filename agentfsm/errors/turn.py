"""Errors of a turn's outcome: a failed turn turned into an exception on request."""

from __future__ import annotations

from agentfsm.errors._base import AgentFSMError


class TurnFailedError(AgentFSMError):
    """A turn failed; raised by `TurnOutcome.raise_for_error` (never by the Agent itself).

    An Agent returns a failed turn as a value (``state="failed"``): the run is at rest and
    its error is recorded. ``outcome.raise_for_error()`` turns it into this exception, for
    code that would rather ``try``/``except`` (as httpx's ``raise_for_status``).

    Attributes:
        reason: Why the turn ended: ``error``, ``output_invalid``, ``cancelled`` or
            ``expired``.
        error_type: The class name of the error that failed it (``ModelCallError``,
            ``ToolTimeoutError``…), or None for a cancelled or expired turn.
        detail: That error's message, or None.
        retryable: Whether the failure was transient (the same input may succeed later).
        retry_after: The wait, in seconds, a server asked for before a retry, else None.
    """

    def __init__(
        self,
        reason: str | None,
        error_type: str | None,
        detail: str | None,
        *,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        self.reason = reason
        self.error_type = error_type
        self.detail = detail
        self.retryable = retryable
        self.retry_after = retry_after
        why = f": {error_type}: {detail}" if error_type is not None else ""
        again = " (transient: it may succeed if tried again)" if retryable else ""
        super().__init__(f"the turn failed (reason {reason!r}){why}{again}")
