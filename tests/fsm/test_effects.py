"""What each transition does to the run's data, on both engines."""

from __future__ import annotations

from typing import Any

import pytest

from agentfsm.fsm import Emitter, Engine, RunData, loop_machine, run_machine
from agentfsm.states import CompletedReason, FailedReason, InputPolicy

# (id, starting data, event, arguments, fields expected afterwards)
RUN_EFFECTS: list[tuple[str, dict[str, Any], str, dict[str, Any], dict[str, Any]]] = [
    (
        "submit-starts-a-turn",
        {"state": "completed", "turn": 3, "iteration": 4, "reason": "answered"},
        "submit",
        {"text": "next"},
        {"state": "busy", "turn": 4, "iteration": 0, "reason": None, "loop_state": None},
    ),
    (
        "queued-submit-keeps-input",
        {"state": "busy", "turn": 1, "input_policy": InputPolicy.QUEUE, "queued": ("a",)},
        "submit",
        {"text": "b"},
        {"state": "busy", "turn": 1, "queued": ("a", "b"), "cancel_requested": False},
    ),
    (
        "interrupting-submit-asks-to-cancel",
        {"state": "busy", "turn": 1, "input_policy": InputPolicy.INTERRUPT},
        "submit",
        {"text": "stop"},
        {"state": "busy", "turn": 1, "queued": ("stop",), "cancel_requested": True},
    ),
    (
        "need-action-records-pending-and-deadline",
        {"state": "busy"},
        "need_action",
        {"calls": ["c1", "c2"], "deadline": 50.0},
        {"state": "requires_action", "pending": ("c1", "c2"), "deadline": 50.0},
    ),
    (
        "need-input-records-question",
        {"state": "busy"},
        "need_input",
        {"question": "Which city?", "calls": ["c3"]},
        {"pending": ("c3",), "question": "Which city?", "deadline": None},
    ),
    (
        "complete-answered",
        {"state": "busy", "loop_state": "answered"},
        "complete",
        {},
        {"state": "completed", "reason": CompletedReason.ANSWERED},
    ),
    (
        "complete-at-cap",
        {"state": "busy", "loop_state": "exhausted"},
        "complete",
        {},
        {"state": "completed", "reason": CompletedReason.MAX_ITERATIONS},
    ),
    (
        "fail-records-error",
        {"state": "busy"},
        "fail",
        {"error_type": "RuntimeError", "message": "boom"},
        {"state": "failed", "reason": FailedReason.ERROR},
    ),
    (
        "cancel-clears-wait",
        {"state": "requires_action", "pending": ("c1",), "deadline": 9.0},
        "cancel",
        {},
        {"state": "failed", "reason": FailedReason.CANCELLED, "pending": (), "deadline": None},
    ),
    (
        "cancel-at-boundary-clears-request",
        {"state": "busy", "cancel_requested": True},
        "cancel",
        {},
        {"state": "failed", "reason": FailedReason.CANCELLED, "cancel_requested": False},
    ),
    (
        "expire-clears-wait",
        {"state": "input_required", "pending": ("c1",), "question": "?", "deadline": 9.0},
        "expire",
        {"now": 10.0},
        {"state": "failed", "reason": FailedReason.EXPIRED, "pending": (), "question": None},
    ),
    (
        "pause-remembers-state",
        {"state": "requires_action", "pending": ("c1",)},
        "pause",
        {},
        {"state": "paused", "paused_from": "requires_action", "pending": ("c1",)},
    ),
    (
        "resume-returns-and-forgets",
        {"state": "paused", "paused_from": "input_required"},
        "resume",
        {},
        {"state": "input_required", "paused_from": None},
    ),
]


@pytest.mark.parametrize(
    ("start", "event", "args", "expected"),
    [case[1:] for case in RUN_EFFECTS],
    ids=[case[0] for case in RUN_EFFECTS],
)
def test_run_transition_effect(
    start: dict[str, Any],
    event: str,
    args: dict[str, Any],
    expected: dict[str, Any],
    engine: Engine,
) -> None:
    data = RunData("r", **start)
    machine = run_machine(data, Emitter("r"), engine)

    machine.send(event, **args)

    assert {name: getattr(data, name) for name in expected} == expected


def test_new_loop_enters_thinking_and_counts_the_first_iteration(engine: Engine) -> None:
    data = RunData("r", state="busy", iteration=0)
    emitter = Emitter("r")

    machine = loop_machine(data, emitter, engine)

    assert (machine.state, data.iteration) == ("thinking", 1)
    assert emitter.seq == 0  # entering the initial state is not a transition


def test_restored_loop_does_not_re_enter(engine: Engine) -> None:
    data = RunData("r", state="busy", loop_state="thinking", iteration=2)

    loop_machine(data, Emitter("r"), engine)

    assert data.iteration == 2


def test_tool_rounds_count_iterations_up_to_the_cap(engine: Engine) -> None:
    data = RunData("r", state="busy", max_iterations=3)
    machine = loop_machine(data, Emitter("r"), engine)
    for _ in range(2):
        machine.send("model_replied", tool_calls=1)
        machine.send("tools_finished")
    assert (machine.state, data.iteration) == ("thinking", 3)

    machine.send("model_replied", tool_calls=1)
    machine.send("tools_finished")

    assert (machine.state, data.iteration) == ("exhausted", 3)
    assert machine.is_final


def test_resolved_clears_what_was_pending(engine: Engine) -> None:
    data = RunData("r", state="busy", loop_state="awaiting_input", pending=("c1",), question="?")
    machine = loop_machine(data, Emitter("r"), engine)

    machine.send("resolved", decisions={"c1": "Paris"})

    assert (machine.state, data.pending, data.question) == ("acting", (), None)
