"""What a newcomer hit: a tool nobody added, restore-or-create, failures as values, names."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import agentfsm
from agentfsm import Agent, MemoryStore, ScriptedModel, SQLiteStore, ToolCall, tool
from agentfsm.errors import ModelCallError, RunNotFoundError, TurnFailedError


@tool(policy="require_approval")
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


def test_an_agent_without_tools_offers_none_and_ask_user_is_opt_in() -> None:
    plain = ScriptedModel().text("Hi.")
    Agent(plain).start("Hello")
    assert plain.requests[0].tool_names == ()
    asking = ScriptedModel().text("Hi.")
    Agent(asking, ask_user=True).start("Hello")
    assert asking.requests[0].tool_names == ("ask_user",)


def test_a_chat_loop_that_only_submits_never_lands_in_input_required() -> None:
    # The model calls ask_user although nobody offered it: an error tool result, not a wait.
    model = ScriptedModel().tool_call("ask_user", question="Which?").text("Fine.").text("Ok.")
    agent = Agent(model)
    agent.start()
    assert agent.submit("Hi").state == "completed"
    assert agent.submit("Again").reply == "Ok."
    tool_message = next(m for m in agent.messages if m.role == "tool")
    assert "ask_user" in (tool_message.content or "")


def test_restore_takes_up_a_stored_run_and_refuses_a_missing_one() -> None:
    store = MemoryStore()
    first = Agent(
        ScriptedModel().tool_call("refund", order="A-7"), [refund], store=store, run_id="r"
    )
    assert first.start("Refund A-7").state == "requires_action"
    again = Agent.restore(ScriptedModel().text("Done."), [refund], run_id="r", store=store)
    assert again.state == "requires_action"
    assert again.resolve_action({c.id: "approve" for c in again.pending}).reply == "Done."
    with pytest.raises(RunNotFoundError, match="no run 'nope'") as caught:
        Agent.restore(ScriptedModel(), [refund], run_id="nope", store=store)
    assert caught.value.run_id == "nope"
    assert store.load("nope") is None
    assert [run.run_id for run in store.list_runs()] == ["r"]


def test_arestore_is_restore_for_async_code(tmp_path: Path) -> None:
    path = f"{tmp_path}/runs.db"
    with SQLiteStore(path) as store:
        Agent(ScriptedModel().text("One."), store=store, run_id="r").start("Hi")

    async def main() -> tuple[str, str | None]:
        with SQLiteStore(path) as store:
            agent = await Agent.arestore(ScriptedModel().text("Two."), run_id="r", store=store)
            outcome = await agent.asubmit("Again")
            try:
                await Agent.arestore(ScriptedModel(), run_id="missing", store=store)
            except RunNotFoundError:
                return outcome.state, outcome.reply
        raise AssertionError("a missing run is refused")

    assert asyncio.run(main()) == ("completed", "Two.")


def test_raise_for_error_turns_a_failed_outcome_into_its_exception() -> None:
    error = ModelCallError("HTTP 503", model="m", reason="status", retryable=True, retry_after=2)
    agent = Agent(ScriptedModel().fail(error).text("Back."))
    agent.start()
    failed = agent.submit("Hi")
    with pytest.raises(TurnFailedError, match="ModelCallError: HTTP 503") as caught:
        failed.raise_for_error()
    assert (caught.value.reason, caught.value.error_type) == ("error", "ModelCallError")
    assert (caught.value.retryable, caught.value.retry_after) == (True, 2.0)
    done = agent.submit("Again")
    assert done.raise_for_error() is done


def test_a_cancelled_turn_raises_too_without_an_error_type() -> None:
    agent = Agent(ScriptedModel().tool_call("refund", order="A"), [refund])
    agent.start("Refund")
    cancelled = agent.cancel()
    with pytest.raises(TurnFailedError, match="reason 'cancelled'") as caught:
        cancelled.raise_for_error()
    assert caught.value.error_type is None


def test_what_the_stream_example_needs_is_importable_from_the_top() -> None:
    assert agentfsm.Delta is agentfsm.agent.Delta
    assert agentfsm.ModelSettings.__module__ == "agentfsm.llm.settings"


@pytest.mark.parametrize(
    ("arguments", "parsed"),
    [('{"order": "A-7"}', {"order": "A-7"}), ("", {}), ("{}", {})],
)
def test_a_pending_calls_arguments_are_a_dict_too(arguments: str, parsed: object) -> None:
    assert ToolCall(id="c", name="refund", arguments=arguments).parsed_arguments == parsed


@pytest.mark.parametrize(
    ("arguments", "says"), [("{oops", "not JSON"), ("[1]", "not a JSON object")]
)
def test_arguments_that_are_no_json_object_say_so(arguments: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        _ = ToolCall(id="c", name="refund", arguments=arguments).parsed_arguments
