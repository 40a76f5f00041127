"""The Agent under random model responses and random application actions: I5-I9 hold."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from agentfsm import ScriptedModel
from agentfsm.errors import AgentFSMError, ModelCallError
from agentfsm.fsm.agent import Agent
from agentfsm.llm.base import FinishReason, ModelResponse
from agentfsm.states import ToolCall
from agentfsm.tools import tool
from tests.fsm.agent_support import assert_history_valid

RAN: list[tuple[str, str]] = []


@tool
def weather(city: str) -> str:
    """Weather."""
    RAN.append(("weather", city))
    return "sunny"


@tool(policy="require_approval")
def book(city: str) -> str:
    """Book."""
    RAN.append(("book", city))
    return "booked"


@tool(policy="deny")
def wipe() -> str:
    """Never allowed."""
    RAN.append(("wipe", ""))
    return "wiped"


arguments = st.sampled_from(
    ['{"city": "Oslo"}', '{"city": 3}', "{not json", '{"question": "?"}', "{}"]
)
names = st.sampled_from(["weather", "book", "wipe", "ask_user", "teleport"])
tool_calls = st.lists(st.tuples(names, arguments), min_size=1, max_size=4)
responses = st.one_of(
    st.builds(lambda text: ModelResponse(content=text), st.sampled_from(["done", "ok"])),
    tool_calls.map(lambda specs: ("calls", specs)),
    tool_calls.map(lambda specs: ("calls", specs)),
    st.just(ModelCallError("boom", model="fake", reason="status", status_code=500)),
)


class ScriptingModel(ScriptedModel):
    """Numbers the tool calls it is scripted with; answers "fallback" when out of script."""

    def __init__(self) -> None:
        super().__init__(fallback=lambda messages, tools: ModelResponse(content="fallback"))
        self.count = 0

    def script(self, step: Any) -> None:
        if isinstance(step, ModelCallError):
            self.fail(step)
            return
        if isinstance(step, tuple):
            calls = []
            for name, args in step[1]:
                self.count += 1
                calls.append(ToolCall(id=f"call_{self.count}", name=name, arguments=args))
            step = ModelResponse(tool_calls=tuple(calls), finish_reason=FinishReason.TOOL_CALLS)
        self.respond(step)


class AgentMachine(RuleBasedStateMachine):
    @initialize(max_iterations=st.integers(min_value=1, max_value=3))
    def create(self, max_iterations: int) -> None:
        RAN.clear()
        self.model = ScriptingModel()
        self.agent = Agent(self.model, [weather, book, wipe], max_iterations=max_iterations)
        self.agent.start()
        self.turns = 0
        self.approved: set[str] = set()

    def _act(self, action: Any, *args: Any) -> None:
        before = (self.agent.state, self.agent.messages, self.agent.turn)
        try:
            action(*args)
        except (AgentFSMError, ValueError):
            if self.agent.state not in ("failed",):  # hook failures would fail the run
                assert (self.agent.state, self.agent.messages, self.agent.turn) == before

    @rule(step=responses)
    def script_the_model(self, step: Any) -> None:
        self.model.script(step)

    @rule(text=st.sampled_from(["hello", "hello", ""]), script=st.lists(responses, max_size=3))
    def submit(self, text: str, script: list[Any]) -> None:
        for step in script:
            self.model.script(step)
        starts = text.strip() and self.agent.state in ("ready", "completed", "failed")
        self._act(self.agent.submit, text)
        self.turns += bool(starts)

    @rule(data=st.data())
    def resolve(self, data: st.DataObject) -> None:
        pending = [call.id for call in self.agent.pending]
        choice = st.sampled_from(["approve", "deny"])
        decisions = {call_id: data.draw(choice) for call_id in pending}
        if self.agent.state == "requires_action":
            self.approved |= {i for i, d in decisions.items() if d == "approve"}
        self._act(self.agent.resolve_action, decisions)

    @rule(text=st.sampled_from(["Rome", ""]))
    def answer_question(self, text: str) -> None:
        self._act(self.agent.provide_input, text)

    @rule()
    def cancel(self) -> None:
        self._act(self.agent.cancel)

    @rule()
    def pause_and_resume(self) -> None:
        self._act(self.agent.pause)
        self._act(self.agent.resume)

    @invariant()
    def turn_counts_accepted_submits(self) -> None:  # I5
        if hasattr(self, "agent"):
            assert self.agent.turn == self.turns

    @invariant()
    def pending_calls_are_unanswered_calls_of_the_last_assistant_message(self) -> None:  # I6
        if not hasattr(self, "agent") or self.agent.state != "requires_action":
            return
        assert self.agent.pending
        last = max(i for i, m in enumerate(self.agent.messages) if m.role == "assistant")
        asked = {call.id for call in self.agent.messages[last].tool_calls}
        answered = {m.tool_call_id for m in self.agent.messages[last + 1 :]}
        assert {call.id for call in self.agent.pending} <= asked - answered

    @invariant()
    def history_keeps_tool_messages_with_their_calls(self) -> None:  # I7
        if hasattr(self, "agent") and self.agent.state not in ("busy",):
            messages = self.agent.messages
            if self.agent.state in ("requires_action", "input_required"):
                messages = messages[: max(i for i, m in enumerate(messages) if m.tool_calls)]
            assert_history_valid(messages)

    @invariant()
    def iterations_stay_within_the_cap(self) -> None:  # I8
        if hasattr(self, "agent"):
            assert self.agent.iteration <= self.agent._data.max_iterations

    @invariant()
    def only_permitted_valid_calls_ran(self) -> None:  # I9
        if not hasattr(self, "agent"):
            return
        assert all(name != "wipe" for name, _ in RAN)
        for message in self.agent.messages:
            for call in message.tool_calls:
                ran = any(
                    m.tool_call_id == call.id and m.content in ("sunny", "booked")
                    for m in self.agent.messages
                )
                if ran:
                    assert json.loads(call.arguments) == {"city": "Oslo"}
                    assert call.name == "weather" or call.id in self.approved


AgentMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)
TestAgent = AgentMachine.TestCase
