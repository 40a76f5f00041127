"""The transition tables of the contract §1 and §2, as data.

One row per edge: an event taking a source state to a target state when its guard holds.
A row of the contract with several sources, or with a guard that applies to only some of
them ("from busy only at a step boundary"), is several rows here. ``resume``'s history
target ("the state it was paused in") is one row per state a run can be paused in, each
guarded by ``paused_in_<state>``.

These tables are the single statement of the contract in code: the declared machines
(`agentfsm.fsm`) are checked against them, and diagrams, the verifier and the tests read
them. Guards are named here and described in `GUARDS`; their code is in
`agentfsm.fsm.guards`, under the same names.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentfsm.states.effects import LOOP_EFFECTS, RUN_EFFECTS, Postcondition
from agentfsm.states.names import (
    LOOP_FINAL,
    LOOP_INITIAL,
    RUN_FINAL,
    RUN_INITIAL,
    LoopEvent,
    LoopState,
    MachineName,
    RunEvent,
    RunState,
)


@dataclass(frozen=True, slots=True)
class TransitionRow:
    """One edge of a machine: ``event`` takes ``source`` to ``target`` when ``guard`` holds."""

    event: str
    """The event's name (an imperative verb)."""
    source: str
    """The state the edge leaves."""
    target: str
    """The state the edge enters (equal to ``source`` for an internal transition)."""
    guard: str | None = None
    """The name of the guard that must hold, or None when the edge is unguarded."""
    internal: bool = False
    """True for a transition that stays in its state without leaving and re-entering it."""


@dataclass(frozen=True, slots=True)
class MachineTable:
    """A whole machine as data: its states, initial and final states, and its edges."""

    name: MachineName
    """Which machine this is."""
    states: tuple[str, ...]
    """Every state, in declaration order."""
    initial: str
    """The initial state."""
    final: frozenset[str]
    """The final states: no edge leaves them."""
    rows: tuple[TransitionRow, ...]
    """Every edge, in priority order (the first enabled row of an event wins)."""
    effects: tuple[Postcondition, ...] = ()
    """What the edges do to the run's data (`agentfsm.states.effects`); a field no
    postcondition names keeps its value."""

    @property
    def events(self) -> tuple[str, ...]:
        """Every event name, in the order of first appearance."""
        return tuple(dict.fromkeys(row.event for row in self.rows))

    def allowed(self, state: str) -> tuple[str, ...]:
        """The events that have at least one edge out of ``state`` (guards not considered)."""
        return tuple(dict.fromkeys(row.event for row in self.rows if row.source == state))


GUARDS: dict[str, str] = {
    "submit_allowed": "input is a non-empty message; turn limit not reached",
    "input_queued": "input policy is `queue` (and the input is a non-empty message)",
    "input_interrupts": "input policy is `interrupt` (and the input is a non-empty message)",
    "has_calls": (
        "≥ 1 tool call awaits approval or a client-side result; the deadline is a time or none"
    ),
    "decides_every_pending_call": "every pending call has exactly one decision",
    "asks_question": "the agent asked the user a question; the deadline is a time or none",
    "has_answer": "non-empty text",
    "turn_finished": "the last model response has no tool calls, or the iteration limit was hit",
    "at_boundary": "at a step boundary",
    "deadline_passed": "the wait's deadline has passed",
    "paused_in_ready": "paused in ready",
    "paused_in_busy": "paused in busy",
    "paused_in_requires_action": "paused in requires_action",
    "paused_in_input_required": "paused in input_required",
    "paused_in_completed": "paused in completed",
    "paused_in_failed": "paused in failed",
    "no_tool_calls": "no tool calls, and no output type",
    "answer_to_validate": "no tool calls, and an output type",
    "needs_action": "some call needs approval or is client-side",
    "asks_user_only": "the only calls needing an answer are `ask_user` calls",
    "may_run_now": "every call may run now",
    "below_max_iterations": "iteration < max_iterations",
    "at_max_iterations": "iteration = max_iterations",
    "child_needs_action": "the child waits for approval or a client-side result",
    "child_asks_user": "the child waits for the user's answer to its question",
    "may_retry_output": "invalid answers so far < output_retries, and iteration < max_iterations",
    "output_retries_spent": "invalid answers so far = output_retries, or iteration = "
    "max_iterations",
}
"""Every guard's name and what it checks, in the words of the contract (docs/contract.md)."""

_R, _E = RunState, RunEvent
PAUSABLE: tuple[RunState, ...] = (
    _R.READY,
    _R.BUSY,
    _R.REQUIRES_ACTION,
    _R.INPUT_REQUIRED,
    _R.COMPLETED,
    _R.FAILED,
)
"""The states `pause` may leave, and so the states `resume` may return to."""


def _rows(
    event: str, sources: tuple[str, ...], target: str, guard: str | None = None
) -> tuple[TransitionRow, ...]:
    return tuple(TransitionRow(event, source, target, guard) for source in sources)


