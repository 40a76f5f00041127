"""Sub-agents: an agent as a tool of another; its calls are child runs (agentfsm.agent.children).

Each test drives a parent through the public API with scripted models: what the child's
answer, wait, failure, cancel or pause does to the parent, and what bad input is refused.
"""

from __future__ import annotations

import asyncio
import doctest
import json
from collections.abc import Callable

import pytest

from agentfsm import Agent, MemoryStore, tool
from agentfsm.agent import AgentTool, agent_tool, child_run_id, children
from agentfsm.errors import (
    GuardFailedError,
    HookFailedError,
    IllegalTransitionError,
    ModelCallError,
    ToolDefinitionError,
)
from agentfsm.llm.scripted import ScriptedModel
from agentfsm.states import LoopState
from agentfsm.testing import FakeClock, assert_history_valid

CHILD = child_run_id("parent", 1, 1, "call_1")
RAN: list[str] = []


@tool(policy="require_approval")
def delete(path: str) -> str:
    """Delete a file."""
    RAN.append(path)
    return f"deleted {path}"


def _parent(
    child: Callable[[], Agent], model: ScriptedModel | None = None, **options: object
) -> Agent:
    model = model or ScriptedModel().tool_call("helper", task="Tidy up").text("All tidy.")
    tools = [agent_tool(child, name="helper", description="Tidies."), *options.pop("tools", [])]  # type: ignore[list-item]
    parent = Agent(model, tools, run_id="parent", **options)  # type: ignore[arg-type]
    parent.start()
    return parent


def _tool_messages(agent: Agent) -> list[str]:
    return [str(m.content) for m in agent.messages if m.role == "tool"]


def test_a_childs_answer_is_the_calls_result_and_its_run_points_at_the_parent() -> None:
    store = MemoryStore()
    parent = _parent(lambda: Agent(ScriptedModel().text("Tidied 3 files.")), store=store)
    outcome = parent.submit("Tidy my folder")
    assert (outcome.state, outcome.reply) == ("completed", "All tidy.")
    assert _tool_messages(parent) == ["Tidied 3 files."]
    loop = [e.event for e in store.events("parent") if e.machine == "loop"]
    assert loop == [
        "model_replied",
        "delegated",
        "child_returned",
        "tools_finished",
        "model_replied",
    ]
    child_log = store.events(CHILD)
    assert (child_log[0].data["parent_run"], child_log[0].data["parent_call"]) == (
        "parent",
        "call_1",
    )
    child = store.load(CHILD)
    assert child is not None
    assert [m.content for m in child.messages] == ["Tidy up", "Tidied 3 files."]


def test_the_parent_waits_in_delegating_while_the_child_runs() -> None:
    seen: list[str | None] = []

    @tool
    def look() -> str:
        """Look around."""
        seen.append(parent.loop_state)
        return "nothing"

    parent = _parent(lambda: Agent(ScriptedModel().tool_call("look").text("Done."), [look]))
    parent.submit("Tidy")
    assert seen == [LoopState.DELEGATING]


def test_an_approval_in_the_child_is_the_parents_addressed_by_its_path() -> None:
    RAN.clear()
    child_model = ScriptedModel().tool_call("delete", path="a.txt").text("Deleted a.txt.")
    parent = _parent(lambda: Agent(child_model, [delete]))
    outcome = parent.submit("Tidy")
    path = f"parent/call_1/{CHILD}/call_1"
    assert outcome.state == "requires_action"
    assert parent.loop_state == LoopState.AWAITING_ACTION
    assert [(c.id, c.name, json.loads(c.arguments)) for c in outcome.pending] == [
        (path, "delete", {"path": "a.txt"})
    ]
    assert RAN == []
    outcome = parent.resolve_action({path: "approve"})
    assert (outcome.state, outcome.reply) == ("completed", "All tidy.")
    assert RAN == ["a.txt"]
    assert _tool_messages(parent) == ["Deleted a.txt."]
    assert_history_valid(parent.messages)


