"""End to end: the Agent with the real `openai` client, over HTTP, against a loopback server.

Every test runs the public API (`Agent`, `OpenAIModel`, `tool`) with real sockets on
127.0.0.1; waits between retries go to a fake sleep, so nothing really waits.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from agentfsm import Agent, Decision, Event, OpenAIModel, ToolCall, tool
from agentfsm.fsm.trace import LLMRetryTrace
from agentfsm.llm import RetryPolicy
from agentfsm.testing import (
    Disconnect,
    EmptyChoices,
    ErrorResponse,
    LoopbackOpenAIServer,
    MalformedBody,
    Reply,
    TruncatedStream,
)
from tests.agent.agent_support import assert_history_valid

RAN: list[str] = []


@tool
def weather(city: str) -> str:
    """Current weather for a city."""
    RAN.append(city)
    return f"sunny in {city}"


@tool(policy="require_approval")
def transfer(amount: int) -> str:
    """Move money."""
    RAN.append(f"transfer {amount}")
    return "transferred"


@tool(client_side=True)
def location() -> str:
    """The user's location, supplied by the application."""
    raise AssertionError("never runs")


def call(call_id: str, name: str, **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=json.dumps(arguments))


class Harness:
    """A loopback server, an OpenAIModel pointed at it, and an Agent using that model."""

    def __init__(self, server: LoopbackOpenAIServer) -> None:
        self.server = server
        self.waits: list[float] = []
        self.events: list[Any] = []

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)

    def agent(self, *, stream: bool = False, timeout: float = 5.0, **options: Any) -> Agent:
        model = OpenAIModel(
            "loopback-model",
            base_url=self.server.url,
            api_key="test-key",
            timeout=timeout,
            stream=stream,
            sleep=self.sleep,
            retry=RetryPolicy(max_attempts=3),
        )
        options.setdefault("ask_user", True)
        agent = Agent(
            model, [weather, transfer, location], listeners=[self.events.append], **options
        )
        agent.start()
        return agent


@pytest.fixture
def harness() -> Iterator[Harness]:
    RAN.clear()
    with LoopbackOpenAIServer() as server:
        yield Harness(server)


def test_tool_rounds_over_several_iterations_reach_the_answer(harness: Harness) -> None:
    harness.server.add(
        Reply(tool_calls=(call("a", "weather", city="Paris"), call("b", "weather", city="Rome")))
    )
    harness.server.add(Reply(tool_calls=(call("c", "weather", city="Oslo"),)))
    harness.server.add(Reply("Sunny everywhere."))
    agent = harness.agent(system_prompt="Be brief.")

    outcome = agent.submit("Weather in Paris, Rome and Oslo?")

    assert (outcome.state, outcome.reply, agent.iteration) == ("completed", "Sunny everywhere.", 3)
    assert RAN == ["Paris", "Rome", "Oslo"]
    sent = harness.server.requests
    assert len(sent) == 3
    assert [m["role"] for m in sent[1].messages] == ["system", "user", "assistant", "tool", "tool"]
    assert [m["tool_call_id"] for m in sent[1].messages[3:]] == ["a", "b"]
    assert {t["function"]["name"] for t in sent[0].tools} == {
        "weather",
        "transfer",
        "location",
        "ask_user",
    }
    assert_history_valid(agent.messages)
    agent.shutdown()


def test_iteration_cap_ends_the_turn_completed_but_incomplete(harness: Harness) -> None:
    for n in range(3):
        harness.server.add(Reply(tool_calls=(call(f"c{n}", "weather", city="Oslo"),)))
    agent = harness.agent(max_iterations=2)

    outcome = agent.submit("Keep checking")

    assert (outcome.state, outcome.reason) == ("completed", "max_iterations")
    assert "incomplete" in (outcome.reply or "")
    assert len(harness.server.requests) == 2
    agent.shutdown()


@pytest.mark.parametrize(
    ("decision", "ran", "said"),
    [("approve", ["transfer 5"], "transferred"), (Decision.deny("too much"), [], "too much")],
    ids=["approve", "deny"],
)
def test_approval_then_the_turn_goes_on(
    harness: Harness, decision: Any, ran: list[str], said: str
) -> None:
    harness.server.add(Reply(tool_calls=(call("t1", "transfer", amount=5),)))
    harness.server.add(Reply("Done."))
    agent = harness.agent()

    assert agent.submit("Send 5").state == "requires_action"
    assert len(harness.server.requests) == 1
    outcome = agent.resolve_action({"t1": decision})

    assert (outcome.state, RAN) == ("completed", ran)
    assert said in harness.server.requests[1].messages[-1]["content"]
    agent.shutdown()


def test_client_side_tool_and_ask_user_get_their_answers_from_the_application(
    harness: Harness,
) -> None:
    harness.server.add(Reply(tool_calls=(call("l1", "location"),)))
    harness.server.add(Reply(tool_calls=(call("q1", "ask_user", question="Which day?"),)))
    harness.server.add(Reply("Booked for Friday in Lyon."))
    agent = harness.agent()

    assert agent.submit("Book a table").state == "requires_action"
    asked = agent.resolve_action({"l1": Decision.output("Lyon")})
    assert (asked.state, asked.question) == ("input_required", "Which day?")
    outcome = agent.provide_input("Friday")

    assert outcome.reply == "Booked for Friday in Lyon."
    last_request = harness.server.requests[-1].messages
    assert [m.get("content") for m in last_request if m["role"] == "tool"] == ["Lyon", "Friday"]
    agent.shutdown()


