"""End to end: OpenAIResponsesModel through the real `openai` client, over HTTP on loopback.

The same faults as the chat completions path: 429 with Retry-After, 5xx, a stream cut mid-way
(and before its first event), malformed JSON; waits go to a fake sleep.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel

from agentfsm import Agent, Delta, ToolCall, tool
from agentfsm.errors import ModelSettingsError
from agentfsm.llm import OpenAIResponsesModel, RetryPolicy, Usage, resolve_model
from agentfsm.testing import (
    ErrorResponse,
    LoopbackOpenAIServer,
    MalformedBody,
    MalformedChunk,
    Reply,
    Step,
    TruncatedStream,
)

WAITS: list[float] = []


async def fake_sleep(seconds: float) -> None:
    WAITS.append(seconds)


@tool
def weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


OSLO = ToolCall(id="call_1", name="weather", arguments=json.dumps({"city": "Oslo"}))


def model(
    server: LoopbackOpenAIServer, *, stream: bool, structured: bool = False
) -> OpenAIResponsesModel:
    return OpenAIResponsesModel(
        "gpt-test",
        structured_output=structured,
        base_url=server.url,
        api_key="test",
        stream=stream,
        sleep=fake_sleep,
        retry=RetryPolicy(max_attempts=3, random=lambda: 0.0),
    )


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_tool_round_and_the_answer_over_the_responses_api(stream: bool) -> None:
    usage = Usage(
        prompt_tokens=12,
        completion_tokens=4,
        total_tokens=16,
        cache_read_tokens=5,
        reasoning_tokens=2,
    )
    with LoopbackOpenAIServer([Reply(tool_calls=(OSLO,)), Reply("Sunny.", usage=usage)]) as server:
        agent = Agent(model(server, stream=stream), [weather], system_prompt="Be brief.")
        outcome = agent.start("Weather in Oslo?", settings={"temperature": 0.1, "max_tokens": 50})
        first, second = (request.json for request in server.requests)
    assert (outcome.state, outcome.reply) == ("completed", "Sunny.")
    assert all(r.path == "/v1/responses" for r in server.requests)
    assert first["store"] is False
    assert "previous_response_id" not in second  # the run's log is the history
    assert (first["temperature"], first["max_output_tokens"]) == (0.1, 50)
    assert first["tools"][0]["name"] == "weather"
    assert second["input"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Oslo?"},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "weather",
            "arguments": OSLO.arguments,
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny in Oslo"},
    ]
    assert agent.trace[-1].usage == usage  # the cached and reasoning tokens too
    calls = [entry for entry in agent.trace if entry.kind == "llm_call"]
    assert [entry.response_id for entry in calls] == ["resp_1", "resp_2"]


FAULTS: list[tuple[Step, bool, str]] = [
    (ErrorResponse(429, retry_after="2"), False, "RateLimitError"),
    (ErrorResponse(503), True, "InternalServerError"),
    (TruncatedStream(Reply("It is sun")), True, "ModelResponseError"),
    (TruncatedStream(at="start"), True, "ModelResponseError"),
    (MalformedBody(), False, "ModelResponseError"),
    (MalformedChunk(Reply("It is sunny")), True, "ModelResponseError"),
]


@pytest.mark.parametrize(
    ("fault", "stream", "error_type"), FAULTS, ids=[f"{f[2]}-{f[1]}" for f in FAULTS]
)
def test_each_fault_is_retried_and_the_whole_answer_taken(
    fault: Step, stream: bool, error_type: str
) -> None:
    WAITS.clear()
    with LoopbackOpenAIServer([fault, Reply("Whole answer.")]) as server:
        agent = Agent(model(server, stream=stream))
        outcome = agent.start("Hi")
    assert outcome.reply == "Whole answer."
    retries = [entry for entry in agent.trace if entry.kind == "llm_retry"]
    assert [entry.error_type for entry in retries] == [error_type]
    assert ([2.0] if error_type == "RateLimitError" else [0.5]) == WAITS


def test_an_answer_cut_every_time_fails_the_turn_after_the_bounded_attempts() -> None:
    with LoopbackOpenAIServer([TruncatedStream(Reply("cut"))] * 3) as server:
        outcome = Agent(model(server, stream=True)).start("Hi")
    assert (outcome.state, outcome.error.type) == ("failed", "ModelResponseError")
    assert "response.completed" in outcome.error.message


def test_the_stream_tells_text_and_tool_argument_deltas() -> None:
    with LoopbackOpenAIServer([Reply(tool_calls=(OSLO,)), Reply("It is sunny.")]) as server:
        agent = Agent(model(server, stream=True), [weather])
        agent.start()

        async def watch() -> list[Delta]:
            return [item async for item in agent.stream("Oslo?") if isinstance(item, Delta)]

        deltas = asyncio.run(watch())
    arguments = "".join(d.text for d in deltas if d.kind == "tool_call")
    assert arguments == OSLO.arguments
    assert [d.name for d in deltas if d.name] == ["weather"]
    assert "".join(d.text for d in deltas if d.kind == "text") == "It is sunny."


class Verdict(BaseModel):
    ok: bool


def test_structured_output_goes_as_text_format() -> None:
    with LoopbackOpenAIServer([Reply('{"ok": true}')]) as server:
        agent = Agent(model(server, stream=False, structured=True), output_type=Verdict)
        outcome = agent.start("Is it ok?")
        sent = server.requests[0].json
    assert outcome.output == Verdict(ok=True)
    assert sent["text"]["format"]["type"] == "json_schema"
    assert sent["text"]["format"]["schema"]["properties"] == {
        "ok": {"title": "Ok", "type": "boolean"}
    }


@pytest.mark.parametrize("setting", [{"stop": "END"}, {"seed": 1}])
def test_settings_the_responses_api_has_not_are_refused(setting: dict[str, object]) -> None:
    with LoopbackOpenAIServer() as server, pytest.raises(ModelSettingsError, match="Responses"):
        Agent(model(server, stream=False), settings=setting)


def test_the_length_finish_is_an_unusable_answer() -> None:
    with LoopbackOpenAIServer([Reply("cut", finish_reason="length")]) as server:
        outcome = Agent(model(server, stream=True)).start("Hi")
    assert (outcome.state, outcome.error.type) == ("failed", "ModelResponseError")
    assert "token limit" in outcome.error.message


def test_the_model_string_names_the_responses_api(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    made = resolve_model("openai-responses:gpt-5")
    assert isinstance(made, OpenAIResponsesModel)
    assert made.name == "gpt-5"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_reasoning_models_reasoning_goes_back_before_the_calls_it_led_to(stream: bool) -> None:
    with LoopbackOpenAIServer([Reply(tool_calls=(OSLO,)), Reply("Sunny.")]) as server:
        reasoner = OpenAIResponsesModel(
            "o4-mini", base_url=server.url, api_key="test", stream=stream, sleep=fake_sleep
        )
        Agent(reasoner, [weather]).start("Weather in Oslo?")
        first, second = (request.json for request in server.requests)
    assert first["include"] == ["reasoning.encrypted_content"]
    kinds = [item.get("type", item.get("role")) for item in second["input"]]
    assert kinds == ["user", "reasoning", "function_call", "function_call_output"]
    assert second["input"][1]["encrypted_content"] == "encrypted-1"


def test_a_model_that_does_not_reason_asks_for_no_reasoning_items() -> None:
    with LoopbackOpenAIServer([Reply("Hi.")]) as server:
        Agent(model(server, stream=False)).start("Hi")
        sent = server.requests[0].json
    assert "include" not in sent


def test_a_retry_after_longer_than_allowed_fails_at_once_carrying_the_wait() -> None:
    WAITS.clear()
    with LoopbackOpenAIServer([ErrorResponse(429, retry_after="120")]) as server:
        outcome = Agent(model(server, stream=False)).start("Hi")
        sent = len(server.requests)
    assert (outcome.state, outcome.error.type) == ("failed", "ModelCallError")
    assert (outcome.error.retryable, outcome.error.retry_after) == (True, 120.0)
    assert (sent, WAITS) == (1, [])


def test_a_request_the_server_refuses_is_not_retried() -> None:
    with LoopbackOpenAIServer([ErrorResponse(400, message="bad request")]) as server:
        outcome = Agent(model(server, stream=True)).start("Hi")
        sent = len(server.requests)
    assert (outcome.state, outcome.error.retryable, sent) == ("failed", False, 1)
    assert "bad request" in outcome.error.message
