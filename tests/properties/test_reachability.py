"""I3: every state of both machines is reached from its initial state by real transitions."""

from __future__ import annotations

import dataclasses

import pytest

from agentfsm.fsm import Emitter, RunData, loop_machine, run_machine
from agentfsm.states import LOOP_TABLE, RUN_TABLE, MachineName, MachineTable
from tests.fsm.scenarios import ENABLE


def explore(table: MachineTable) -> set[str]:
    """Breadth-first over the machine itself: take every row out of every reached state."""
    make = run_machine if table.name is MachineName.RUN else loop_machine
    field = "state" if table.name is MachineName.RUN else "loop_state"
    first = RunData("reach", state="busy") if table.name is MachineName.LOOP else RunData("reach")
    make(first, Emitter("reach"))  # activates the loop at its initial state
    frontier, reached = [first], {getattr(first, field)}
    while frontier:
        data = frontier.pop(0)
        for row in (r for r in table.rows if r.source == getattr(data, field)):
            step = dataclasses.replace(data)
            args = ENABLE[row.guard](step)
            make(step, Emitter("reach")).send(row.event, **args)
            if getattr(step, field) not in reached:
                reached.add(getattr(step, field))
                frontier.append(step)
    return reached


@pytest.mark.parametrize("table", [RUN_TABLE, LOOP_TABLE], ids=["run", "loop"])
def test_every_state_is_reachable(table: MachineTable) -> None:
    assert explore(table) == set(table.states)
