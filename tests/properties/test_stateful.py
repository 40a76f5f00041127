"""Rule-based tests of each machine: I1, I4, I5 and I8 hold after every step."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from agentfsm.errors import GuardFailedError, IllegalTransitionError
from agentfsm.fsm import Emitter, RunData, loop_machine, run_machine
from agentfsm.states import LOOP_TABLE, RUN_TABLE, Event, MachineTable
from agentfsm.testing.strategies import event_sends
from tests.properties.strategies import loop_outcomes, policies


class _MachineTest(RuleBasedStateMachine):
    table: MachineTable

    def __init__(self) -> None:
        super().__init__()
        self.events: list[Event] = []
        self.machine: Any = None
        self.data = RunData("prop")

    def _send(self, event: str, args: dict[str, Any]) -> Event | None:
        before = dataclasses.replace(self.data)
        logged = len(self.events)
        state = self.machine.state
        refused: IllegalTransitionError | None = None
        try:
            emitted: Event = self.machine.send(event, **args)
        except IllegalTransitionError as error:
            refused = error
        if refused is not None:
            # I4: refused with the state, the event and what is allowed; nothing changed.
            allowed = self.table.allowed(state)
            assert (refused.state, refused.event, refused.allowed) == (state, event, allowed)
            assert isinstance(refused, GuardFailedError) == (event in allowed)
            assert self.data == before
            assert len(self.events) == logged
            return None
        assert self.events[logged:] == [emitted]
        assert emitted.seq == logged + 1
        assert (emitted.source, emitted.target) == (state, self.machine.state)
        return emitted


class RunLifecycleTest(_MachineTest):
    table = RUN_TABLE

    @initialize(max_turns=st.sampled_from([None, 1, 3]))
    def create(self, max_turns: int | None) -> None:
        self.data = RunData("prop", max_turns=max_turns)
        self.machine = run_machine(self.data, Emitter("prop", [self.events.append]))
        self.turns_started = 0
        self.was_shutdown = False

    @rule(step=event_sends(RUN_TABLE))
    def send(self, step: tuple[str, dict[str, Any]]) -> None:
        event, args = step
        turn = self.data.turn
        emitted = self._send(event, args)
        starts_turn = emitted is not None and event == "submit" and emitted.source != "busy"
        self.turns_started += starts_turn
        assert self.data.turn == turn + starts_turn  # I5
        self.was_shutdown |= self.machine.state == "shutdown"

    @rule(at_boundary=st.booleans(), policy=policies, loop_state=loop_outcomes)
    def environment_changes(self, at_boundary: bool, policy: Any, loop_state: Any) -> None:
        self.data.at_boundary = at_boundary
        self.data.input_policy = policy
        self.data.loop_state = loop_state

    @invariant()
    def shutdown_is_absorbing(self) -> None:  # I1
        if self.was_shutdown:
            assert self.machine.state == "shutdown"
            assert self.machine.allowed_events() == ()

    @invariant()
    def turn_counts_accepted_submits(self) -> None:  # I5
        assert self.data.turn == self.turns_started


class TurnLoopTest(_MachineTest):
    table = LOOP_TABLE

    @initialize(max_iterations=st.integers(min_value=1, max_value=4))
    def create(self, max_iterations: int) -> None:
        self.data = RunData("prop", state="busy", max_iterations=max_iterations)
        self.machine = loop_machine(self.data, Emitter("prop", [self.events.append]))
        self.final_state: str | None = None

    @rule(step=event_sends(LOOP_TABLE))
    def send(self, step: tuple[str, dict[str, Any]]) -> None:
        event, args = step
        self._send(event, args)
        if self.machine.is_final and self.final_state is None:
            self.final_state = self.machine.state

    @rule(pending=st.sampled_from([(), ("c1",), ("c1", "c2")]))
    def run_records_pending_calls(self, pending: tuple[str, ...]) -> None:
        self.data.pending = pending

    @invariant()
    def iteration_stays_within_the_cap(self) -> None:  # I8
        assert 1 <= self.data.iteration <= self.data.max_iterations

    @invariant()
    def final_states_are_absorbing(self) -> None:
        if self.final_state is not None:
            assert self.machine.state == self.final_state


TestRunLifecycle = RunLifecycleTest.TestCase
TestTurnLoop = TurnLoopTest.TestCase
