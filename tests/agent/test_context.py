"""Issue 17, part 1: context usage, and compaction as a recorded conversation record."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentfsm import Agent, ScriptedModel, SQLiteStore
from agentfsm.agent import ContextUsage, context_window
from agentfsm.errors import HookFailedError, IllegalTransitionError
from agentfsm.llm import Usage
from agentfsm.states import Message
from agentfsm.stores import replay
from agentfsm.testing import assert_history_valid
from agentfsm.tools import HookContext

RUN_ID = "run-context"
SUMMARY = "Earlier: the user asked about Oslo; it is sunny there."


def weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}."


def _used(total: int) -> Usage:
    return Usage(prompt_tokens=total - 10, completion_tokens=10, total_tokens=total)


def test_context_usage_counts_the_last_call_against_the_window() -> None:
    agent = Agent(ScriptedModel().text("Hi.", usage=_used(100)), context_window=1000)
    assert agent.context_usage is None
    agent.start()
    agent.submit("hello")
    usage = agent.context_usage
    assert usage == ContextUsage(100, 1000)
    assert usage is not None
    assert usage.fraction == pytest.approx(0.1)


def test_the_window_comes_from_the_model_or_its_name() -> None:
    assert context_window("openai:gpt-4o-mini") == 128_000
    assert context_window("gpt-4.1-nano") == 1_047_576
    assert context_window("scripted") is None
    assert ContextUsage(5, None).fraction is None

    class Windowed(ScriptedModel):
        context_window = 400

    agent = Agent(Windowed().text("Hi.", usage=_used(100)))
    agent.start()
    agent.submit("hello")
    assert agent.context_usage == ContextUsage(100, 400)


def _two_turns(store: SQLiteStore) -> Agent:
    model = (
        ScriptedModel()
        .tool_call("weather", city="Oslo")
        .text("Sunny in Oslo.")
        .text("You are welcome.")
        .text("Bergen is rainy.")
    )
    agent = Agent(model, [weather], system_prompt="Be brief.", store=store, run_id=RUN_ID)
    agent.start()
    agent.submit("Weather in Oslo?")
    agent.submit("Thanks")
    return agent


def test_compact_at_rest_replaces_the_prefix_and_replay_reproduces_it(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "runs.db") as store:
        agent = _two_turns(store)
        before = agent.messages
        agent.compact(SUMMARY, keep=2)

        assert agent.messages == (before[0], Message.system(SUMMARY), *before[-2:])
        replay(store.events(RUN_ID), expected=store.load(RUN_ID))
        assert agent.submit("And Bergen?").reply == "Bergen is rainy."
        assert agent.messages[1] == Message.system(SUMMARY)
        replay(store.events(RUN_ID), expected=store.load(RUN_ID))


def test_compact_never_separates_a_call_from_its_tool_messages(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "runs.db") as store:
        agent = _two_turns(store)
        # system, user, assistant(call), tool, assistant, user, assistant: keep=4 starts at the
        # tool message, so the cut moves back to keep the assistant that called it
        agent.compact(Message.user(SUMMARY), keep=4)

        roles = [m.role for m in agent.messages]
        assert roles == ["system", "user", "assistant", "tool", "assistant", "user", "assistant"]
        assert agent.messages[2].tool_calls
        assert_history_valid(agent.messages)
        replay(store.events(RUN_ID), expected=store.load(RUN_ID))


def test_a_before_llm_handler_compacts_before_the_model_call(tmp_path: Path) -> None:
    model = ScriptedModel().text("One.").text("Two.").text("Three.")
    with SQLiteStore(tmp_path / "runs.db") as store:
        agent = Agent(model, system_prompt="Be brief.", store=store, run_id=RUN_ID)

        @agent.on("before_llm")
        def keep_it_short(context: HookContext) -> None:
            if len(context.messages) > 4:
                context.compact(SUMMARY, keep=1)

        agent.start()
        for text in ("a", "b", "c"):
            agent.submit(text)

        sent = [[m.content for m in request.messages] for request in model.requests]
        assert sent == [
            ["Be brief.", "a"],
            ["Be brief.", "a", "One.", "b"],
            ["Be brief.", SUMMARY, "c"],
        ]
        assert agent.messages[-1] == Message.assistant("Three.")
        replay(store.events(RUN_ID), expected=store.load(RUN_ID))


def test_bad_compactions_are_refused_and_change_nothing(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "runs.db") as store:
        agent = _two_turns(store)
        before = (agent.messages, store.load(RUN_ID), store.events(RUN_ID))
        with pytest.raises(ValueError, match="leaves nothing to compact"):
            agent.compact(SUMMARY, keep=6)
        with pytest.raises(ValueError, match="keep must be a whole number"):
            agent.compact(SUMMARY, keep=-1)
        with pytest.raises(ValueError, match="must not be empty"):
            agent.compact("  ")
        with pytest.raises(ValueError, match="tool message"):
            agent.compact(Message.tool("c1", "x"))
        with pytest.raises(TypeError, match="summary must be a str or a Message"):
            agent.compact(42)  # type: ignore[arg-type]
        assert (agent.messages, store.load(RUN_ID), store.events(RUN_ID)) == before


def test_compact_only_at_rest_and_from_before_llm_only() -> None:
    waiting = Agent(ScriptedModel().tool_call("ask_user", question="Which city?"), ask_user=True)
    waiting.start()
    waiting.submit("book")
    with pytest.raises(IllegalTransitionError, match="compact only while ready"):
        waiting.compact(SUMMARY)

    agent = Agent(ScriptedModel().text("Hi."))
    agent.on("after_llm")(lambda context: context.compact(SUMMARY))
    agent.start()
    with pytest.raises(HookFailedError, match="compact is allowed only in 'before_llm'"):
        agent.submit("hello")
