"""`RunData`: what both machines of a run read and write.

RunLifecycle keeps its state in ``state`` and TurnLoop in ``loop_state`` of the same object,
so every guard is a pure function of this data and the event's arguments: the loop sees the
turn's iteration count, the run sees the loop's outcome.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentfsm import _checks
from agentfsm.states.names import InputPolicy, RunState


@dataclass(slots=True)
class RunData:
    """The mutable data of one run's machines (their *model*, in python-statemachine terms).

    Built with bad values, it refuses them, naming the field and what it may be:

    Raises:
        TypeError: A field of the wrong kind: a count that is not an int (a bool included),
            a flag that is not a bool, ids or inputs that are not a list or tuple of str,
            a deadline that is not a number, an input policy that is not an `InputPolicy`.
        ValueError: A field out of range: a negative count, a cap below 1,
            a deadline that is not finite, an input policy that is no policy's name.

    An input policy given by its name (``"queue"``) becomes the `InputPolicy`, and ids or
    inputs given as a list become a tuple. Fields set later are not checked.
    """

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

    def __post_init__(self) -> None:
        # One expression for the usual case (about a microsecond); any doubt goes to the
        # check that names the field.
        if not (
            type(self.run_id) is str
            and type(self.turn) is int
            and type(self.iteration) is int
            and type(self.invalid_outputs) is int
            and type(self.max_iterations) is int
            and self.turn >= 0
            and self.iteration >= 0
            and self.invalid_outputs >= 0
            and self.max_iterations >= 1
            and (self.max_turns is None or (type(self.max_turns) is int and self.max_turns >= 1))
            and (
                self.output_retries is None
                or (type(self.output_retries) is int and self.output_retries >= 0)
            )
            and type(self.input_policy) is InputPolicy
            and type(self.at_boundary) is bool
            and type(self.cancel_requested) is bool
            and type(self.pending) is tuple
            and type(self.queued) is tuple
            and all(type(item) is str for item in self.pending + self.queued)
            and self.deadline is None
            and isinstance(self.state, str)
            and (self.loop_state is None or type(self.loop_state) is str)
            and self.paused_from is None
            and self.reason is None
            and self.question is None
        ):
            self._check()

    def _check(self) -> None:
        """Check every field, naming the first bad one; normalise what may be normalised."""
        _checks.text("run_id", self.run_id, empty=True)
        for name in ("state", "loop_state", "paused_from", "reason", "question"):
            _checks.text(name, getattr(self, name), empty=True, optional=True)
        for name in ("turn", "iteration", "invalid_outputs"):
            _checks.whole(name, getattr(self, name), minimum=0)
        _checks.whole("max_iterations", self.max_iterations, minimum=1)
        _checks.whole("max_turns", self.max_turns, minimum=1, optional=True)
        _checks.whole("output_retries", self.output_retries, minimum=0, optional=True)
        self.input_policy = _policy(self.input_policy)
        _checks.flag("at_boundary", self.at_boundary)
        _checks.flag("cancel_requested", self.cancel_requested)
        self.pending = _texts("pending", self.pending)
        self.queued = _texts("queued", self.queued)
        deadline = self.deadline
        if deadline is not None and not _checks.is_time(deadline):
            if not _checks.is_number(deadline):
                _checks.refuse_type(
                    "deadline", deadline, "a time (seconds since the epoch) or None"
                )
            raise ValueError(f"deadline must be a finite time or None, not {deadline!r}")


def _policy(value: object) -> InputPolicy:
    if isinstance(value, InputPolicy):
        return value
    if not isinstance(value, str):
        _checks.refuse_type("input_policy", value, "an InputPolicy or its name")
    _checks.choice("input_policy", value, [policy.value for policy in InputPolicy])
    return InputPolicy(value)


def _texts(name: str, value: object) -> tuple[str, ...]:
    allowed = "a tuple (or list) of str"
    if not isinstance(value, (tuple, list)):
        _checks.refuse_type(name, value, allowed)
    for item in value:
        if not isinstance(item, str):
            raise TypeError(f"{name} must be {allowed}; it holds {_checks.given(item)}")
    return tuple(value)
