"""The projections of docs/contract.md §4, as data: a run's state seen by other vocabularies.

A run is served over protocols that have their own, coarser words for where a piece of work
is: the A2A protocol's task states and the Assistants-style run statuses. `PROJECTIONS` maps
every run state, and for the two outcome states every reason, onto one word of each, so a
server (`agentfsm.serve.a2a`) and the tests read the same table. `project` looks a
configuration up.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentfsm._compat import StrEnum
from agentfsm.states.names import CompletedReason, FailedReason, RunState


class A2AState(StrEnum):
    """The A2A protocol's task states (v1.0 ``TaskState``, in the protocol's JSON words)."""

    SUBMITTED = "submitted"
    """Received, not yet worked on."""
    WORKING = "working"
    """Being worked on."""
    INPUT_REQUIRED = "input-required"
    """Waiting for the client: an answer, or a decision on pending tool calls."""
    COMPLETED = "completed"
    """Terminal: done, with its result."""
    FAILED = "failed"
    """Terminal: ended by an error (or a wait that expired)."""
    CANCELED = "canceled"
    """Terminal: cancelled by the client."""


A2A_TERMINAL = frozenset({A2AState.COMPLETED, A2AState.FAILED, A2AState.CANCELED})
"""The A2A states a task never leaves."""
A2A_INTERRUPTED = frozenset({A2AState.INPUT_REQUIRED})
"""The A2A states in which a task waits for the client's next message."""


class AssistantsStatus(StrEnum):
    """The run statuses of an Assistants-style API."""

    QUEUED = "queued"
    """Accepted, not started."""
    IN_PROGRESS = "in_progress"
    """Running (or suspended mid-way)."""
    REQUIRES_ACTION = "requires_action"
    """Waiting for tool outputs or an answer from the client."""
    COMPLETED = "completed"
    """Finished with an answer."""
    INCOMPLETE = "incomplete"
    """Finished at a limit (here: the iteration cap) before the task was done."""
    FAILED = "failed"
    """Ended by an error."""
    CANCELLED = "cancelled"
    """Cancelled by the client."""
    EXPIRED = "expired"
    """A wait passed its deadline."""


@dataclass(frozen=True, slots=True)
class Projection:
    """One row of docs/contract.md §4: a run state (and reason) and what it is called elsewhere."""

    state: RunState
    """The run's state."""
    reason: str | None
    """The turn's reason (`CompletedReason` / `FailedReason`); None where it does not matter."""
    a2a: A2AState
    """The A2A task state."""
    assistants: AssistantsStatus | None
    """The Assistants-style status; None for a shut-down run, which has no further runs."""
    note: str = ""
    """What the row means where the word alone does not say it."""


_R, _A, _S = RunState, A2AState, AssistantsStatus
_C, _F = CompletedReason, FailedReason

PROJECTIONS: tuple[Projection, ...] = (
    Projection(_R.CREATED, None, _A.SUBMITTED, _S.QUEUED),
    Projection(_R.READY, None, _A.SUBMITTED, _S.QUEUED),
    Projection(_R.BUSY, None, _A.WORKING, _S.IN_PROGRESS),
    Projection(
        _R.REQUIRES_ACTION,
        None,
        _A.INPUT_REQUIRED,
        _S.REQUIRES_ACTION,
        "approval: a data part lists the pending calls; the decisions come back as one",
    ),
    Projection(
        _R.INPUT_REQUIRED,
        None,
        _A.INPUT_REQUIRED,
        _S.REQUIRES_ACTION,
        "the question is the status message; the answer is the next message's text",
    ),
    Projection(_R.COMPLETED, _C.ANSWERED, _A.COMPLETED, _S.COMPLETED),
    Projection(_R.COMPLETED, _C.MAX_ITERATIONS, _A.COMPLETED, _S.INCOMPLETE),
    Projection(_R.FAILED, _F.ERROR, _A.FAILED, _S.FAILED),
    Projection(_R.FAILED, _F.CANCELLED, _A.CANCELED, _S.CANCELLED),
    Projection(_R.FAILED, _F.EXPIRED, _A.FAILED, _S.EXPIRED),
    Projection(_R.FAILED, _F.OUTPUT_INVALID, _A.FAILED, _S.FAILED),
    Projection(_R.PAUSED, None, _A.WORKING, _S.IN_PROGRESS, "suspended"),
    Projection(
        _R.SHUTDOWN,
        None,
        _A.CANCELED,
        None,
        "no further tasks: the run is closed, a message to it is refused",
    ),
)
"""docs/contract.md §4, one row per run state, and per reason for ``completed`` and ``failed``."""

REASONED = frozenset({RunState.COMPLETED, RunState.FAILED})
"""The states whose projection depends on the turn's reason."""

_BY_KEY: dict[tuple[str, str | None], Projection] = {
    (row.state, row.reason): row for row in PROJECTIONS
}


def project(state: str, reason: str | None = None) -> Projection:
    """The row of `PROJECTIONS` for a run in ``state`` whose last turn ended for ``reason``.

    ``reason`` is read only for ``completed`` and ``failed``; elsewhere it is ignored (a
    paused run keeps the reason of the turn before it).

    Raises:
        ValueError: ``state`` is not a run state, or ``reason`` is not one of that state's
            reasons.
    """
    key = (state, reason if state in REASONED else None)
    row = _BY_KEY.get(key)
    if row is None:
        if state not in set(RunState):
            raise ValueError(
                f"state is {state!r}; expected a run state: {', '.join(map(repr, RunState))}"
            )
        allowed = [repr(r.reason) for r in PROJECTIONS if r.state == state]
        raise ValueError(
            f"reason for state {state!r} is {reason!r}; expected one of {', '.join(allowed)}"
        )
    return row