def test_cancel_while_waiting_then_a_second_turn_sends_a_valid_history(harness: Harness) -> None:
    harness.server.add(Reply(tool_calls=(call("t1", "transfer", amount=9),)))
    harness.server.add(Reply("Fine, nothing sent."))
    agent = harness.agent()
    agent.submit("Send 9")

    assert agent.cancel().reason == "cancelled"
    outcome = agent.submit("Never mind")

    assert (outcome.state, outcome.reply, agent.turn) == ("completed", "Fine, nothing sent.", 2)
    history = harness.server.requests[-1].messages
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "user"]
    assert RAN == []
    agent.shutdown()


RECOVERED = {
    "429-retry-after": ([ErrorResponse(429, retry_after=2), Reply("ok")], 2, [2.0]),
    "503-then-500": ([ErrorResponse(503), ErrorResponse(500), Reply("ok")], 3, None),
    "408": ([ErrorResponse(408), Reply("ok")], 2, None),
    "409": ([ErrorResponse(409), Reply("ok")], 2, None),
    "dropped-connection": ([Disconnect(), Reply("ok")], 2, None),
}


@pytest.mark.parametrize(("script", "attempts", "waits"), RECOVERED.values(), ids=list(RECOVERED))
def test_transient_faults_are_retried_and_the_turn_completes(
    harness: Harness, script: list[Any], attempts: int, waits: list[float] | None
) -> None:
    for step in script:
        harness.server.add(step)
    agent = harness.agent()

    outcome = agent.submit("hi")

    assert (outcome.state, outcome.reply) == ("completed", "ok")
    assert len(harness.server.requests) == attempts
    retries = [t for t in agent.trace if isinstance(t, LLMRetryTrace)]
    assert [r.attempt for r in retries] == list(range(1, attempts))
    assert len(harness.waits) == attempts - 1
    if waits is not None:
        assert harness.waits == waits
    agent.shutdown()


FATAL = {
    "400": ([ErrorResponse(400)], 1),
    "401": ([ErrorResponse(401)], 1),
    "403": ([ErrorResponse(403)], 1),
    "404": ([ErrorResponse(404)], 1),
    "422": ([ErrorResponse(422)], 1),
    "500-every-time": ([ErrorResponse(500)] * 3, 3),
    "malformed-body": ([MalformedBody("not json")], None),
    "empty-choices": ([EmptyChoices()], None),
    "cut-off": ([Reply("half an ans", finish_reason="length")], None),
    "filtered": ([Reply("", finish_reason="content_filter")], None),
}


@pytest.mark.parametrize(("script", "attempts"), FATAL.values(), ids=list(FATAL))
def test_final_faults_fail_the_turn_and_leave_the_history_valid(
    harness: Harness, script: list[Any], attempts: int | None
) -> None:
    for step in script:
        harness.server.add(step)
    agent = harness.agent()

    outcome = agent.submit("hi")

    assert (outcome.state, outcome.reason, agent.loop_state) == ("failed", "error", "errored")
    if attempts is not None:
        assert len(harness.server.requests) == attempts
    assert [m.role for m in agent.messages] == ["user"]  # nothing half-answered was kept
    failing = [e for e in harness.events if isinstance(e, Event) and e.event == "fail"]
    assert failing[0].data["error_type"] in ("ModelCallError", "ModelResponseError")
    agent.shutdown()


def test_truncated_stream_is_an_error_never_an_answer(harness: Harness) -> None:
    for _ in range(3):
        harness.server.add(TruncatedStream(Reply("The answer is")))
    agent = harness.agent(stream=True)

    outcome = agent.submit("hi")

    assert (outcome.state, outcome.reason) == ("failed", "error")
    assert all(m.role != "assistant" for m in agent.messages)
    agent.shutdown()


def test_streamed_tool_calls_and_answer_complete_the_turn(harness: Harness) -> None:
    harness.server.add(Reply(tool_calls=(call("s1", "weather", city="Nice"),)))
    harness.server.add(Reply("Sunny in Nice."))
    agent = harness.agent(stream=True)

    outcome = agent.submit("Weather in Nice?")

    assert (outcome.reply, RAN) == ("Sunny in Nice.", ["Nice"])
    assert all(request.stream for request in harness.server.requests)
    agent.shutdown()


def test_read_timeout_is_retried(harness: Harness) -> None:
    harness.server.add(Reply("too slow", delay=0.5))
    harness.server.add(Reply("ok"))
    agent = harness.agent(timeout=0.1)

    outcome = agent.submit("hi")

    assert outcome.reply == "ok"
    assert [t.error_type for t in agent.trace if isinstance(t, LLMRetryTrace)] != []
    agent.shutdown()
