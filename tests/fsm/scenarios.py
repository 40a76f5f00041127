"""How to make each guard hold, or fail: shared by the matrix and property tests."""

from __future__ import annotations

from collections.abc import Callable

from agentfsm.fsm import Emitter, Engine, RunData, loop_machine, run_machine
from agentfsm.fsm.compiled import Machine
from agentfsm.fsm.reference import ReferenceMachine
from agentfsm.states import Event, InputPolicy, MachineName, TransitionRow
from agentfsm.states.json import JSONValue

Args = dict[str, JSONValue]
Setup = Callable[[RunData], Args]


def _set(**fields: object) -> Callable[[RunData], None]:
    def apply(data: RunData) -> None:
        for name, value in fields.items():
            setattr(data, name, value)

    return apply


def _with(fields: dict[str, object], args: Args) -> Setup:
    def setup(data: RunData) -> Args:
        _set(**fields)(data)
        return dict(args)

    return setup


def _paused_in(state: str) -> Setup:
    return _with({"paused_from": state}, {})


ENABLE: dict[str | None, Setup] = {
    None: _with({}, {}),
    "submit_allowed": _with({}, {"text": "hello"}),
    "input_queued": _with({"input_policy": InputPolicy.QUEUE}, {"text": "later"}),
    "input_interrupts": _with({"input_policy": InputPolicy.INTERRUPT}, {"text": "stop"}),
    "has_calls": _with({}, {"calls": ["c1", "c2"]}),
    "decides_every_pending_call": _with({"pending": ("c1",)}, {"decisions": {"c1": "approve"}}),
    "asks_question": _with({}, {"question": "Which city?", "calls": ["c9"]}),
    "has_answer": _with({}, {"text": "Paris"}),
    "turn_finished": _with({"loop_state": "answered"}, {}),
    "at_boundary": _with({"at_boundary": True}, {}),
    "deadline_passed": _with({"deadline": 100.0}, {"now": 100.0}),
    **{f"paused_in_{s}": _paused_in(s) for s in ("ready", "busy", "requires_action")},
    **{f"paused_in_{s}": _paused_in(s) for s in ("input_required", "completed", "failed")},
    "no_tool_calls": _with({}, {"tool_calls": 0}),
    "needs_action": _with({}, {"tool_calls": 2, "needing_action": 1, "asking_user": 1}),
    "asks_user_only": _with({}, {"tool_calls": 2, "asking_user": 1}),
    "may_run_now": _with({}, {"tool_calls": 3}),
    "below_max_iterations": _with({"iteration": 2, "max_iterations": 3}, {}),
    "at_max_iterations": _with({"iteration": 3, "max_iterations": 3}, {}),
    "child_needs_action": _with({}, {"needing_action": 1, "asking_user": 1}),
    "child_asks_user": _with({}, {"asking_user": 1}),
    "answer_to_validate": _with({"output_retries": 2}, {"tool_calls": 0}),
    "may_retry_output": _with(
        {"output_retries": 2, "invalid_outputs": 1, "iteration": 2, "max_iterations": 3},
        {"errors": ["x: field required"]},
    ),
    "output_retries_spent": _with(
        {"output_retries": 2, "invalid_outputs": 2, "iteration": 2, "max_iterations": 3},
        {"errors": ["x: field required"]},
    ),
}
"""guard name → a setup that makes it hold (and the event's arguments)."""

DEFEAT: dict[tuple[str, str], Setup] = {
    ("ready", "submit"): _with({}, {"text": "   "}),
    ("completed", "submit"): _with({"max_turns": 1, "turn": 1}, {"text": "again"}),
    ("failed", "submit"): _with({}, {"text": ""}),
    ("busy", "submit"): _with({"input_policy": InputPolicy.REJECT}, {"text": "hi"}),
    ("busy", "need_action"): _with({}, {"calls": []}),
    ("requires_action", "resolve_action"): _with(
        {"pending": ("c1", "c2")}, {"decisions": {"c1": "approve"}}
    ),
    ("busy", "need_input"): _with({}, {"question": "", "calls": ["c1"]}),
    ("input_required", "provide_input"): _with({}, {"text": "\n"}),
    ("busy", "complete"): _with({"loop_state": "acting"}, {}),
    ("busy", "cancel"): _with({"at_boundary": False}, {}),
    ("requires_action", "expire"): _with({"deadline": 100.0}, {"now": 99.5}),
    ("input_required", "expire"): _with({"deadline": None}, {"now": 1e12}),
    ("busy", "pause"): _with({"at_boundary": False}, {}),
    ("paused", "resume"): _with({"paused_from": None}, {}),
    ("awaiting_action", "resolved"): _with({"pending": ("c1",)}, {"decisions": {"c2": "deny"}}),
    ("awaiting_input", "resolved"): _with({"pending": ("c1",)}, {"decisions": {}}),
    ("delegating", "child_asked"): _with({}, {"needing_action": 0, "asking_user": 0}),
}
"""(state, event) → a setup under which every guard of the event out of that state fails.

``model_replied``, ``tools_finished`` and ``output_invalid`` are absent: their guards cover
every input.
"""


def machine_at(
    table_name: MachineName, state: str, engine: Engine, events: list[Event]
) -> tuple[Machine | ReferenceMachine, RunData]:
    """A machine restored in ``state``, recording what it emits into ``events``."""
    emitter = Emitter("run-1", [events.append], clock=lambda: 1_700_000_000.0)
    if table_name is MachineName.RUN:
        data = RunData("run-1", state=state)
        return run_machine(data, emitter, engine), data
    data = RunData("run-1", state="busy", loop_state=state, iteration=1)
    return loop_machine(data, emitter, engine), data


def row_id(row: TransitionRow) -> str:
    return f"{row.source}-{row.event}-{row.guard or 'always'}->{row.target}"
