"""Fault injection: property-test that no failure strands your Agent (docs/contract.md I12, I13).

`FaultInjectingMachine` is an `AgentStateMachine` that also arms faults: hypothesis picks a
callback point of your agent (its model, each hook, each listener event, each tool body, the
store's save) and a fault (an `Exception`, `KeyboardInterrupt`, `SystemExit`, another
`BaseException`, an `asyncio.CancelledError`, the cancellation of the task awaiting the
Agent, or a re-entrant call back into the run), and after every step checks, besides the
invariants the base machine checks, that the run is at rest in a named state (I12: never
left busy with no step running, unless the store refused a save, then it is what the store
holds), that the fault reached the caller, never swallowed, and that re-entrant calls kept
the contract (I13)::

    class MyAgentFaults(FaultInjectingMachine):
        def make_agent(self, model: ScriptedModel, store: RunStore | None) -> Agent:
            return Agent(model, tools=[lookup, refund], store=store, clock=self.clock)

    TestMyAgentFaults = MyAgentFaults.TestCase

The faults themselves and the injector are in `agentfsm.testing.injector`. Needs hypothesis
(the ``testing`` extra).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant

from agentfsm.agent.core import Agent
from agentfsm.agent.vocabulary import TurnOutcome
from agentfsm.errors import InjectedError, InjectedInterrupt, InvariantError
from agentfsm.states.events import Event
from agentfsm.states.names import RunEvent, RunState
from agentfsm.testing.injector import (
    CANCELLATIONS,
    Fault,
    FaultInjector,
    FaultKind,
    fault_points,
    injected_faults,
)
from agentfsm.testing.stateful import AgentStateMachine

__all__ = [
    "Fault",
    "FaultInjectingMachine",
    "FaultInjector",
    "FaultKind",
    "InjectedError",
    "InjectedInterrupt",
    "fault_points",
    "injected_faults",
]


class FaultInjectingMachine(AgentStateMachine):
    """An `AgentStateMachine` that arms faults at your agent's callback points (I12, I13).

    Subclass it and implement ``make_agent`` exactly as for `AgentStateMachine`. Besides its
    rules, hypothesis arms one fault at a time (`injected_faults` over `fault_points`); besides its
    invariants, after every step:

    - the fault's exception reached the caller (never swallowed), or nothing escaped;
    - I12: the run is at rest in a state docs/contract.md names, never busy with no step
      running, unless the store refused a save (then it is exactly what the store holds);
      a turn a cancellation ended failed with reason ``cancelled``; an open round exists
      only while the run waits or is paused;
    - I13: a re-entrant call either was refused (`ReentrantCallError`, or
      `IllegalTransitionError` where the run's state has no such transition) or kept its
      meaning: a cancel or pause accepted while busy took effect.

    Whether each invariant holds is judged only from the agent's public behaviour and its
    store, so the machine catches an Agent that strands a run however it does it. Narrow
    `fault_kinds` or `points` to aim the search.
    """

    fault_kinds: Sequence[FaultKind] = tuple(FaultKind)
    """The kinds of fault hypothesis picks from."""
    patience: int = 4
    """Steps an armed fault waits for its point before it is dropped."""

    def __init__(self) -> None:
        super().__init__()
        self.injector = FaultInjector()
        """Strikes the armed fault."""
        self.escaped: BaseException | None = None
        """What escaped the last step because of a fault."""
        self._step_transitions = 0
        self._points: Sequence[str] = ()
        self._waited = 0
        self._stored_busy = False

    @initialize()
    def create_the_agent(self) -> None:
        """Build, listen to and start the agent; then wrap its callback points."""
        super().create_the_agent()
        agent = self._agent()
        self.injector.install(agent)
        self.injector.marker = lambda: len(self.transitions)
        self._points = self.points(agent)

    def points(self, agent: Agent) -> Sequence[str]:
        """The callback points faults strike at: all of `fault_points` by default."""
        return fault_points(agent)

    def _do(self, action: str, data: st.DataObject) -> None:
        """Arm a fault (most of the time, one at a time), then do ``action``."""
        if self.injector.fault is None and data.draw(st.integers(0, 3), label="skip arming") < 3:
            self.injector.arm(
                data.draw(injected_faults(self._points, self.fault_kinds), label="fault")
            )
            self._waited = 0
        super()._do(action, data)

    def _act(self, event: str, action: Callable[..., TurnOutcome], *args: object) -> bool:
        self.injector.begin_step()
        self.escaped = None
        self._step_transitions = len(self.transitions)
        try:
            took = super()._act(event, action, *args)
        except BaseException as escaped:
            if not self._injected(escaped):
                raise
            self.escaped = escaped
            took = any(e.machine == "run" and e.event == event for e in self._step_events())
        self._check_the_fault_surfaced()
        self.the_run_is_at_rest()
        self.reentrant_calls_kept_the_contract()
        self._waited += 1
        if self._waited >= self.patience:
            self.injector.disarm()  # its point was not reached: let another be armed
        return took

    def _injected(self, escaped: BaseException) -> bool:
        struck = self.injector.struck
        if struck is None:
            return False
        if self.injector.raised is not None:
            return escaped is self.injector.raised
        return struck.kind is FaultKind.TASK_CANCELLED and isinstance(
            escaped, asyncio.CancelledError
        )

    def _check_the_fault_surfaced(self) -> None:
        raised = self.injector.raised
        struck = self.injector.struck
        if struck is not None and struck.kind is FaultKind.TASK_CANCELLED:
            # A cancellation that reached the Agent at an await must reach the caller too.
            _check(
                self.escaped is not None or not self.injector.awaited,
                "I12",
                f"the cancellation of the awaiting task ({struck}) was swallowed",
            )
        if raised is None or isinstance(raised, Exception) or self.escaped is raised:
            return
        # A BaseException (KeyboardInterrupt, SystemExit, a cancellation…) must reach the
        # caller: the Agent may settle the run first, never swallow it.
        _check(False, "I12", f"{raised!r} struck at {self.injector.struck} and was swallowed")

    @invariant()
    def the_run_is_at_rest(self) -> None:
        """I12: at rest in a named state, or, after a refused save, what the store holds."""
        if self.agent is None:
            return
        agent = self.agent
        _check(agent.state in tuple(RunState), "I12", f"{agent.state!r} is not a named state")
        stored = agent.store.load(agent.run_id) if agent.store is not None else None
        refused = self.escaped is not None and self._struck_at("store.save")
        if refused:
            # The store refused a save: the run is what it holds, busy included, until the
            # application ends that turn (cancel) or takes it up (start).
            self._stored_busy = stored is not None and stored.state == RunState.BUSY
        if agent.state != RunState.BUSY:
            self._stored_busy = False
        if agent.state == RunState.BUSY:
            _check(
                self._stored_busy and stored is not None and stored.state == RunState.BUSY,
                "I12",
                f"the run is left busy with no step running (after {self.injector.struck})",
            )
        if refused and stored is not None:
            live = (agent.state, agent.turn, agent.messages)
            held = (stored.state, stored.turn, stored.messages)
            _check(live == held, "I12", f"after a refused save the run is {live}, not {held}")
        struck = self.injector.struck
        after = self.transitions[max(self._step_transitions, self.injector.struck_at) :]
        ended = [
            e
            for e in after
            if e.machine == "run" and e.target == "failed" and not _failed_of_its_own(e)
        ]
        landed = struck is not None and (
            struck.kind is FaultKind.CANCELLED_ERROR or self.injector.awaited
        )
        if landed and struck is not None and struck.kind in CANCELLATIONS and ended:
            _check(
                agent.reason == "cancelled" or agent.state != RunState.FAILED,
                "I12",
                f"a cancellation ({struck}) ended the turn with reason {agent.reason!r}",
            )

    def reentrant_calls_kept_the_contract(self) -> None:
        """I13: a cancel or pause accepted mid-step took effect; the others were refused."""
        events = [e.event for e in self._step_events() if e.machine == "run"]
        for call, state, came in self.injector.calls:
            refused = came in ("ReentrantCallError", "IllegalTransitionError")
            if not refused and call == "cancel":
                _check(
                    "cancel" in events or "fail" in events,
                    "I13",
                    f"cancel accepted in {state} was dropped: the step made {events}",
                )
            elif not refused and call == "pause":
                _check("pause" in events, "I13", f"pause accepted in {state} was dropped")
            elif came not in ("ReentrantCallError", "IllegalTransitionError"):
                # Only a submit while busy (the input policy), a cancel or a pause has a
                # meaning mid-step; anything else must be refused.
                _check(
                    call in ("cancel", "pause") or (call == "submit" and state == "busy"),
                    "I13",
                    f"{call} was accepted from inside a step (in {state}): it came to {came}",
                )

    def _struck_at(self, point: str) -> bool:
        struck = self.injector.struck
        return struck is not None and struck.point == point

    def _step_events(self) -> list[Event]:
        return self.transitions[self._step_transitions :]


def _failed_of_its_own(event: Event) -> bool:
    """Whether ``event`` fails a turn for an error of its own, not for a cancellation.

    Such a turn failed before the cancellation struck, though it may be told after it: with a
    store, listeners hear of a step's batch (its ``fail`` included) once it is stored, so a
    listener's cancellation can strike after the turn already failed (contract §3: a run at
    rest stays there).
    """
    return event.event == RunEvent.FAIL and event.data.get("error_type") != "CancelledError"


def _check(condition: object, invariant_name: str, message: str) -> None:
    if not condition:
        raise InvariantError(invariant_name, message)
