"""Replayed steps explore exactly what sending every event explores (`agentfsm.verify.memo`)."""

from __future__ import annotations

from typing import Any

import pytest

from agentfsm.fsm import RUN_MACHINE, RunData, compile_machine
from agentfsm.fsm.guards import GUARD_FUNCTIONS
from agentfsm.fsm.turnloop import TurnLoop
from agentfsm.states import TABLES, MachineName
from agentfsm.verify import default_domains
from agentfsm.verify.explore import Explorer
from agentfsm.verify.memo import Outcome, StepMemo
from tests.verify.mutants import MUTANTS


class Forgetful(StepMemo):
    """A memo that never knows a step: every step is sent, as before the memo."""

    def find(self, move: int, source: str, data: RunData) -> Outcome | None:
        return None


def explored(run: type[Any], loop: type[Any], *, replay: bool) -> Explorer:
    explorer = Explorer(
        compile_machine(run, MachineName.RUN, "state"),
        compile_machine(loop, MachineName.LOOP, "loop_state"),
        default_domains(1),  # untyped: a third of the configurations, the same kinds of step
        RunData,
        TABLES,
        GUARD_FUNCTIONS,
    )
    if not replay:
        explorer.memo = Forgetful()
    explorer.explore()
    return explorer


CASES = (
    "shipped",  # and the reads `vacuity` checks, recorded where they were first made
    "need_action_drops_the_queue",  # found with loaded fields
    "guard_with_a_side_effect",  # a guard writes: such steps are never replayed
    "busy_skips_to_completed",  # an event the tables do not know
)


@pytest.mark.parametrize("case", CASES)
def test_replaying_clean_steps_explores_what_sending_every_event_does(case: str) -> None:
    machines = (RUN_MACHINE.chart, TurnLoop) if case == "shipped" else MUTANTS[case].build()

    sent = explored(*machines, replay=False)
    replayed = explored(*machines, replay=True)

    assert [(n.key, n.parent, n.move) for n in replayed.nodes] == [
        (n.key, n.parent, n.move) for n in sent.nodes
    ]
    assert [sent.snapshot(n.data) for n in replayed.nodes] == [
        sent.snapshot(n.data) for n in sent.nodes
    ]
    assert replayed.out == sent.out
    assert replayed.violations == sent.violations
    assert (replayed.reads, replayed.first_read, replayed.writes) == (
        sent.reads,
        sent.first_read,
        sent.writes,
    )
    assert replayed.memo.hits > 5 * replayed.sends
    assert sent.memo.hits == 0


def test_a_value_of_another_type_is_another_step() -> None:
    memo = StepMemo()
    data = RunData("r", deadline=1.0)
    outcome = Outcome(None, frozenset({"deadline"}), (), recorded=True)
    memo.store(7, "busy", data, {"deadline", "state"}, outcome)

    assert memo.find(7, "busy", data) is outcome
    assert memo.find(7, "busy", RunData("r", deadline=1)) is None  # equal, but an int
    assert memo.find(7, "busy", RunData("r", deadline=2.0)) is None
    assert memo.find(8, "busy", data) is None
    assert memo.find(7, "ready", data) is None
    assert memo.hits == 1


def test_a_value_that_cannot_be_a_key_is_never_replayed() -> None:
    memo = StepMemo()
    data = RunData("r")
    data.deadline = ["not", "a", "time"]  # type: ignore[assignment]  # as a faulty effect might
    outcome = Outcome(None, frozenset(), (), recorded=True)
    memo.store(1, "busy", data, {"deadline"}, outcome)
    memo.store(1, "busy", data, {"written_but_no_field"}, outcome)

    assert memo.find(1, "busy", data) is None
    assert memo.hits == 0
