"""The guards of both machines: pure functions of the run's data and the event's arguments.

Each takes the run's `RunData` first (python-statemachine injects it as ``model``) and the
event's keyword arguments; each returns a bool and never does I/O. Their names are the
names in `agentfsm.states.GUARDS`, which says in words what each checks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from agentfsm.fsm.data import RunData
from agentfsm.states.names import InputPolicy, LoopState
from agentfsm.states.tables import PAUSABLE

Guard = Callable[..., bool]
"""A guard: ``guard(model, **event_args) -> bool``."""


def _is_message(text: object) -> bool:
    return isinstance(text, str) and bool(text.strip())


def submit_allowed(model: RunData, text: object = None, **_: object) -> bool:
    """The input is a non-empty message and the run's turn limit is not reached."""
    under_cap = model.max_turns is None or model.turn < model.max_turns
    return under_cap and _is_message(text)


def input_queued(model: RunData, text: object = None, **_: object) -> bool:
    """The run queues inputs that arrive while busy, and this one is a non-empty message."""
    return model.input_policy is InputPolicy.QUEUE and _is_message(text)


def input_interrupts(model: RunData, text: object = None, **_: object) -> bool:
    """An input that arrives while busy interrupts the turn, and this one is a message."""
    return model.input_policy is InputPolicy.INTERRUPT and _is_message(text)


def _ids(calls: object) -> bool:
    return (
        isinstance(calls, Sequence)
        and not isinstance(calls, str)
        and len(calls) > 0
        and all(_is_message(call) for call in calls)
        and len(set(calls)) == len(calls)
    )


def has_calls(model: RunData, calls: object = None, **_: object) -> bool:
    """At least one tool call (given by its id, each once) awaits the application."""
    return _ids(calls)


def decides_every_pending_call(model: RunData, decisions: object = None, **_: object) -> bool:
    """There is exactly one decision (or answer) per pending call id, and no other."""
    return (
        isinstance(decisions, Mapping)
        and bool(model.pending)
        and set(decisions) == set(model.pending)
    )


def asks_question(
    model: RunData, question: object = None, calls: object = None, **_: object
) -> bool:
    """The agent asked a non-empty question through at least one ``ask_user`` call."""
    return _is_message(question) and _ids(calls)


def has_answer(model: RunData, text: object = None, **_: object) -> bool:
    """The user's answer is non-empty text."""
    return _is_message(text)


def turn_finished(model: RunData, **_: object) -> bool:
    """The turn's loop ended with an answer or at its iteration cap."""
    return model.loop_state in (LoopState.ANSWERED, LoopState.EXHAUSTED)


def at_boundary(model: RunData, **_: object) -> bool:
    """No model call and no tool call is in flight."""
    return model.at_boundary


def deadline_passed(model: RunData, now: object = None, **_: object) -> bool:
    """The wait has a deadline and ``now`` (seconds since the epoch) is at or past it."""
    return (
        model.deadline is not None
        and isinstance(now, (int, float))
        and not isinstance(now, bool)
        and now >= model.deadline
    )


def _paused_in(state: str) -> Guard:
    def guard(model: RunData, **_: object) -> bool:
        return model.paused_from == state

    guard.__name__ = guard.__qualname__ = f"paused_in_{state}"
    guard.__doc__ = f"The run was paused in {state!r}."
    return guard


paused_in_ready, paused_in_busy, paused_in_requires_action = (
    _paused_in(state) for state in PAUSABLE[:3]
)
paused_in_input_required, paused_in_completed, paused_in_failed = (
    _paused_in(state) for state in PAUSABLE[3:]
)


def _count(value: object) -> int:
    if type(value) is int:  # the usual case, in one test (a bool is never exactly an int)
        return value if value > 0 else 0
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def no_tool_calls(model: RunData, tool_calls: object = 0, **_: object) -> bool:
    """The response has no tool calls, and the run has no output type to validate it against."""
    return _count(tool_calls) == 0 and model.output_retries is None


def answer_to_validate(model: RunData, tool_calls: object = 0, **_: object) -> bool:
    """The response has no tool calls, and the run has an output type: it is validated."""
    return _count(tool_calls) == 0 and model.output_retries is not None


def needs_action(
    model: RunData, tool_calls: object = 0, needing_action: object = 0, **_: object
) -> bool:
    """Some call of the response needs approval or is client-side."""
    return _count(tool_calls) > 0 and _count(needing_action) > 0


def asks_user_only(
    model: RunData,
    tool_calls: object = 0,
    needing_action: object = 0,
    asking_user: object = 0,
    **_: object,
) -> bool:
    """No call needs approval, but some are ``ask_user`` calls awaiting the user."""
    return _count(tool_calls) > 0 and _count(needing_action) == 0 and _count(asking_user) > 0


def may_run_now(
    model: RunData,
    tool_calls: object = 0,
    needing_action: object = 0,
    asking_user: object = 0,
    **_: object,
) -> bool:
    """Every call of the response may run without waiting for anyone."""
    return _count(tool_calls) > 0 and _count(needing_action) == 0 and _count(asking_user) == 0


def below_max_iterations(model: RunData, **_: object) -> bool:
    """Another iteration fits under the cap."""
    return model.iteration < model.max_iterations


def at_max_iterations(model: RunData, **_: object) -> bool:
    """The turn has used all its iterations."""
    return model.iteration >= model.max_iterations


def child_needs_action(model: RunData, needing_action: object = 0, **_: object) -> bool:
    """The child run waits for approval or a client-side result."""
    return _count(needing_action) > 0


def child_asks_user(
    model: RunData, needing_action: object = 0, asking_user: object = 0, **_: object
) -> bool:
    """The child run waits only for the user's answer to its question."""
    return _count(needing_action) == 0 and _count(asking_user) > 0


def may_retry_output(model: RunData, **_: object) -> bool:
    """An invalid answer may go back to the model: retries and iterations are left."""
    retries = model.output_retries or 0
    return model.invalid_outputs < retries and model.iteration < model.max_iterations


def output_retries_spent(model: RunData, **_: object) -> bool:
    """An invalid answer cannot go back to the model: no retry or no iteration is left."""
    return not may_retry_output(model)


GUARD_FUNCTIONS: dict[str, Guard] = {
    guard.__name__: guard
    for guard in (
        submit_allowed,
        input_queued,
        input_interrupts,
        has_calls,
        decides_every_pending_call,
        asks_question,
        has_answer,
        turn_finished,
        at_boundary,
        deadline_passed,
        paused_in_ready,
        paused_in_busy,
        paused_in_requires_action,
        paused_in_input_required,
        paused_in_completed,
        paused_in_failed,
        no_tool_calls,
        answer_to_validate,
        needs_action,
        asks_user_only,
        may_run_now,
        below_max_iterations,
        at_max_iterations,
        child_needs_action,
        child_asks_user,
        may_retry_output,
        output_retries_spent,
    )
}
"""Every guard by its name, as `agentfsm.states.GUARDS` names them."""
