"""Replaying a counterexample through fresh machines: proof that it is a real path."""

from __future__ import annotations

from typing import Any

import pytest

from agentfsm.errors import IllegalTransitionError
from agentfsm.fsm import Emitter, Machine, RunData, compile_machine
from agentfsm.states import MachineName
from agentfsm.verify import Counterexample


def replay(run: type[Any], loop: type[Any], counterexample: Counterexample) -> list[RunData]:
    """Send each step to fresh machines; returns the data before each step and at the end.

    Every step must start in its recorded source and end in its recorded target (or be
    refused when its target is None). The counterexample's ``loaded`` fields are set on the
    data just before its last step.
    """
    compiled = {
        MachineName.RUN: compile_machine(run, MachineName.RUN, "state"),
        MachineName.LOOP: compile_machine(loop, MachineName.LOOP, "loop_state"),
    }
    data = RunData("replay")
    for name, value in counterexample.initial.items():
        setattr(data, name, value)
    emitter = Emitter("replay")
    seen: list[RunData] = []
    last = len(counterexample.steps) - 1
    for number, step in enumerate(counterexample.steps):
        for name, value in step.environment.items():
            setattr(data, name, value)
        if number == last:  # the values no configuration holds, that the failure needs
            for name, value in counterexample.loaded.items():
                setattr(data, name, value)
        seen.append(_copy(data))
        machine = Machine(compiled[step.machine], data, emitter)
        assert machine.state == step.source, (step, machine.state)
        if step.target is None:
            with pytest.raises(IllegalTransitionError):
                machine.send(step.event, **step.arguments)
            continue
        machine.send(step.event, **step.arguments)
        assert machine.state == step.target, (step, machine.state)
        if step.machine is MachineName.RUN and data.loop_state is None and data.state == "busy":
            Machine(compiled[MachineName.LOOP], data, emitter)  # the turn's loop starts
    seen.append(data)
    return seen


def _copy(data: RunData) -> RunData:
    twin = RunData(data.run_id)
    for name in RunData.__dataclass_fields__:
        setattr(twin, name, getattr(data, name))
    return twin
