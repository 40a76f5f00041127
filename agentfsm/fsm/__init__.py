"""The machines of a run: RunLifecycle and TurnLoop, declared and compiled.

`RunLifecycle` and `TurnLoop` are the python-statemachine declarations (and the reference
semantics). `RUN_MACHINE` and `LOOP_MACHINE` are their compiled tables, shared by every
run; `run_machine` and `loop_machine` make one run's instances, on either engine.
"""

from __future__ import annotations

from typing import Literal

from agentfsm.fsm.compiled import (
    CompiledMachine,
    CompiledTransition,
    Machine,
    compile_machine,
)
from agentfsm.fsm.data import RunData
from agentfsm.fsm.emitter import Clock, Emitter, Listener
from agentfsm.fsm.lifecycle import RunLifecycle
from agentfsm.fsm.reference import ReferenceMachine
from agentfsm.fsm.turnloop import TurnLoop
from agentfsm.states.names import MachineName

Engine = Literal["compiled", "reference"]
"""``compiled``: the shared dispatch table (the default, fast). ``reference``:
python-statemachine's own engine (slow; for tests and debugging)."""

AnyMachine = Machine | ReferenceMachine
"""One run's machine on either engine; both have the same interface."""

RUN_MACHINE = compile_machine(RunLifecycle, MachineName.RUN, "state")
"""RunLifecycle, compiled."""
LOOP_MACHINE = compile_machine(TurnLoop, MachineName.LOOP, "loop_state")
"""TurnLoop, compiled."""


def _make(
    compiled: CompiledMachine, data: RunData, emitter: Emitter, engine: Engine
) -> AnyMachine:
    if engine == "compiled":
        return Machine(compiled, data, emitter)
    if engine == "reference":
        return ReferenceMachine(compiled, data, emitter)
    raise ValueError(f"unknown engine {engine!r}; expected 'compiled' or 'reference'")


def run_machine(data: RunData, emitter: Emitter, engine: Engine = "compiled") -> AnyMachine:
    """A run's RunLifecycle, in the state ``data.state`` holds."""
    return _make(RUN_MACHINE, data, emitter, engine)


def loop_machine(data: RunData, emitter: Emitter, engine: Engine = "compiled") -> AnyMachine:
    """A turn's TurnLoop.

    It enters ``thinking`` (counting the first iteration) when ``data.loop_state`` is None,
    and is otherwise restored where it was.
    """
    return _make(LOOP_MACHINE, data, emitter, engine)


__all__ = [
    "LOOP_MACHINE",
    "RUN_MACHINE",
    "AnyMachine",
    "Clock",
    "CompiledMachine",
    "CompiledTransition",
    "Emitter",
    "Engine",
    "Listener",
    "Machine",
    "ReferenceMachine",
    "RunData",
    "RunLifecycle",
    "TurnLoop",
    "compile_machine",
    "loop_machine",
    "run_machine",
]