RUN_TABLE = MachineTable(
    name=MachineName.RUN,
    states=tuple(RunState),
    initial=RUN_INITIAL,
    final=RUN_FINAL,
    rows=(
        TransitionRow(_E.START, _R.CREATED, _R.READY),
        *_rows(_E.SUBMIT, (_R.READY, _R.COMPLETED, _R.FAILED), _R.BUSY, "submit_allowed"),
        TransitionRow(_E.SUBMIT, _R.BUSY, _R.BUSY, "input_queued", internal=True),
        TransitionRow(_E.SUBMIT, _R.BUSY, _R.BUSY, "input_interrupts", internal=True),
        TransitionRow(_E.NEED_ACTION, _R.BUSY, _R.REQUIRES_ACTION, "has_calls"),
        TransitionRow(
            _E.RESOLVE_ACTION, _R.REQUIRES_ACTION, _R.BUSY, "decides_every_pending_call"
        ),
        TransitionRow(_E.NEED_INPUT, _R.BUSY, _R.INPUT_REQUIRED, "asks_question"),
        TransitionRow(_E.PROVIDE_INPUT, _R.INPUT_REQUIRED, _R.BUSY, "has_answer"),
        TransitionRow(_E.COMPLETE, _R.BUSY, _R.COMPLETED, "turn_finished"),
        TransitionRow(_E.FAIL, _R.BUSY, _R.FAILED),
        TransitionRow(_E.CANCEL, _R.BUSY, _R.FAILED, "at_boundary"),
        *_rows(_E.CANCEL, (_R.REQUIRES_ACTION, _R.INPUT_REQUIRED), _R.FAILED),
        *_rows(_E.EXPIRE, (_R.REQUIRES_ACTION, _R.INPUT_REQUIRED), _R.FAILED, "deadline_passed"),
        TransitionRow(_E.PAUSE, _R.READY, _R.PAUSED),
        TransitionRow(_E.PAUSE, _R.BUSY, _R.PAUSED, "at_boundary"),
        *_rows(_E.PAUSE, PAUSABLE[2:], _R.PAUSED),
        *(TransitionRow(_E.RESUME, _R.PAUSED, s, f"paused_in_{s}") for s in PAUSABLE),
        *_rows(
            _E.SHUTDOWN,
            (_R.CREATED, _R.READY, *PAUSABLE[2:], _R.PAUSED),
            _R.SHUTDOWN,
        ),
    ),
    effects=RUN_EFFECTS,
)
"""RunLifecycle (the contract §1)."""

_L, _LE = LoopState, LoopEvent
_WAITING_LOOP = (_L.AWAITING_ACTION, _L.AWAITING_INPUT)

LOOP_TABLE = MachineTable(
    name=MachineName.LOOP,
    states=tuple(LoopState),
    initial=LOOP_INITIAL,
    final=LOOP_FINAL,
    rows=(
        TransitionRow(_LE.MODEL_REPLIED, _L.THINKING, _L.ANSWERED, "no_tool_calls"),
        TransitionRow(_LE.MODEL_REPLIED, _L.THINKING, _L.VALIDATING, "answer_to_validate"),
        TransitionRow(_LE.MODEL_REPLIED, _L.THINKING, _L.AWAITING_ACTION, "needs_action"),
        TransitionRow(_LE.MODEL_REPLIED, _L.THINKING, _L.AWAITING_INPUT, "asks_user_only"),
        TransitionRow(_LE.MODEL_REPLIED, _L.THINKING, _L.ACTING, "may_run_now"),
        TransitionRow(_LE.MODEL_FAILED, _L.THINKING, _L.ERRORED),
        *_rows(_LE.RESOLVED, _WAITING_LOOP, _L.ACTING, "decides_every_pending_call"),
        TransitionRow(_LE.TOOLS_FINISHED, _L.ACTING, _L.THINKING, "below_max_iterations"),
        TransitionRow(_LE.TOOLS_FINISHED, _L.ACTING, _L.EXHAUSTED, "at_max_iterations"),
        TransitionRow(_LE.INPUT_REQUESTED, _L.ACTING, _L.AWAITING_INPUT),
        TransitionRow(_LE.DELEGATED, _L.ACTING, _L.DELEGATING),
        TransitionRow(_LE.CHILD_RETURNED, _L.DELEGATING, _L.ACTING),
        TransitionRow(_LE.CHILD_ASKED, _L.DELEGATING, _L.AWAITING_ACTION, "child_needs_action"),
        TransitionRow(_LE.CHILD_ASKED, _L.DELEGATING, _L.AWAITING_INPUT, "child_asks_user"),
        *_rows(_LE.ABORT, (_L.THINKING, _L.ACTING, *_WAITING_LOOP, _L.DELEGATING), _L.ABORTED),
        TransitionRow(_LE.ABORT, _L.VALIDATING, _L.ABORTED),
        TransitionRow(_LE.OUTPUT_VALID, _L.VALIDATING, _L.ANSWERED),
        TransitionRow(_LE.OUTPUT_INVALID, _L.VALIDATING, _L.THINKING, "may_retry_output"),
        TransitionRow(_LE.OUTPUT_INVALID, _L.VALIDATING, _L.REJECTED, "output_retries_spent"),
    ),
    effects=LOOP_EFFECTS,
)
"""TurnLoop (the contract §2)."""

TABLES: dict[MachineName, MachineTable] = {
    MachineName.RUN: RUN_TABLE,
    MachineName.LOOP: LOOP_TABLE,
}
"""Both machines by name."""
