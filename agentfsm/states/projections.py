"""How a run's state shows in other systems' vocabularies (the contract §4), as data.

A run at rest is named by its state and, for `completed` and `failed`, the reason of its
last turn. `PROJECTIONS` maps each such pair onto an A2A ``TaskState`` and an
Assistants-style run status, so a server speaking either protocol reads one table (and the
contract test compares it with the page).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentfsm.states.names import CompletedReason, FailedReason, RunState


@dataclass(frozen=True, slots=True)
class Projection:
    """One row of the contract's projection table."""

    a2a: str | None
    """The A2A ``TaskState`` (``None``: no further tasks, for `shutdown`)."""
    a2a_note: str | None
    """What the A2A state leaves implicit (``"approval"``, ``"suspended"``), if anything."""
    assistants: str | None
    """The Assistants-style run status (``None``: none, for `shutdown`)."""


_S = RunState
_P = Projection

PROJECTIONS: dict[tuple[RunState, str | None], Projection] = {
    (_S.CREATED, None): _P("submitted", None, "queued"),
    (_S.READY, None): _P("submitted", None, "queued"),
    (_S.BUSY, None): _P("working", None, "in_progress"),
    (_S.REQUIRES_ACTION, None): _P("input-required", "approval", "requires_action"),
    (_S.INPUT_REQUIRED, None): _P("input-required", None, "requires_action"),
    (_S.COMPLETED, CompletedReason.ANSWERED): _P("completed", None, "completed"),
    (_S.COMPLETED, CompletedReason.MAX_ITERATIONS): _P("completed", None, "incomplete"),
    (_S.FAILED, FailedReason.ERROR): _P("failed", None, "failed"),
    (_S.FAILED, FailedReason.CANCELLED): _P("canceled", None, "cancelled"),
    (_S.FAILED, FailedReason.EXPIRED): _P("failed", None, "expired"),
    (_S.PAUSED, None): _P("working", "suspended", "in_progress"),
    (_S.SHUTDOWN, None): _P(None, None, None),
}
"""(state, reason) → its projection; the reason is ``None`` but for completed and failed."""


def projection(state: str, reason: str | None = None) -> Projection:
    """The projection of a run in ``state`` whose last turn ended for ``reason``.

    Args:
        state: A `RunState` value.
        reason: For ``completed`` a `CompletedReason`, for ``failed`` a `FailedReason`;
            ignored for the other states.

    Raises:
        ValueError: ``state`` is not a run state, or ``reason`` is not one of its reasons.
    """
    try:
        run_state = RunState(state)
    except ValueError:
        allowed = ", ".join(repr(str(s)) for s in RunState)
        raise ValueError(f"state must be one of {allowed}; got {state!r}") from None
    key = (run_state, reason if run_state in (_S.COMPLETED, _S.FAILED) else None)
    if key not in PROJECTIONS:
        reasons = ", ".join(repr(str(r)) for s, r in PROJECTIONS if s == state)
        raise ValueError(f"reason for state {state!r} must be one of {reasons}; got {reason!r}")
    return PROJECTIONS[key]
