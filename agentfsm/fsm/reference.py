"""`ReferenceMachine`: the `Machine` interface, dispatching through python-statemachine.

It runs the declared class itself, so it is the reference the compiled fast path is tested
against. It is slow (about 150 µs and 48 KB per machine) and meant for tests and debugging.
"""

from __future__ import annotations

from typing import Any

from statemachine.exceptions import TransitionNotAllowed

from agentfsm.fsm.compiled import (
    CompiledMachine,
    MachineView,
    arguments_refused,
    check_arguments,
    refusal,
)
from agentfsm.fsm.emitter import Emitter
from agentfsm.states.events import Event
from agentfsm.states.json import JSONValue


class _Relay:
    """A python-statemachine listener that forwards each transition to the run's emitter."""

    def __init__(self, owner: ReferenceMachine) -> None:
        self.owner = owner

    def after_transition(self, event: Any, source: Any, target: Any, event_data: Any) -> None:
        owner = self.owner
        owner.emitted.append(
            owner.emitter.emit(
                owner.compiled.name,
                str(event.id),
                str(source.value),
                str(target.value),
                dict(event_data.trigger_data.kwargs),
            )
        )


class ReferenceMachine(MachineView):
    """One run's machine, run by python-statemachine's own engine.

    Args:
        compiled: The compiled form of the same class, used for its names and allowed events.
        model: The run's data.
        emitter: The run's emitter.
    """

    def __init__(self, compiled: CompiledMachine, model: Any, emitter: Emitter) -> None:
        self.compiled = compiled
        self.model = model
        self.emitter = emitter
        self.emitted: list[Event] = []
        """The events emitted by the last `send` (exactly one when it succeeded)."""
        self.chart = compiled.chart(
            model=model, state_field=compiled.state_field, listeners=[_Relay(self)]
        )

    def can_send(self, event: str, /, **args: JSONValue) -> bool:
        """Whether `send` with these arguments would be accepted (guards included)."""
        if arguments_refused(args):
            return False
        return event in {str(e.id) for e in self.chart.enabled_events(**args)}

    def send(self, event: str, /, **args: JSONValue) -> Event:
        """Send ``event`` to python-statemachine; refusals raise as `Machine.send` does."""
        if args:
            check_arguments(self.compiled, self.emitter.run_id, self.state, event, args)
        return self.send_trusted(event, args)

    def send_trusted(self, event: str, args: dict[str, JSONValue]) -> Event:
        """`send` without checking the arguments, as `Machine.send_trusted`."""
        state = self.state
        if state not in self.compiled.dispatch:
            raise refusal(self.compiled, self.emitter.run_id, state, event)
        self.emitted.clear()
        try:
            self.chart.send(event, **args)
        except TransitionNotAllowed:
            raise refusal(self.compiled, self.emitter.run_id, state, event) from None
        if len(self.emitted) != 1:
            raise AssertionError(f"python-statemachine took {len(self.emitted)} transitions")
        return self.emitted[0]
