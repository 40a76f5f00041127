"""`RunData`: what both machines of a run read and write.

RunLifecycle keeps its state in ``state`` and TurnLoop in ``loop_state`` of the same object,
so every guard is a pure function of this data and the event's arguments: the loop sees the
turn's iteration count, the run sees the loop's outcome.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentfsm.states.names import InputPolicy, RunState


@dataclass(slots=True)
class RunData:
    """The mutable data of one run's machines (their *model*, in python-statemachine terms)."""

    run_id: str
    """The run's identifier."""
    state: str = RunState.CREATED
    """RunLifecycle's current state."""
    loop_state: str | None = None
    """TurnLoop's current state; None before the first turn."""
    turn: int = 0
    """How many inputs were accepted by `submit` (I5)."""
    iteration: int = 0
    """Model calls in the current turn; never above ``max_iterations`` (I8)."""
    max_iterations: int = 10
    """The cap on iterations in one turn."""
    max_turns: int | None = None
    """The cap on turns (1 for a single-turn run); None for no cap."""
    input_policy: InputPolicy = InputPolicy.REJECT
    """What a `submit` does while the run is busy."""
    at_boundary: bool = True
    """True while no model call and no tool call is in flight (a safe point to stop)."""
    pending: tuple[str, ...] = ()
    """Ids of the tool calls that await a decision or an answer."""
    question: str | None = None
    """The question awaiting the user's answer, in input_required."""
    deadline: float | None = None
    """When the current wait expires (seconds since the epoch), if it has a deadline."""
    paused_from: str | None = None
    """The state the run was paused in, which `resume` returns to."""
    reason: str | None = None
    """Why the last turn ended (`CompletedReason` or `FailedReason`), None while it runs."""
    queued: tuple[str, ...] = ()
    """Inputs submitted while busy, to be submitted when the turn ends."""
    cancel_requested: bool = False
    """An interrupting submit asked to cancel the turn at its next boundary."""
    output_retries: int | None = None
    """How many invalid final answers a turn may send back to the model; None when the run
    has no output type (its answers are not validated)."""
    invalid_outputs: int = 0
    """Final answers of the current turn that failed their output validation."""
