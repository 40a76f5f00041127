"""Calls into a run from inside its own steps keep the contract or are refused (I13).

Re-entrant calls (a hook, listener or tool calling back), requests at step boundaries (after
the last model call, between two tool calls), and what hooks and models may touch (I7, I10).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from agentfsm import ScriptedModel
from agentfsm.agent import Agent
from agentfsm.errors import HookFailedError, HookMessageError, ReentrantCallError
from agentfsm.llm.base import ModelResponse
from agentfsm.states import Event, Message
from agentfsm.states.json import JSONObject
from agentfsm.stores import MemoryStore
from agentfsm.stores.exact_replay import replay
from agentfsm.tools import HookContext, tool
from tests.agent.agent_support import answer, assert_history_valid, calls
from tests.agent.test_failures import (
    RAN,
    ROUND,
    THREE,
    BoomError,
    assert_usable,
    make,
    weather,
)


@pytest.fixture(autouse=True)
def _clear_spy() -> None:
    RAN.clear()


class TestReentrantCalls:
    def test_the_sync_facade_from_a_listener_cancels_at_the_next_boundary(self) -> None:
        agent = make(THREE, answer("done"))
        asked: list[str] = []

        def listener(item: object) -> None:
            if isinstance(item, Event) and item.event == "model_replied" and not asked:
                asked.append(agent.cancel().state)

        agent.add_listener(listener)
        assert agent.submit("hi").state == "failed"
        assert (asked, agent.reason, RAN) == (["busy"], "cancelled", [])
        assert_history_valid(agent.messages)

    def test_the_sync_facade_from_a_listener_cannot_start_a_step(self) -> None:
        agent = make(answer("done"))
        seen: list[BaseException] = []

        def listener(item: object) -> None:
            if isinstance(item, Event) and item.event == "complete":
                try:
                    agent.submit("nested")
                except ReentrantCallError as refused:
                    seen.append(refused)

        agent.add_listener(listener)
        agent.submit("hi")
        assert len(seen) == 1
        assert "submit" in str(seen[0])
        assert seen[0].call == "submit"
        assert (agent.state, agent.turn) == ("completed", 1)
        assert_history_valid(agent.messages)

    def test_on_complete_awaiting_asubmit_cannot_break_the_order(self) -> None:
        agent = make(answer("one"), ROUND, answer("two"))

        async def chain(context: HookContext) -> None:
            if context.turn == 1:
                await agent.asubmit("next")
                context.add_message(Message.user("after"))

        agent.on("on_complete")(chain)
        with pytest.raises(HookFailedError) as failed:
            agent.submit("hi")
        assert isinstance(failed.value.__cause__, ReentrantCallError)
        assert (agent.state, agent.turn) == ("completed", 1)
        assert_history_valid(agent.messages)

    @pytest.mark.parametrize("call", ["resolve_action", "provide_input", "shutdown", "resume"])
    def test_steps_from_inside_a_step_are_refused(self, call: str) -> None:
        agent = make(ROUND, answer("done"))
        refused: list[ReentrantCallError] = []

        @tool
        def meddle(city: str) -> str:
            """Calls back into its own run."""
            method = getattr(agent, call)
            try:
                method({}) if call == "resolve_action" else method(
                    *(("x",) if call == "provide_input" else ())
                )
            except ReentrantCallError as error:
                refused.append(error)
            return "ok"

        agent.tools.registry.register(meddle)
        agent.model = ScriptedModel([calls(("c1", "meddle", {"city": "A"})), answer("done")])
        assert agent.submit("hi").state == "completed"
        assert [error.call for error in refused] == [call]
        assert call in str(refused[0])

    def test_reset_from_a_hook_is_refused(self) -> None:
        agent = make(answer("done"))
        agent.on("on_complete")(lambda context: agent.reset())
        with pytest.raises(HookFailedError) as failed:
            agent.submit("hi")
        assert isinstance(failed.value.__cause__, ReentrantCallError)
        assert len(agent.messages) == 2

    def test_submit_from_a_tool_follows_the_input_policy(self) -> None:
        agent = make(ROUND, answer("one"), answer("two"), input_policy="queue")

        @tool
        def weather2(city: str) -> str:
            """Queues a follow-up."""
            return agent.submit("follow-up").state

        agent.tools.registry.register(weather2)
        agent.model = ScriptedModel(
            [calls(("c1", "weather2", {"city": "A"})), answer("one"), answer("two")]
        )
        outcome = agent.submit("hi")
        assert (outcome.state, outcome.reply, agent.turn) == ("completed", "two", 2)
        assert_history_valid(agent.messages)

    def test_submit_from_a_tool_under_reject_fails_only_that_call(self) -> None:
        agent = make()

        @tool
        def pushy(city: str) -> str:
            """Submits while busy."""
            agent.submit("more")
            return "ok"

        agent.tools.registry.register(pushy)
        agent.model = ScriptedModel([calls(("c1", "pushy", {"city": "A"})), answer("done")])
        assert agent.submit("hi").state == "completed"
        tool_message = next(m for m in agent.messages if m.role == "tool")
        assert "is not allowed in state 'busy'" in str(tool_message.content)


class TestHooksCannotBreakTheOrder:
    @pytest.mark.parametrize(
        "message",
        [
            Message.tool("nothing", "a stray answer"),
            Message.assistant(None, tool_calls=ROUND.tool_calls),
        ],
        ids=["tool message", "assistant with tool calls"],
    )
    def test_refused_and_nothing_added(self, message: Message) -> None:
        agent = make(answer("done"))
        tried: list[HookMessageError] = []

        def add(context: HookContext) -> None:
            try:
                context.add_message(message)
            except HookMessageError as error:
                tried.append(error)

        agent.on("before_llm")(add)
        assert agent.submit("hi").state == "completed"
        assert len(tried) == 1
        assert message.role in str(tried[0])
        assert [m.role for m in agent.messages] == ["user", "assistant"]


class TestTheModelGetsAView:
    def test_trimming_the_list_changes_nothing(self) -> None:
        model = ScriptedModel()

        def trim(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
            del messages[0]  # type: ignore[attr-defined]
            return answer("trimmed")

        model.reply_with(trim)
        agent = Agent(model, system_prompt="be brief")
        agent.start()
        with pytest.raises(TypeError):
            agent.submit("hi")
        assert [m.role for m in agent.messages] == ["system", "user"]
        assert (agent.state, agent.reason) == ("failed", "error")


class TestRequestsDuringTheLastModelCall:
    def _asking(self, request: str) -> tuple[Agent, list[str]]:
        model = ScriptedModel()
        said: list[str] = []
        agent = Agent(model)

        def reply(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
            said.append(getattr(agent, request)().state)
            return answer("the final answer")

        model.reply_with(reply)
        agent.start()
        return agent, said

    def test_cancel_cancels_the_turn(self) -> None:
        agent, said = self._asking("cancel")
        outcome = agent.submit("hi")
        assert said == ["busy"]
        assert (outcome.state, outcome.reason) == ("failed", "cancelled")
        assert agent.messages[-1].content == "the final answer"
        assert_usable(agent)

    def test_cancel_during_a_model_call_asking_for_tools_runs_none(self) -> None:
        store = MemoryStore()
        model = ScriptedModel()
        agent = Agent(model, [weather], store=store, run_id="r")

        def reply(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
            agent.cancel()
            return THREE

        model.reply_with(reply)
        agent.start()
        assert (agent.submit("hi").reason, RAN) == ("cancelled", [])
        assert [m.role for m in agent.messages] == ["user", "assistant", "tool", "tool", "tool"]
        replay(store.events("r"), store.load("r"))  # I10: the log rebuilds the run

    def test_pause_pauses_the_completed_run(self) -> None:
        agent, said = self._asking("pause")
        assert agent.submit("hi").state == "paused"
        assert said == ["busy"]
        assert (agent.resume().state, agent.reason) == ("completed", "answered")

    def test_cancel_after_the_answer_is_in_is_refused(self) -> None:
        agent = make(answer("done"))
        refused: list[ReentrantCallError] = []

        def listener(item: object) -> None:
            if isinstance(item, Event) and item.event == "model_replied":
                try:
                    agent.cancel()
                except ReentrantCallError as error:
                    refused.append(error)

        agent.add_listener(listener)
        assert agent.submit("hi").state == "completed"
        assert len(refused) == 1
        assert "cancel" in str(refused[0])


class TestBoundariesBetweenToolCalls:
    def _long_round(self, request: str, **options: Any) -> Agent:
        agent = make(**options)

        @tool
        def stop(city: str) -> str:
            """Asks for the request while it runs."""
            RAN.append(f"stop:{city}")
            assert getattr(agent, request)().state == "busy"
            return "asked"

        agent.tools.registry.register(stop)
        agent.model = ScriptedModel(
            [
                calls(("c1", "weather", {"city": "A"}), ("c2", "stop", {"city": "B"}),
                      ("c3", "weather", {"city": "C"}), ("c4", "weather", {"city": "D"})),
                answer("done"),
            ]
        )  # fmt: skip
        return agent

    def test_cancel_answers_the_rest_cancelled(self) -> None:
        agent = self._long_round("cancel")
        outcome = agent.submit("hi")
        assert (outcome.state, outcome.reason) == ("failed", "cancelled")
        assert RAN == ["weather:A", "stop:B"]
        tools = [m for m in agent.messages if m.role == "tool"]
        assert [m.tool_call_id for m in tools] == ["c1", "c2", "c3", "c4"]
        assert "cancelled" in str(tools[2].content)
        assert "cancelled" in str(tools[3].content)
        assert_usable(agent)

    def test_pause_runs_the_rest_on_resume(self) -> None:
        agent = self._long_round("pause")
        assert agent.submit("hi").state == "paused"
        assert RAN == ["weather:A", "stop:B"]
        assert_history_valid(agent.messages, open_round=True)
        outcome = agent.resume()
        assert (outcome.state, outcome.reply) == ("completed", "done")
        assert RAN == ["weather:A", "stop:B", "weather:C", "weather:D"]
        assert_history_valid(agent.messages)


class TestSyncFacadeInsideAStep:
    def test_close_from_a_listener_is_refused(self) -> None:
        agent = make(answer("done"))
        refused: list[BaseException] = []

        def listener(item: object) -> None:
            if isinstance(item, Event) and item.event == "complete" and not refused:
                try:
                    agent.close()
                except RuntimeError as error:
                    refused.append(error)

        agent.add_listener(listener)
        assert agent.submit("hi").state == "completed"
        assert "inside a step" in str(refused[0])

    def test_run_inline_refuses_a_call_that_has_to_wait(self) -> None:
        from agentfsm.agent._sync import run_inline

        async def waits() -> None:
            await asyncio.sleep(0)

        with pytest.raises(RuntimeError, match="had to wait"):
            run_inline(waits())

    def test_the_expired_wait_is_closed_as_expired(self) -> None:
        now = [0.0]
        agent = make(
            calls(("c1", "ask_user", {"question": "which city?"})),
            input_timeout=5.0,
            clock=lambda: now[0],
        )
        assert agent.submit("hi").state == "input_required"
        now[0] = 10.0

        def listener(item: object) -> None:
            if isinstance(item, Event) and item.event == "expire":
                raise BoomError("listener")

        agent.add_listener(listener)
        with pytest.raises(BoomError):
            agent.expire()
        assert (agent.state, agent.reason) == ("failed", "expired")
        assert "expired" in str(agent.messages[-1].content)
