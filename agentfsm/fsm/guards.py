"""The guards of both machines: pure functions of the run's data and the event's arguments.

Each is written once, as a *check* ``check(model, args)``: the run's `RunData` and the event's
arguments as one mapping (read with ``args.get(name, default)``). `guard` turns a check into
the declared form, ``guard(model, **event_args)``, which python-statemachine (it injects the
data as ``model``) and the verifier call; the compiled machine calls the check itself, with
no keyword unpacking (`check_of`), which costs a fraction of a keyword call. Each returns a
bool and never does I/O. Their names are the names in `agentfsm.states.GUARDS`, which says
in words what each checks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from agentfsm import _checks
from agentfsm.fsm.data import RunData
from agentfsm.states.names import InputPolicy, LoopState
from agentfsm.states.tables import PAUSABLE

Guard = Callable[..., bool]
"""A guard: ``guard(model, **event_args) -> bool``."""

Args = Mapping[str, object]
"""An event's arguments, as a check reads them."""

Check = Callable[[RunData, Args], bool]
"""A guard as the compiled machine calls it: ``check(model, event_args) -> bool``."""

Selector = Callable[[RunData, Args], int]
"""A chain of checks asked at once: ``select(model, event_args)`` is the index of the first
transition of a group whose check holds (-1 if none does)."""

_CHECKS: dict[Guard, Check] = {}
_SELECTORS: dict[tuple[Check, ...], Selector] = {}


def guard(check: Check) -> Guard:
    """The declared guard for ``check``: ``guard(model, **event_args)``, same name and doc."""

    def declared(model: RunData, **args: object) -> bool:
        return check(model, args)

    declared.__name__ = declared.__qualname__ = check.__name__
    declared.__doc__ = check.__doc__
    _CHECKS[declared] = check
    return declared


def check_of(declared: Guard) -> Check | None:
    """The check a guard of this module was made from; None for any other callable."""
    return _CHECKS.get(declared)


def selector_of(checks: tuple[Check, ...]) -> Selector | None:
    """The selector that asks a group's ``checks`` (one per transition, in order) at once.

    None for any group but those this module writes a selector for (a differential property
    test pins each selector to its chain of checks).
    """
    return _SELECTORS.get(checks)


def _is_message(text: object) -> bool:
    return isinstance(text, str) and bool(text.strip())


def _is_deadline(deadline: object) -> bool:
    """None, or a finite number that is not a bool (``True`` is no time)."""
    return deadline is None or _checks.is_time(deadline)


@guard
def submit_allowed(model: RunData, args: Args) -> bool:
    """The input is a non-empty message and the run's turn limit is not reached."""
    text = args.get("text")
    under_cap = model.max_turns is None or model.turn < model.max_turns
    return under_cap and _is_message(text)


@guard
def input_queued(model: RunData, args: Args) -> bool:
    """The run queues inputs that arrive while busy, and this one is a non-empty message."""
    text = args.get("text")
    return model.input_policy is InputPolicy.QUEUE and _is_message(text)


@guard
def input_interrupts(model: RunData, args: Args) -> bool:
    """An input that arrives while busy interrupts the turn, and this one is a message."""
    text = args.get("text")
    return model.input_policy is InputPolicy.INTERRUPT and _is_message(text)


def _ids(calls: object) -> bool:
    return (
        isinstance(calls, Sequence)
        and not isinstance(calls, str)
        and len(calls) > 0
        and all(_is_message(call) for call in calls)
        and len(set(calls)) == len(calls)
    )


@guard
def has_calls(model: RunData, args: Args) -> bool:
    """At least one tool call (given by its id, each once) awaits the application.

    By a deadline that is a time (seconds since the epoch, a finite number) or none.
    """
    calls = args.get("calls")
    return _ids(calls) and _is_deadline(args.get("deadline"))


@guard
def decides_every_pending_call(model: RunData, args: Args) -> bool:
    """There is exactly one decision (or answer) per pending call id, and no other."""
    decisions = args.get("decisions")
    return (
        isinstance(decisions, Mapping)
        and bool(model.pending)
        and set(decisions) == set(model.pending)
    )


@guard
def asks_question(model: RunData, args: Args) -> bool:
    """The agent asked a non-empty question through at least one ``ask_user`` call.

    To be answered by a deadline that is a time (seconds since the epoch, a finite number)
    or none.
    """
    question = args.get("question")
    calls = args.get("calls")
    return _is_message(question) and _ids(calls) and _is_deadline(args.get("deadline"))


@guard
def has_answer(model: RunData, args: Args) -> bool:
    """The user's answer is non-empty text."""
    text = args.get("text")
    return _is_message(text)


@guard
def turn_finished(model: RunData, args: Args) -> bool:
    """The turn's loop ended with an answer or at its iteration cap."""
    return model.loop_state in (LoopState.ANSWERED, LoopState.EXHAUSTED)


@guard
def at_boundary(model: RunData, args: Args) -> bool:
    """No model call and no tool call is in flight."""
    return model.at_boundary