def test_the_parents_round_hooks_fire_once_across_its_childs_wait() -> None:
    fired: list[str] = []

    def before_tools(context: object) -> None:
        fired.append("before_tools")

    def after_tools(context: object) -> None:
        fired.append("after_tools")

    child_model = ScriptedModel().tool_call("delete", path="a.txt").text("Deleted.")
    parent = _parent(
        lambda: Agent(child_model, [delete]),
        hooks={"before_tools": before_tools, "after_tools": after_tools},
    )
    [call] = parent.submit("Tidy").pending
    assert fired == ["before_tools"]
    parent.resolve_action({call.id: "approve"})
    assert fired == ["before_tools", "after_tools"]


def test_a_denied_child_call_is_answered_denied_in_the_child() -> None:
    RAN.clear()
    child_model = ScriptedModel().tool_call("delete", path="a.txt").text("Not allowed.")
    store = MemoryStore()
    parent = _parent(lambda: Agent(child_model, [delete]), store=store)
    parent.submit("Tidy")
    parent.resolve_action({parent.pending[0].id: "deny"})
    assert RAN == []
    child = store.load(CHILD)
    assert child is not None
    assert "denied" in str(child.messages[-2].content)
    assert parent.outcome().reply == "All tidy."


def test_a_bad_address_is_refused_and_changes_nothing() -> None:
    parent = _parent(lambda: Agent(ScriptedModel().tool_call("delete", path="a"), [delete]))
    parent.submit("Tidy")
    before = (parent.state, parent.loop_state, parent.messages, parent.pending)
    with pytest.raises(GuardFailedError, match="not pending"):
        parent.resolve_action({f"parent/call_1/{CHILD}/call_9": "approve"})
    with pytest.raises(GuardFailedError, match="undecided"):
        parent.resolve_action({})
    assert (parent.state, parent.loop_state, parent.messages, parent.pending) == before


def test_a_question_in_the_child_is_the_parents_and_its_answer_goes_down() -> None:
    child_model = ScriptedModel().tool_call("ask_user", question="Which folder?").text("Done.")
    parent = _parent(lambda: Agent(child_model, ask_user=True))
    outcome = parent.submit("Tidy")
    assert (outcome.state, outcome.question) == ("input_required", "Which folder?")
    assert [c.id for c in outcome.pending] == [f"parent/call_1/{CHILD}/call_1"]
    assert parent.provide_input("Downloads").reply == "All tidy."
    assert child_model.requests[-1].messages[-1].content == "Downloads"


def test_the_parents_own_approvals_survive_a_wait_of_its_child() -> None:
    RAN.clear()
    child_model = ScriptedModel().tool_call("delete", path="child.txt").text("Done.")
    model = (
        ScriptedModel()
        .tool_calls(("helper", {"task": "Tidy"}), ("delete", {"path": "parent.txt"}))
        .text("All tidy.")
    )
    parent = _parent(lambda: Agent(child_model, [delete]), model, tools=[delete])
    outcome = parent.submit("Tidy")
    assert [c.id for c in outcome.pending] == ["call_2"]
    outcome = parent.resolve_action({"call_2": "approve"})
    assert [c.name for c in outcome.pending] == ["delete"]
    outcome = parent.resolve_action({outcome.pending[0].id: "approve"})
    assert outcome.reply == "All tidy."
    assert RAN == ["child.txt", "parent.txt"]


@pytest.mark.parametrize(
    "broken",
    [
        pytest.param(
            lambda: ScriptedModel().fail(
                ModelCallError("down", model="scripted", reason="status", status_code=500)
            ),
            id="model",
        ),
        pytest.param(lambda: "not an agent", id="factory"),
    ],
)
def test_a_failed_child_is_the_calls_error_result(broken: Callable[[], object]) -> None:
    expected = "ModelCallError: down" if isinstance(broken(), ScriptedModel) else "new Agent"

    def child() -> Agent:
        made = broken()
        return Agent(made) if isinstance(made, ScriptedModel) else made  # type: ignore[return-value]

    parent = _parent(child)
    outcome = parent.submit("Tidy")
    assert outcome.state == "completed"
    [message] = _tool_messages(parent)
    assert message.startswith("[error] SubAgentError: call 'call_1' to tool 'helper'")
    assert expected in message


