"""Issue 17, part 6: why a turn failed, on its outcome and on the ``on_error`` hook context."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentfsm import Agent, ScriptedModel, SQLiteStore
from agentfsm.errors import HookFailedError, ModelCallError, ModelResponseError
from agentfsm.tools import ErrorDetails, HookContext

RUN_ID = "run-errors"


def _rate_limited() -> ModelCallError:
    return ModelCallError(
        "HTTP 429: slow down",
        model="scripted",
        reason="http_status",
        status_code=429,
        retryable=True,
        retry_after=30.0,
    )


def test_a_failed_model_call_is_on_the_outcome_and_on_error_gets_it() -> None:
    seen: list[tuple[ErrorDetails | None, object, object]] = []
    agent = Agent(ScriptedModel().fail(_rate_limited()))

    @agent.on("on_error")
    def note(context: HookContext) -> None:
        seen.append((context.error, context.pending_tool, context.result))

    agent.start()
    outcome = agent.submit("hi")

    expected = ErrorDetails("ModelCallError", "HTTP 429: slow down", True, 30.0)
    assert (outcome.state, outcome.reason, outcome.error) == ("failed", "error", expected)
    assert seen == [(expected, None, None)]
    assert agent.outcome().error == expected


def test_a_model_error_without_retry_information_is_not_retryable() -> None:
    error = ModelResponseError("cut off", model="scripted", reason="length")
    agent = Agent(ScriptedModel().fail(error))
    agent.start()
    assert agent.submit("hi").error == ErrorDetails("ModelResponseError", "cut off")


def test_a_failed_tool_call_is_on_the_hook_context_and_the_turn_goes_on() -> None:
    def lookup(city: str) -> str:
        """Look a city up."""
        raise ValueError(f"no such city: {city}")

    seen: list[ErrorDetails | None] = []
    agent = Agent(ScriptedModel().tool_call("lookup", city="Atlantis").text("Sorry."), [lookup])
    agent.on("on_error")(lambda context: seen.append(context.error))
    agent.start()
    outcome = agent.submit("find Atlantis")

    assert seen == [ErrorDetails("ValueError", "no such city: Atlantis")]
    assert (outcome.state, outcome.reply, outcome.error) == ("completed", "Sorry.", None)


def test_a_failing_hook_is_the_error_of_the_turn() -> None:
    agent = Agent(ScriptedModel().text("never"))

    @agent.on("before_llm")
    def broken(context: HookContext) -> None:
        raise RuntimeError("the hook broke")

    agent.start()
    with pytest.raises(HookFailedError):
        agent.submit("hi")
    error = agent.outcome().error
    assert error is not None
    assert (error.type, error.retryable, error.retry_after) == ("HookFailedError", False, None)
    assert "the hook broke" in error.message


def test_a_restored_failed_run_reads_its_error_from_its_fail_event(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "runs.db") as store:
        first = Agent(ScriptedModel().fail(_rate_limited()), store=store, run_id=RUN_ID)
        first.start()
        failed = first.submit("hi").error

    with SQLiteStore(tmp_path / "runs.db") as store:
        again = Agent(ScriptedModel().text("Back."), store=store, run_id=RUN_ID)
        assert failed is not None
        assert again.outcome().error == failed
        again.start()
        outcome = again.submit("retry")
        assert (outcome.state, outcome.error) == ("completed", None)


def test_the_error_is_only_on_the_outcome_of_a_turn_that_failed_with_an_error() -> None:
    agent = Agent(ScriptedModel().fail(_rate_limited()).text("Fine now."))
    agent.start()
    assert agent.submit("hi").error is not None
    assert agent.submit("again").error is None
    cancelled = Agent(ScriptedModel().tool_call("ask_user", question="Which city?"), ask_user=True)
    cancelled.start()
    cancelled.submit("book")
    assert (cancelled.cancel().reason, cancelled.outcome().error) == ("cancelled", None)


def test_error_details_read_what_an_exception_and_an_event_say() -> None:
    class OddError(Exception):
        retryable = "yes"  # not a bool: not taken
        retry_after = True  # a bool is not a number of seconds

    assert ErrorDetails.of(OddError()) == ErrorDetails("OddError", "OddError")
    leaky = ValueError("GET https://user:hunter2@example.com?api_key=abc failed")
    assert ErrorDetails.of(leaky).message == "GET https://***@example.com?api_key=*** failed"
    details = ErrorDetails("ModelCallError", "HTTP 503", True, 2.5)
    assert ErrorDetails.of_event(details.event_data()) == details
    assert ErrorDetails("E", "m").event_data() == {"error_type": "E", "message": "m"}
    assert ErrorDetails.of_event({"retry_after": 3}) == ErrorDetails("Error", "", False, 3.0)
