"""`FaultInjectingMachine` passes the project's agents and catches each way to strand a run."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test

from agentfsm import Agent, MemoryStore, RunStore, ScriptedModel, TurnOutcome, tool
from agentfsm.agent.steps import StepGuard
from agentfsm.errors import ModelCallError
from agentfsm.states.names import RunState
from agentfsm.testing import AgentStateMachine, InvariantError
from agentfsm.testing.faults import (
    Fault,
    FaultInjectingMachine,
    FaultKind,
    fault_points,
)
from agentfsm.tools.hooks import HookContext


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool(policy="require_approval")
async def book(city: str, nights: int = 1) -> str:
    """Book a hotel."""
    return f"booked {nights} night(s) in {city}"


@tool(client_side=True)
def location() -> str:
    """The user's location, from the application."""
    raise AssertionError("client-side")


TOOLS = [weather, book, location]


def note(context: HookContext) -> None:
    if context.kind.may_add_messages:
        context.add_message(context.messages[-1].__class__.user("[note]"))


def run_kit(machine: type[FaultInjectingMachine], max_examples: int = 40) -> None:
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=max_examples,
            stateful_step_count=25,
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.generate],
            report_multiple_bugs=False,
            suppress_health_check=list(HealthCheck),
        ),
    )


class StoredAgentFaults(FaultInjectingMachine):
    """The project's agent with a store, tools of every kind and hooks that add messages."""

    def make_agent(self, model: ScriptedModel, store: RunStore | None) -> Agent:
        return Agent(
            model,
            TOOLS,
            hooks={"before_llm": note, "after_tools": note, "on_complete": note},
            max_iterations=3,
            store=store,
            clock=self.clock,
            action_timeout=60,
            input_timeout=60,
        )


class InMemoryAgentFaults(FaultInjectingMachine):
    """No store; inputs arriving while busy are queued."""

    def make_store(self) -> RunStore | None:
        return None

    def make_agent(self, model: ScriptedModel, store: RunStore | None) -> Agent:
        return Agent(model, TOOLS, input_policy="queue", max_iterations=4)


def _only(machine: type[FaultInjectingMachine], kind: FaultKind) -> type[FaultInjectingMachine]:
    return type(f"{machine.__name__}_{kind}", (machine,), {"fault_kinds": (kind,)})


@pytest.mark.parametrize("kind", list(FaultKind), ids=str)
def test_the_project_agent_with_a_store_survives_every_fault(kind: FaultKind) -> None:
    run_kit(_only(StoredAgentFaults, kind), max_examples=25)


@pytest.mark.parametrize("kind", list(FaultKind), ids=str)
def test_the_project_agent_without_a_store_survives_every_fault(kind: FaultKind) -> None:
    run_kit(_only(InMemoryAgentFaults, kind), max_examples=15)


def test_every_callback_point_is_offered() -> None:
    agent = StoredAgentFaults().make_agent(ScriptedModel(), MemoryStore())
    points = fault_points(agent)
    assert {"model", "store.save", "tool:weather", "tool:book"} <= set(points)
    assert "tool:location" not in points  # a client-side tool has no body
    assert {"hook:before_llm", "hook:on_complete", "hook:before_each_tool"} <= set(points)
    assert {"listener:run.submit", "listener:loop.model_replied"} <= set(points)
    assert {"listener:conversation.message", "listener:trace.LLMCallTrace"} <= set(points)


class SaveFaultsWhileWaiting(StoredAgentFaults):
    """Save faults, armed only while the run waits, often past its deadline."""

    fault_kinds: Sequence[FaultKind] = (FaultKind.EXCEPTION,)

    def points(self, agent: Agent) -> Sequence[str]:
        return ("store.save",)

    def _do(self, action: str, data: st.DataObject) -> None:
        if self._agent().state in (RunState.REQUIRES_ACTION, RunState.INPUT_REQUIRED):
            if data.draw(st.booleans(), label="late"):
                self.clock.advance(3_600)  # past the wait's deadline
            super()._do(action, data)
        else:  # the run gets to a wait unharmed
            AgentStateMachine._do(self, action, data)