def test_an_exception_escaping_the_child_is_the_calls_error_result() -> None:
    def broken(context: object) -> None:
        raise RuntimeError("the child's hook broke")

    store = MemoryStore()
    parent = _parent(
        lambda: Agent(ScriptedModel().text("never"), hooks={"before_llm": broken}), store=store
    )
    assert parent.submit("Tidy").state == "completed"
    [message] = _tool_messages(parent)
    assert message.startswith("[error] SubAgentError")
    assert HookFailedError.__name__ in message
    child = store.load(CHILD)
    assert child is not None
    assert (child.state, child.reason) == ("failed", "error")  # at rest (I12)


def test_a_cancel_of_the_waiting_parent_cancels_its_child() -> None:
    store = MemoryStore()
    parent = _parent(
        lambda: Agent(ScriptedModel().tool_call("delete", path="a"), [delete]), store=store
    )
    parent.submit("Tidy")
    outcome = parent.cancel()
    assert (outcome.state, outcome.reason) == ("failed", "cancelled")
    child = store.load(CHILD)
    assert child is not None
    assert (child.state, child.reason) == ("failed", "cancelled")
    assert_history_valid(parent.messages)
    assert_history_valid(child.messages)


def test_an_expired_wait_of_the_parent_cancels_its_child() -> None:
    clock = FakeClock()
    store = MemoryStore()
    parent = _parent(
        lambda: Agent(ScriptedModel().tool_call("delete", path="a"), [delete]),
        store=store,
        clock=clock,
        action_timeout=60.0,
    )
    parent.submit("Tidy")
    clock.advance(61)
    assert parent.expire().reason == "expired"
    child = store.load(CHILD)
    assert child is not None
    assert (child.state, child.reason) == ("failed", "cancelled")


def test_a_wait_that_expires_under_a_refused_answer_still_closes_the_child() -> None:
    clock = FakeClock()
    store = MemoryStore()
    parent = _parent(
        lambda: Agent(ScriptedModel().tool_call("delete", path="a"), [delete]),
        store=store,
        clock=clock,
        action_timeout=60.0,
    )
    [call] = parent.submit("Tidy").pending
    clock.advance(61)
    with pytest.raises(IllegalTransitionError, match="not allowed in state 'failed'"):
        parent.resolve_action({call.id: "approve"})
    assert (parent.state, parent.reason) == ("failed", "expired")
    child = store.load(CHILD)
    assert child is not None
    assert (child.state, child.reason) == ("failed", "cancelled")


def test_a_cancel_asked_inside_the_child_propagates_from_the_root() -> None:
    @tool
    async def stop() -> str:
        """Stop everything."""
        await parent.acancel()
        return "stopping"

    store = MemoryStore()
    parent = _parent(
        lambda: Agent(ScriptedModel().tool_calls(("stop", {}), ("stop", {})), [stop]),
        store=store,
    )
    outcome = parent.submit("Tidy")
    assert (outcome.state, outcome.reason) == ("failed", "cancelled")
    child = store.load(CHILD)
    assert child is not None
    assert (child.state, child.reason) == ("failed", "cancelled")
    assert_history_valid(parent.messages)


