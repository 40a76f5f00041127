"""Dependencies for tools and hooks: given per Agent or per turn, never stored, never sent."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from agentfsm import Agent, MemoryStore, ScriptedModel, ToolContext, tool
from agentfsm.agent import agent_tool
from agentfsm.tools import HookContext


@dataclass
class Deps:
    """What an application hands its tools: here a user and a fake database."""

    user: str
    db: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        return "<Deps SECRET-MARKER>"


@tool
def remember(note: str, ctx: ToolContext[Deps]) -> str:
    """Remember a note for the current user."""
    ctx.deps.db[ctx.deps.user] = note
    return f"noted for {ctx.deps.user}"


@tool(policy="require_approval")
def forget(ctx: ToolContext[Deps]) -> str:
    """Forget the current user's note (needs approval)."""
    ctx.deps.db.pop(ctx.deps.user, None)
    return f"forgot {ctx.deps.user}"


def test_a_tool_and_a_hook_get_the_agents_deps_and_the_model_never_sees_them() -> None:
    deps = Deps("ada")
    seen: list[object] = []
    model = ScriptedModel().tool_call("remember", note="tea").text("Noted.")
    agent = Agent(
        model, [remember], deps=deps, hooks={"before_llm": lambda c: seen.append(c.deps)}
    )
    agent.start("Remember tea")
    assert deps.db == {"ada": "tea"}
    assert seen == [deps, deps]
    schema = model.requests[0].tools[0]
    assert json.dumps(schema).count("ctx") == 0
    assert "SECRET-MARKER" not in repr(model.requests)


def test_a_turns_deps_replace_the_agents_for_that_turn_only() -> None:
    base, turn = Deps("ada"), Deps("bob")
    model = (
        ScriptedModel()
        .tool_call("remember", note="one")
        .text("ok")
        .tool_call("remember", note="two")
        .text("ok")
    )
    agent = Agent(model, [remember], deps=base)
    agent.start("first", deps=turn)
    agent.submit("second")
    assert (turn.db, base.db) == ({"bob": "one"}, {"ada": "two"})


def test_deps_are_never_stored_and_a_restored_run_gets_the_restorers() -> None:
    store = MemoryStore()
    first_deps, second_deps = Deps("ada", {"ada": "x"}), Deps("ada", {"ada": "y"})
    model = ScriptedModel().tool_call("forget")
    agent = Agent(model, [forget], deps=first_deps, store=store, run_id="r")
    assert agent.start("Forget me").state == "requires_action"
    assert "SECRET-MARKER" not in str(store.load("r"))
    assert "SECRET-MARKER" not in str(store.events("r"))
    again = Agent.restore(
        ScriptedModel().text("Done."), [forget], store=store, run_id="r", deps=second_deps
    )
    again.resolve_action({call.id: "approve" for call in again.pending})
    assert (first_deps.db, second_deps.db) == ({"ada": "x"}, {})


def test_a_child_run_gets_the_parents_deps_unless_its_factory_gives_its_own() -> None:
    parents, own = Deps("parent"), Deps("own")
    inherits = agent_tool(
        lambda: Agent(ScriptedModel().tool_call("remember", note="a").text("ok"), [remember]),
        name="inherits",
        description="Remembers with the parent's deps.",
    )
    overrides = agent_tool(
        lambda: Agent(
            ScriptedModel().tool_call("remember", note="b").text("ok"), [remember], deps=own
        ),
        name="overrides",
        description="Remembers with its own deps.",
    )
    model = ScriptedModel().tool_call("inherits", task="a").tool_call("overrides", task="b")
    agent = Agent(model.text("Both done."), [inherits, overrides], deps=parents)
    assert agent.start("Go").reply == "Both done."
    assert (parents.db, own.db) == ({"parent": "a"}, {"own": "b"})


def test_an_input_that_arrives_while_busy_takes_no_deps() -> None:
    refused: list[Exception] = []

    @tool
    async def chat(ctx: ToolContext) -> str:
        """Submit from inside the turn."""
        try:
            await agent.asubmit("more", deps=Deps("x"))
        except ValueError as error:
            refused.append(error)
        return "ok"

    agent = Agent(ScriptedModel().tool_call("chat").text("Done."), [chat], input_policy="queue")
    agent.start("go")
    assert len(refused) == 1
    assert "busy" in str(refused[0])


def test_a_hook_context_made_by_hand_has_no_deps() -> None:
    assert HookContext("before_llm", "r").deps is None  # type: ignore[arg-type]


@pytest.mark.parametrize("annotation", ["ToolContext", "ToolContext[Deps]", "ToolContext | None"])
def test_every_way_to_declare_the_context_keeps_it_out_of_the_schema(annotation: str) -> None:
    namespace: dict[str, object] = {"ToolContext": ToolContext, "Deps": Deps}
    exec(
        f"def body(city: str, ctx: {annotation}) -> str:\n    '''Look.'''\n    return city\n",
        namespace,
    )
    made = tool(namespace["body"])  # type: ignore[call-overload]
    assert list(made.parameters["properties"]) == ["city"]
