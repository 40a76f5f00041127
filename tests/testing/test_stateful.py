"""`AgentStateMachine` passes well-behaved agents and catches deliberately broken ones."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

import agentfsm.tools.answers
from agentfsm import Agent, MemoryStore, Message, RunStore, ScriptedModel, Snapshot, tool
from agentfsm.states import Event
from agentfsm.testing import AgentStateMachine, InvariantError
from agentfsm.tools.hooks import HookContext


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool(policy="require_approval")
def book(city: str, nights: int = 1) -> str:
    """Book a hotel."""
    return f"booked {nights} night(s) in {city}"


@tool(policy="deny")
def wipe() -> str:
    """Never allowed."""
    return "wiped"


TOOLS = [weather, book, wipe]


def run_kit(machine: type[AgentStateMachine], max_examples: int = 60) -> None:
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=max_examples,
            stateful_step_count=20,
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.generate],  # no shrinking: the test only needs the failure
            report_multiple_bugs=False,
            suppress_health_check=list(HealthCheck),
        ),
    )


def caught_by_kit(machine: type[AgentStateMachine]) -> InvariantError:
    with pytest.raises(InvariantError) as caught:
        run_kit(machine)
    return caught.value


# -- agents the kit must pass ------------------------------------------------------------


def add_note(context: HookContext) -> None:
    context.add_message(Message.user(f"[{context.kind.value} note]"))


def audit(context: HookContext) -> None:
    assert context.pending_tool is not None


NOTE_HOOKS = (
    "after_user_input",
    "before_llm",
    "after_llm",
    "before_tools",
    "after_tools",
    "on_complete",
)


class HookedAgentMachine(AgentStateMachine):
    """Every hook that may add a message adds one; the per-call hooks only look."""

    def make_agent(self, model: ScriptedModel, store: RunStore | None) -> Agent:
        hooks = dict.fromkeys(NOTE_HOOKS, add_note)
        hooks |= {"before_each_tool": audit, "after_each_tool": audit}
        return Agent(
            model,
            TOOLS,
            hooks=hooks,
            max_iterations=3,
            clock=self.clock,
            action_timeout=60,
            input_timeout=60,
        )


def test_the_kit_passes_an_agent_whose_hooks_add_messages_where_allowed() -> None:
    run_kit(HookedAgentMachine, max_examples=30)


class FailingHookMachine(AgentStateMachine):
    """Hooks fail every third time: each such turn fails (the contract §3)."""

    hooks: tuple[str, ...] = ("before_llm", "after_llm", "before_tools", "after_tools")

    def make_agent(self, model: ScriptedModel, store: RunStore | None) -> Agent:
        calls = iter(range(10**6))

        def flaky(context: HookContext) -> None:
            if next(calls) % 3 == 2:
                raise RuntimeError("the hook broke")

        return Agent(model, TOOLS, hooks=dict.fromkeys(self.hooks, flaky), store=store)


def test_the_kit_accepts_a_failing_hook_that_fails_the_turn() -> None:
    run_kit(FailingHookMachine, max_examples=30)


class FailingInputHookMachine(FailingHookMachine):
    hooks = ("after_user_input",)


def test_the_kit_accepts_a_failing_input_hook_that_fails_the_turn() -> None:
    # it found the Agent leaving the run busy when this hook failed (fixed since)
    run_kit(FailingInputHookMachine, max_examples=30)


# -- agents the kit must catch -----------------------------------------------------------


def stray_tool_message(context: HookContext) -> None:
    context.add_message(Message.tool("call_nobody_made", "?"))


class StrayToolMessageMachine(AgentStateMachine):
    def make_agent(self, model: ScriptedModel, store: RunStore | None) -> Agent:
        return Agent(model, TOOLS, hooks={"before_llm": stray_tool_message})


def test_the_kit_catches_a_hook_that_breaks_the_message_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The Agent refuses a hook's tool message (HookMessageError); the kit must still catch
    # an Agent that lets it in.
    monkeypatch.setattr(
        HookContext, "add_message", lambda self, message: self._added.append(message)
    )
    assert caught_by_kit(StrayToolMessageMachine).invariant == "I7"


class PolicyBlindMachine(AgentStateMachine):
    def make_agent(self, model: ScriptedModel, store: RunStore | None) -> Agent:
        return Agent(model, TOOLS)


def test_the_kit_catches_a_tool_system_that_runs_denied_tools(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(agentfsm.tools.answers, "refusal", lambda *args: None)
    assert caught_by_kit(PolicyBlindMachine).invariant == "I9"


class EagerAgent(Agent):
    """Records the user's input before the machine has accepted it."""

    async def asubmit(self, text: str) -> object:  # type: ignore[override]
        self._messages += (Message.user(text),)
        return await super().asubmit(text)


class EagerAgentMachine(AgentStateMachine):
    def make_agent(self, model: ScriptedModel, store: RunStore | None) -> Agent:
        return EagerAgent(model, TOOLS)


def test_the_kit_catches_a_refused_action_that_changed_the_conversation() -> None:
    assert caught_by_kit(EagerAgentMachine).invariant == "I4"


class WriteBehindStore(MemoryStore):
    """Acknowledges each save at once but writes it only when the next one comes."""

    def __init__(self) -> None:
        super().__init__()
        self._held: tuple[Snapshot, Sequence[Event], int | None] | None = None

    def save(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        held, self._held = self._held, (snapshot, tuple(events), expected_version)
        if held is not None:
            super().save(held[0], held[1], expected_version=held[2])


class WriteBehindMachine(AgentStateMachine):
    def make_store(self) -> RunStore | None:
        return WriteBehindStore()

    def make_agent(self, model: ScriptedModel, store: RunStore | None) -> Agent:
        return Agent(model, TOOLS, store=store)


def test_the_kit_catches_a_store_that_acknowledges_before_it_writes() -> None:
    assert caught_by_kit(WriteBehindMachine).invariant == "I11"


def test_make_agent_must_be_implemented() -> None:
    with pytest.raises(NotImplementedError, match="make_agent"):
        run_kit(AgentStateMachine, max_examples=1)
