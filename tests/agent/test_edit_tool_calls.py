"""Issue 17, part 2: an ``after_llm`` handler edits the model's tool calls, recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentfsm import Agent, ScriptedModel, SQLiteStore
from agentfsm.errors import HookFailedError
from agentfsm.states import Message, ToolCall
from agentfsm.states.names import RecordKind
from agentfsm.stores import replay
from agentfsm.testing import assert_history_valid
from agentfsm.tools import HookContext, ToolPolicy, tool

RUN_ID = "run-edit"


def _script() -> ScriptedModel:
    return (
        ScriptedModel().tool_calls(("weather", {"city": "Oslo"}), ("delete_all", {})).text("Done.")
    )


def _tools(ran: list[str]) -> list[object]:
    def weather(city: str) -> str:
        """The weather in a city."""
        ran.append(f"weather:{city}")
        return f"Sunny in {city}."

    def delete_all() -> str:
        """Delete everything."""
        ran.append("delete_all")
        return "gone"

    return [weather, delete_all]


def _safer(context: HookContext) -> None:
    kept = [
        call.model_copy(update={"arguments": json.dumps({"city": "Bergen"})})
        for call in context.messages[-1].tool_calls
        if call.name != "delete_all"
    ]
    context.edit_tool_calls(kept)


def test_an_after_llm_handler_drops_a_call_and_changes_arguments(tmp_path: Path) -> None:
    ran: list[str] = []
    with SQLiteStore(tmp_path / "runs.db") as store:
        agent = Agent(_script(), _tools(ran), store=store, run_id=RUN_ID)  # type: ignore[arg-type]
        agent.on("after_llm")(_safer)
        agent.start()
        assert agent.submit("Weather, then clean up").reply == "Done."

        assert ran == ["weather:Bergen"]  # the dropped call never ran
        asked = agent.messages[1]
        assert [(c.name, json.loads(c.arguments)) for c in asked.tool_calls] == [
            ("weather", {"city": "Bergen"})
        ]
        assert_history_valid(agent.messages)
        edits = [e for e in store.events(RUN_ID) if e.event == RecordKind.TOOL_CALLS_EDITED]
        assert len(edits) == 1
        assert len(edits[0].data["original"]["tool_calls"]) == 2  # type: ignore[index, call-overload]
        replay(store.events(RUN_ID), expected=store.load(RUN_ID))


def test_dropping_every_call_makes_the_reply_the_answer() -> None:
    ran: list[str] = []
    agent = Agent(_script(), _tools(ran))  # type: ignore[arg-type]
    agent.on("after_llm")(lambda context: context.edit_tool_calls([]))
    agent.start()
    outcome = agent.submit("Weather, then clean up")
    assert (outcome.state, outcome.reason, ran) == ("completed", "answered", [])
    assert agent.messages[-1] == Message.assistant("")


def test_what_remains_still_needs_its_approval() -> None:
    @tool(policy=ToolPolicy.REQUIRE_APPROVAL)
    def pay(amount: int) -> str:
        """Pay."""
        return f"paid {amount}"

    model = ScriptedModel().tool_call("pay", amount=500).text("Paid.")
    agent = Agent(model, [pay])

    @agent.on("after_llm")
    def cap(context: HookContext) -> None:
        calls = context.messages[-1].tool_calls
        if not calls:
            return
        (call,) = calls
        context.edit_tool_calls([call.model_copy(update={"arguments": '{"amount": 50}'})])

    agent.start()
    waiting = agent.submit("pay the bill")
    assert waiting.state == "requires_action"
    assert [json.loads(c.arguments) for c in waiting.pending] == [{"amount": 50}]
    assert agent.resolve_action({waiting.pending[0].id: "approve"}).reply == "Paid."


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda calls: [ToolCall(id="c9", name="weather")], "'c9' is not a call of the reply"),
        (
            lambda calls: [calls[0].model_copy(update={"name": "delete_all"})],
            "not its tool",
        ),
        (lambda calls: [calls[1], calls[0]], "in its order"),
        (lambda calls: [calls[0], calls[0]], "each once"),
        (lambda calls: ["weather"], "must hold ToolCall objects"),
    ],
)
def test_bad_edits_fail_the_turn_naming_the_problem(edit: object, words: str) -> None:
    ran: list[str] = []
    agent = Agent(_script(), _tools(ran))  # type: ignore[arg-type]
    agent.on("after_llm")(lambda c: c.edit_tool_calls(edit(c.messages[-1].tool_calls)))  # type: ignore[operator]
    agent.start()
    with pytest.raises(HookFailedError, match=words):
        agent.submit("go")
    assert ran == []


def test_edit_tool_calls_only_in_after_llm() -> None:
    agent = Agent(ScriptedModel().text("Hi."))
    agent.on("before_llm")(lambda context: context.edit_tool_calls([]))
    agent.start()
    with pytest.raises(HookFailedError, match="allowed only in 'after_llm'"):
        agent.submit("hello")