@guard
def deadline_passed(model: RunData, args: Args) -> bool:
    """The wait has a deadline and ``now`` (seconds since the epoch) is at or past it."""
    now = args.get("now")
    return (
        model.deadline is not None
        and isinstance(now, (int, float))
        and not isinstance(now, bool)
        and now >= model.deadline
    )


def _paused_in(state: str) -> Guard:
    def check(model: RunData, args: Args) -> bool:
        return model.paused_from == state

    check.__name__ = check.__qualname__ = f"paused_in_{state}"
    check.__doc__ = f"The run was paused in {state!r}."
    return guard(check)


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


def _counts(args: Args) -> tuple[int, int, int]:
    """A reply's counts, read once: its tool calls, those needing action, those asking the user.

    The ``replied`` guards are asked in turn every iteration and compare each count with 0
    only, so an int (what the Agent sends) is taken as it is: a negative one reads as none,
    as `_count` makes it. Anything else goes through `_count`.
    """
    calls = args.get("tool_calls", 0)
    needing = args.get("needing_action", 0)
    asking = args.get("asking_user", 0)
    if type(calls) is int and type(needing) is int and type(asking) is int:
        return calls, needing, asking
    return _count(calls), _count(needing), _count(asking)


@guard
def no_tool_calls(model: RunData, args: Args) -> bool:
    """The response has no tool calls, and the run has no output type to validate it against."""
    return _count(args.get("tool_calls", 0)) == 0 and model.output_retries is None


@guard
def answer_to_validate(model: RunData, args: Args) -> bool:
    """The response has no tool calls, and the run has an output type: it is validated."""
    return _count(args.get("tool_calls", 0)) == 0 and model.output_retries is not None


@guard
def needs_action(model: RunData, args: Args) -> bool:
    """Some call of the response needs approval or is client-side."""
    calls, needing, _ = _counts(args)
    return calls > 0 and needing > 0


@guard
def asks_user_only(model: RunData, args: Args) -> bool:
    """No call needs approval, but some are ``ask_user`` calls awaiting the user."""
    calls, needing, asking = _counts(args)
    return calls > 0 and needing <= 0 and asking > 0


@guard
def may_run_now(model: RunData, args: Args) -> bool:
    """Every call of the response may run without waiting for anyone."""
    calls, needing, asking = _counts(args)
    return calls > 0 and needing <= 0 and asking <= 0


def _replied(model: RunData, args: Args) -> int:
    """``model_replied``'s five checks asked at once: the index of the one that holds.

    In the declared order: ``no_tool_calls``, ``answer_to_validate``, ``needs_action``,
    ``asks_user_only``, ``may_run_now`` (mutually exclusive, and one always holds). Asked
    once per model reply instead of up to five checks each reading the counts again.
    """
    calls = args.get("tool_calls", 0)
    needing = args.get("needing_action", 0)
    asking = args.get("asking_user", 0)
    if not (type(calls) is int and type(needing) is int and type(asking) is int):
        calls, needing, asking = _count(calls), _count(needing), _count(asking)
    if calls <= 0:
        return 0 if model.output_retries is None else 1
    if needing > 0:
        return 2
    return 3 if asking > 0 else 4


_REPLIED = (no_tool_calls, answer_to_validate, needs_action, asks_user_only, may_run_now)
_SELECTORS[tuple(_CHECKS[declared] for declared in _REPLIED)] = _replied


@guard
def below_max_iterations(model: RunData, args: Args) -> bool:
    """Another iteration fits under the cap."""
    return model.iteration < model.max_iterations


@guard
def at_max_iterations(model: RunData, args: Args) -> bool:
    """The turn has used all its iterations."""
    return model.iteration >= model.max_iterations


def _finished(model: RunData, args: Args) -> int:
    """``tools_finished``'s two checks asked at once: 0 below the cap, else 1 (at it)."""
    return 0 if model.iteration < model.max_iterations else 1


_SELECTORS[(_CHECKS[below_max_iterations], _CHECKS[at_max_iterations])] = _finished


@guard
def child_needs_action(model: RunData, args: Args) -> bool:
    """The child run waits for approval or a client-side result."""
    needing_action = args.get("needing_action", 0)
    return _count(needing_action) > 0


@guard
def child_asks_user(model: RunData, args: Args) -> bool:
    """The child run waits only for the user's answer to its question."""
    needing_action = args.get("needing_action", 0)
    asking_user = args.get("asking_user", 0)
    return _count(needing_action) == 0 and _count(asking_user) > 0


def _may_retry(model: RunData) -> bool:
    retries = model.output_retries or 0
    return model.invalid_outputs < retries and model.iteration < model.max_iterations


@guard
def may_retry_output(model: RunData, args: Args) -> bool:
    """An invalid answer may go back to the model: retries and iterations are left."""
    return _may_retry(model)


@guard
def output_retries_spent(model: RunData, args: Args) -> bool:
    """An invalid answer cannot go back to the model: no retry or no iteration is left."""
    return not _may_retry(model)


GUARD_FUNCTIONS: dict[str, Guard] = {
    declared.__name__: declared
    for declared in (
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