@pytest.mark.parametrize("kind", [FaultKind.EXCEPTION, FaultKind.KEYBOARD_INTERRUPT], ids=str)
def test_a_refused_save_of_a_late_call_leaves_the_stored_run(kind: FaultKind) -> None:
    # Any of the call's saves fails, that of the expiry of the overdue wait (a late
    # resolve_action, provide_input or submit) included: the store's error escapes, and the
    # run is what the store holds (I12), and a refusal names that state (I4).
    run_kit(_only(SaveFaultsWhileWaiting, kind), max_examples=100)


def test_a_cancellation_told_after_the_turn_failed_is_not_its_cause() -> None:
    # Found by docs/testing.md's example: with a store, a listener hears of the model's
    # failure once the step's batch (the turn's `fail` included) is stored; a cancellation it
    # raises then comes after the turn failed with reason "error", which stands.
    machine = StoredAgentFaults()
    machine.create_the_agent()
    try:
        machine.model.fail(ModelCallError("the server failed", model="scripted", reason="http"))
        machine.injector.arm(Fault("listener:loop.model_failed", FaultKind.CANCELLED_ERROR))
        machine._act("submit", machine._agent().submit, "hi")  # checks I12 after the step
        agent = machine._agent()
        assert isinstance(machine.escaped, asyncio.CancelledError)
        assert (agent.state, agent.reason) == ("failed", "error")
    finally:
        machine.teardown()


# -- broken agents the kit must catch, one per kind of fault --------------------------------


def _kind_machine(
    kind: FaultKind,
    at: Sequence[str] = ("model", "tool:weather", "listener:loop.model_replied", "hook:after_llm"),
) -> type[FaultInjectingMachine]:
    class OneKind(StoredAgentFaults):
        fault_kinds: Sequence[FaultKind] = (kind,)

        def points(self, agent: Agent) -> Sequence[str]:
            return at

    return OneKind


STRANDING = [kind for kind in FaultKind if kind is not FaultKind.REENTRANT_CALL]


@pytest.mark.parametrize("kind", STRANDING, ids=str)
def test_the_kit_catches_an_agent_that_strands_the_run(
    kind: FaultKind, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The bug of issue 18 reintroduced: nothing settles what escapes a step.
    monkeypatch.setattr(StepGuard, "_settle", lambda self, error: None)
    with pytest.raises(InvariantError) as caught:
        run_kit(_kind_machine(kind), max_examples=60)
    assert caught.value.invariant == "I12"


class SwallowingAgent(Agent):
    """Settles the run, then swallows whatever escaped a submit (BaseException included)."""

    async def asubmit(self, text: str) -> TurnOutcome:
        try:
            return await super().asubmit(text)
        except BaseException:
            return self.outcome()


@pytest.mark.parametrize("kind", STRANDING[1:], ids=str)
def test_the_kit_catches_an_agent_that_swallows_a_base_exception(kind: FaultKind) -> None:
    class Swallowing(_kind_machine(kind)):  # type: ignore[misc, valid-type]
        def make_agent(self, model: ScriptedModel, store: RunStore | None) -> Agent:
            return SwallowingAgent(model, TOOLS, store=store, max_iterations=3)

    with pytest.raises(InvariantError) as caught:
        run_kit(Swallowing, max_examples=60)
    assert caught.value.invariant == "I12"
    assert "swallowed" in str(caught.value)


def test_the_kit_catches_an_agent_that_lets_steps_start_inside_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(StepGuard, "_check_mid_step", lambda self, name: None)
    monkeypatch.setattr(Agent, "reset", lambda self: None)
    machine = _kind_machine(
        FaultKind.REENTRANT_CALL, ("hook:on_complete", "listener:run.complete")
    )
    with pytest.raises(InvariantError) as caught:
        run_kit(machine, max_examples=300)
    assert caught.value.invariant == "I13"


def test_the_kit_catches_an_agent_that_drops_a_request_asked_mid_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A cancel or pause asked for during a step that ends in a wait or a completion is
    # never taken (the bug of issue 18: "returns busy and is then silently dropped").
    monkeypatch.setattr(StepGuard, "_apply_requests", lambda self: False)
    at = ("listener:loop.model_replied", "listener:run.need_action", "listener:run.complete")
    with pytest.raises(InvariantError) as caught:
        run_kit(_kind_machine(FaultKind.REENTRANT_CALL, at), max_examples=80)
    assert caught.value.invariant == "I13"
