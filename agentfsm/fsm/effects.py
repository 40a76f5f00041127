"""The effects of transitions on the run's data.

Each takes the run's `RunData`, the source state and the event's keyword arguments:
``effect(model, source, **event_args)``. python-statemachine injects ``model`` and
``source`` by name (``source`` as its `State`); the compiled machine passes them by
position (``source`` as the state's name), the cheaper call on the hot path.

Effects never read ``model.state``: during a transition it is in flux. They only assign
fields, so they cannot fail halfway.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agentfsm.fsm.data import RunData
from agentfsm.states.names import CompletedReason, FailedReason, LoopState

Effect = Callable[..., None]
"""An effect: ``effect(model, source, **event_args) -> None``."""


def _state_name(source: object) -> str:
    # The compiled machine passes the state's name; python-statemachine passes its State.
    # (isinstance first: a getattr that misses raises inside, which costs a microsecond.)
    return source if isinstance(source, str) else str(getattr(source, "value", source))


def _tuple(values: object) -> tuple[str, ...]:
    return tuple(values) if isinstance(values, Sequence) and not isinstance(values, str) else ()


def begin_turn(
    model: RunData, source: object = None, from_queue: object = False, **_: object
) -> None:
    """Count the turn and reset the per-turn data (I5: turn += 1, iteration = 0).

    A submit ``from_queue`` takes its input from the head of the queue, which it removes:
    draining the queue is part of the transition, so replaying the log rebuilds it.
    """
    if from_queue is True and model.queued:
        model.queued = model.queued[1:]
    model.turn += 1
    model.iteration = 0
    model.loop_state = None
    model.reason = None
    model.pending = ()
    model.question = None
    model.deadline = None
    model.cancel_requested = False
    model.invalid_outputs = 0


def queue_input(model: RunData, source: object = None, text: object = None, **_: object) -> None:
    """Keep an input that arrived while busy; it is submitted when the turn ends."""
    model.queued = (*model.queued, str(text))


def interrupt_turn(
    model: RunData, source: object = None, text: object = None, **_: object
) -> None:
    """Keep the input and ask for the turn to be cancelled at its next boundary."""
    model.queued = (*model.queued, str(text))
    model.cancel_requested = True


def record_pending(
    model: RunData,
    source: object = None,
    calls: object = None,
    deadline: object = None,
    **_: object,
) -> None:
    """Record the calls that await the application, and the wait's deadline if any."""
    model.pending = _tuple(calls)
    model.deadline = float(deadline) if isinstance(deadline, (int, float)) else None


def record_question(
    model: RunData,
    source: object = None,
    question: object = None,
    calls: object = None,
    deadline: object = None,
    **_: object,
) -> None:
    """Record the question and the ``ask_user`` calls awaiting the user's answer."""
    record_pending(model, calls=calls, deadline=deadline)
    model.question = str(question)


def clear_pending(model: RunData, source: object = None, **_: object) -> None:
    """Every pending call was decided: nothing awaits the application any more."""
    model.pending = ()
    model.question = None
    model.deadline = None


def finish_turn(model: RunData, source: object = None, **_: object) -> None:
    """Record why the turn completed, from how its loop ended."""
    exhausted = model.loop_state == LoopState.EXHAUSTED
    model.reason = CompletedReason.MAX_ITERATIONS if exhausted else CompletedReason.ANSWERED


def record_error(model: RunData, source: object = None, **_: object) -> None:
    """The turn failed: with an error, or with an answer its loop rejected as invalid."""
    rejected = model.loop_state == LoopState.REJECTED
    model.reason = FailedReason.OUTPUT_INVALID if rejected else FailedReason.ERROR


def count_invalid_output(model: RunData, source: object = None, **_: object) -> None:
    """One more final answer of the turn failed its output validation."""
    model.invalid_outputs += 1


def cancel_turn(model: RunData, source: object = None, **_: object) -> None:
    """The turn was cancelled: nothing is pending any more."""
    clear_pending(model)
    model.reason = FailedReason.CANCELLED
    model.cancel_requested = False


def expire_wait(model: RunData, source: object = None, **_: object) -> None:
    """The wait expired: nothing is pending any more."""
    clear_pending(model)
    model.reason = FailedReason.EXPIRED


def remember_pause(model: RunData, source: object = None, **_: object) -> None:
    """Remember the state the run was paused in, for `resume`."""
    model.paused_from = _state_name(source)


def forget_pause(model: RunData, source: object = None, **_: object) -> None:
    """The run is back where it was paused."""
    model.paused_from = None


def count_iteration(model: RunData, source: object = None, **_: object) -> None:
    """Entering ``thinking`` starts an iteration."""
    model.iteration += 1
