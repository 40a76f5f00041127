"""examples/support_agent.py, property-tested with the kit, and one scripted conversation."""

from __future__ import annotations

from hypothesis import settings

from agentfsm import Agent, MemoryStore, RunStore, ScriptedModel
from agentfsm.testing import AgentStateMachine, assert_history_valid
from examples.support_agent import Audit, build_agent


class SupportAgentMachine(AgentStateMachine):
    """Random conversations with the support agent, its run kept in a MemoryStore."""

    def make_agent(self, model: ScriptedModel, store: RunStore | None) -> Agent:
        return build_agent(model, store=store, clock=self.clock)


SupportAgentMachine.TestCase.settings = settings(
    max_examples=40, stateful_step_count=25, deadline=None
)
TestSupportAgent = SupportAgentMachine.TestCase


def test_a_refund_runs_only_once_a_human_approves_it(scripted_model: ScriptedModel) -> None:
    scripted_model.tool_call("lookup_order", order_id="A100")
    scripted_model.tool_call("refund", order_id="A100", amount=39.0, reason="broken")
    scripted_model.text("Your refund of 39 EUR is on its way.")
    audit = Audit()
    store = MemoryStore()
    agent = build_agent(scripted_model, store=store, audit=audit)
    agent.start()

    waiting = agent.submit("My kettle A100 arrived broken, refund please.")
    assert waiting.state == "requires_action"
    assert [call.name for call in waiting.pending] == ["refund"]
    assert audit.calls == ["lookup_order(call_1)"]

    done = agent.resolve_action({"call_2": "approve"})
    assert done.reply == "Your refund of 39 EUR is on its way."
    assert audit.calls == ["lookup_order(call_1)", "refund(call_2)"]
    assert agent.messages[-2].content == "refunded 39.00 EUR on order A100"
    assert_history_valid(agent.messages)
    stored = store.load(agent.run_id)
    assert stored is not None
    assert stored.messages == agent.messages
    agent.close()


def test_the_example_runs_on_the_demo_model() -> None:
    agent = build_agent("scripted:demo")
    agent.start()
    reply = agent.submit("Where is my order A100?").reply
    assert reply is not None
    assert "kettle" in reply
    agent.close()
