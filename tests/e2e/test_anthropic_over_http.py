"""End to end: AnthropicModel through the real `anthropic` SDK, over HTTP on loopback.

The same faults as the chat completions path: 429 with Retry-After, 5xx (529 overloaded
too), a stream cut mid-way or before its first event, malformed JSON; waits go to a fake
sleep. stop_reason maps onto the run's outcomes; the system prompt and the cache's tokens
arrive where they belong.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel

from agentfsm import Agent, Delta, ToolCall, tool
from agentfsm.errors import ModelSettingsError
from agentfsm.llm import AnthropicModel, RetryPolicy, Usage, resolve_model
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


OSLO = ToolCall(id="toolu_1", name="weather", arguments=json.dumps({"city": "Oslo"}))


def model(server: LoopbackOpenAIServer, *, stream: bool) -> AnthropicModel:
    return AnthropicModel(
        "claude-test",
        base_url=server.url.removesuffix("/v1"),
        api_key="test",
        stream=stream,
        sleep=fake_sleep,
        retry=RetryPolicy(max_attempts=3, random=lambda: 0.0),
    )


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_tool_round_and_the_answer_over_the_messages_api(stream: bool) -> None:
    usage = Usage(prompt_tokens=12, completion_tokens=4, total_tokens=16)
    with LoopbackOpenAIServer([Reply(tool_calls=(OSLO,)), Reply("Sunny.", usage=usage)]) as server:
        agent = Agent(model(server, stream=stream), [weather], system_prompt="Be brief.")
        outcome = agent.start("Weather in Oslo?", settings={"temperature": 0.1, "stop": "END"})
        first, second = (request.json for request in server.requests)
        headers = server.requests[0].headers
    assert (outcome.state, outcome.reply) == ("completed", "Sunny.")
    assert all(r.path == "/v1/messages" for r in server.requests)
    assert "test" in (
        headers.get("x-api-key"),
        headers.get("authorization", "").removeprefix("Bearer "),
    )
    assert "anthropic-version" in headers
    assert first["system"] == "Be brief."
    assert (first["temperature"], first["stop_sequences"], first["max_tokens"]) == (
        0.1,
        ["END"],
        4096,
    )
    assert first["tools"] == [
        {
            "name": "weather",
            "description": "Current weather for a city.",
            "input_schema": first["tools"][0]["input_schema"],
        }
    ]
    assert second["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}}
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny in Oslo"}
            ],
        },
    ]
    recorded = agent.trace[-1].usage
    assert recorded is not None
    assert (recorded.prompt_tokens, recorded.completion_tokens) == (12, 4)
    assert (recorded.cache_creation_tokens, recorded.cache_read_tokens) == (0, 0)
    calls = [entry for entry in agent.trace if entry.kind == "llm_call"]
    assert [entry.response_id for entry in calls] == ["msg_1", "msg_2"]


FAULTS: list[tuple[Step, bool, str]] = [
    (ErrorResponse(429, retry_after="2"), False, "RateLimitError"),
    (ErrorResponse(503), True, "ServiceUnavailableError"),
    (ErrorResponse(529), False, "OverloadedError"),
    (TruncatedStream(Reply("It is sun")), True, "ModelResponseError"),
    (TruncatedStream(Reply("It is sunny."), at="finish"), True, "ModelResponseError"),
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
        outcome = Agent(model(server, stream=stream)).start("Hi")
    assert outcome.reply == "Whole answer."
    assert ([2.0] if error_type == "RateLimitError" else [0.5]) == WAITS


def test_the_retry_notice_names_the_sdks_error() -> None:
    with LoopbackOpenAIServer([ErrorResponse(529), Reply("Ok.")]) as server:
        agent = Agent(model(server, stream=False))
        agent.start("Hi")
    retries = [entry for entry in agent.trace if entry.kind == "llm_retry"]
    assert [(r.error_type, r.status_code) for r in retries] == [("OverloadedError", 529)]


@pytest.mark.parametrize(
    ("finish", "reason"),
    [("length", "cut off at the token limit"), ("content_filter", "withheld")],
)
def test_max_tokens_and_refusal_are_unusable_answers(finish: str, reason: str) -> None:
    with LoopbackOpenAIServer([Reply("cut", finish_reason=finish)]) as server:
        outcome = Agent(model(server, stream=True)).start("Hi")
    assert (outcome.state, outcome.error.type) == ("failed", "ModelResponseError")
    assert reason in outcome.error.message


def test_the_stream_tells_text_and_tool_input_deltas() -> None:
    with LoopbackOpenAIServer([Reply(tool_calls=(OSLO,)), Reply("It is sunny.")]) as server:
        agent = Agent(model(server, stream=True), [weather])
        agent.start()

        async def watch() -> list[Delta]:
            return [item async for item in agent.stream("Oslo?") if isinstance(item, Delta)]

        deltas = asyncio.run(watch())
    assert "".join(d.text for d in deltas if d.kind == "tool_call") == OSLO.arguments
    assert [d.name for d in deltas if d.name] == ["weather"]
    assert "".join(d.text for d in deltas if d.kind == "text") == "It is sunny."


class Verdict(BaseModel):
    ok: bool


def test_a_typed_agent_asks_through_the_final_answer_tool() -> None:
    answer = ToolCall(id="toolu_9", name="final_answer", arguments='{"ok": true}')
    with LoopbackOpenAIServer([Reply(tool_calls=(answer,))]) as server:
        outcome = Agent(model(server, stream=False), output_type=Verdict).start("Ok?")
        sent = server.requests[0].json
    assert outcome.output == Verdict(ok=True)
    assert [t["name"] for t in sent["tools"]] == ["final_answer"]


@pytest.mark.parametrize(
    ("setting", "field"),
    [
        ({"seed": 1}, "seed"),
        ({"reasoning_effort": "low"}, "reasoning_effort"),
        ({"temperature": 1.5}, "temperature"),
    ],
)
def test_settings_the_messages_api_has_not_are_refused(
    setting: dict[str, object], field: str
) -> None:
    with LoopbackOpenAIServer() as server, pytest.raises(ModelSettingsError) as caught:
        Agent(model(server, stream=False), settings=setting)
    assert caught.value.field == field


def test_tool_choice_and_parallel_calls_map_onto_anthropics_names() -> None:
    with LoopbackOpenAIServer([Reply(tool_calls=(OSLO,)), Reply("Ok.")]) as server:
        agent = Agent(model(server, stream=False), [weather])
        agent.start("Oslo", settings={"tool_choice": "required", "parallel_tool_calls": False})
        sent = server.requests[0].json
    assert sent["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}


def test_the_model_string_names_anthropic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    made = resolve_model("anthropic:claude-sonnet-4-5")
    assert isinstance(made, AnthropicModel)
    assert made.name == "claude-sonnet-4-5"


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