def test_a_pause_asked_inside_the_child_pauses_the_tree_and_resume_goes_on() -> None:
    held: list[str] = []

    @tool
    async def hold() -> str:
        """Hold on (the first time, pause the whole tree)."""
        if not held:
            await parent.apause()
        held.append("held")
        return "held"

    store = MemoryStore()
    child_model = ScriptedModel().tool_calls(("hold", {}), ("hold", {})).text("Held twice.")
    model = ScriptedModel().tool_call("helper", task="Tidy up").text("All tidy.")
    parent = _parent(lambda: Agent(child_model, [hold]), model, store=store)
    assert parent.submit("Tidy").state == "paused"
    assert parent.loop_state == LoopState.DELEGATING
    child = store.load(CHILD)
    assert child is not None
    assert child.state == "paused"
    assert held == ["held"]  # paused at the boundary after the first call
    # Another process takes the tree up from the store by the root's run id.
    parent = _parent(lambda: Agent(child_model, [hold]), model, store=store)
    assert parent.state == "paused"
    outcome = parent.resume()
    assert (outcome.state, outcome.reply) == ("completed", "All tidy.")
    assert held == ["held", "held"]
    assert _tool_messages(parent) == ["Held twice."]


def test_shutting_down_a_paused_tree_shuts_its_paused_child_down() -> None:
    @tool
    async def hold() -> str:
        """Hold on: pause the whole tree."""
        await parent.apause()
        return "held"

    store = MemoryStore()
    parent = _parent(
        lambda: Agent(ScriptedModel().tool_calls(("hold", {}), ("hold", {})), [hold]), store=store
    )
    assert parent.submit("Tidy").state == "paused"
    assert parent.shutdown().state == "shutdown"
    child = store.load(CHILD)
    assert child is not None
    assert child.state == "shutdown"
    assert_history_valid(child.messages)


def test_a_restored_parent_cancels_the_child_it_finds_in_the_store() -> None:
    store = MemoryStore()
    child_model = ScriptedModel().tool_call("delete", path="a")
    model = ScriptedModel().tool_call("helper", task="Tidy up")
    _parent(lambda: Agent(child_model, [delete]), model, store=store).submit("Tidy")
    restored = _parent(lambda: Agent(child_model, [delete]), model, store=store)
    assert restored.state == "requires_action"
    assert restored.cancel().reason == "cancelled"
    child = store.load(CHILD)
    assert child is not None
    assert (child.state, child.reason) == ("failed", "cancelled")


def test_an_agent_tool_is_a_tool_with_a_task_and_refuses_to_run_alone() -> None:
    helper = agent_tool(lambda: Agent("scripted:demo"), name="helper", description="Helps.")
    assert isinstance(helper, AgentTool)
    assert helper.parameters["required"] == ["task"]
    assert helper.to_openai()["function"]["description"] == "Helps."  # type: ignore[index]
    body = helper.function(task="x")  # type: ignore[misc]
    with pytest.raises(ToolDefinitionError, match="only in an Agent's round"):
        asyncio.run(body)


def test_agent_tool_refuses_a_factory_that_is_not_callable() -> None:
    with pytest.raises(TypeError, match="factory must be a callable"):
        agent_tool("an agent", name="helper", description="Helps.")  # type: ignore[arg-type]


def test_a_factory_agent_with_a_store_of_its_own_fails_the_call() -> None:
    parent = _parent(
        lambda: Agent(ScriptedModel().text("x"), store=MemoryStore()), store=MemoryStore()
    )
    parent.submit("Tidy")
    [message] = _tool_messages(parent)
    assert message.startswith("[error] SubAgentError")
    assert "store of its own" in message


def test_the_docstring_examples_hold() -> None:
    assert doctest.testmod(children).failed == 0


def test_a_child_run_starts_with_its_task_in_one_save() -> None:
    from tests.stores.test_start_with_input import Batches

    store = Batches(MemoryStore())
    parent = _parent(lambda: Agent(ScriptedModel().text("Tidied.")), store=store)
    outcome = parent.submit("Tidy my folder")

    assert outcome.state == "completed"
    child_saves = [batch for batch in store.batches if batch and batch[0] == "start"]
    parent_start, child_start = child_saves  # (the parent's own start, then its child's)
    assert parent_start == ["start"]  # the parent was started alone (`_parent`)
    assert child_start[:2] == ["start", "submit"]  # the child: one save for both (astart(task))
    assert [e.event for e in store.events(CHILD)][:2] == ["start", "submit"]
