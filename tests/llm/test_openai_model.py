"""OpenAIModel end to end: the real openai client against the loopback server."""

from __future__ import annotations

import asyncio
import email.utils
import ssl
import time
from typing import Any

import openai
import pytest

from agentfsm.errors import ModelCallError, ModelConfigError, ModelResponseError
from agentfsm.llm import FinishReason, OpenAIModel, RetryPolicy, Usage
from agentfsm.states.messages import Message, ToolCall
from agentfsm.testing import (
    Disconnect,
    EmptyChoices,
    ErrorResponse,
    Reply,
    Step,
)
from tests.llm.conftest import API_KEY, QUESTION, WEATHER_TOOL, Harness

USAGE = Usage(prompt_tokens=12, completion_tokens=5, total_tokens=17)
PARIS = ToolCall(id="call_a", name="get_weather", arguments='{"city": "Paris"}')
RAW_CALLS = (
    PARIS,
    ToolCall(id="call_b", name="get_weather", arguments='{"city": "Ro'),  # not JSON
    ToolCall(id="call_c", name="no_such_tool", arguments="{}"),
)
STREAMING = pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])


@STREAMING
def test_a_text_answer_is_returned_with_its_usage(harness: Harness, stream: bool) -> None:
    harness.server.add(Reply("Sunny in Paris.", usage=USAGE))

    response = harness.complete(stream=stream)

    assert response.content == "Sunny in Paris."
    assert response.tool_calls == ()
    assert response.finish_reason is FinishReason.STOP
    assert response.usage == USAGE
    assert response.model == "gpt-test"
    (request,) = harness.server.requests
    assert request.messages == [message.to_openai() for message in QUESTION]
    assert "tools" not in request.json
    assert request.json["model"] == "gpt-test"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.stream is stream


@STREAMING
def test_tool_calls_are_passed_through_exactly_as_sent(harness: Harness, stream: bool) -> None:
    harness.server.add(Reply("Let me look.", tool_calls=RAW_CALLS, usage=USAGE))

    response = harness.complete(tools=[WEATHER_TOOL], stream=stream)

    assert response.tool_calls == RAW_CALLS
    assert response.content == "Let me look."
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.usage == USAGE
    assert harness.server.requests[0].tools == [WEATHER_TOOL]


@STREAMING
def test_tool_calls_without_text_have_no_content(harness: Harness, stream: bool) -> None:
    harness.server.add(Reply(tool_calls=(PARIS,)))

    response = harness.complete(tools=[WEATHER_TOOL], stream=stream)

    assert (response.content, response.tool_calls) == (None, (PARIS,))


@STREAMING
def test_the_response_id_and_cached_and_reasoning_tokens_are_kept(
    harness: Harness, stream: bool
) -> None:
    detailed = Usage(
        prompt_tokens=12,
        completion_tokens=5,
        total_tokens=17,
        cache_read_tokens=8,
        reasoning_tokens=3,
    )
    harness.server.add(Reply("Sunny.", usage=detailed))
    harness.server.add(Reply("Still sunny.", usage=USAGE))

    first = harness.complete(stream=stream)
    second = harness.complete(stream=stream)

    assert (first.usage, first.id) == (detailed, "chatcmpl-loopback-1")
    assert (second.usage, second.id) == (USAGE, "chatcmpl-loopback-2")  # none: not reported
    assert second.usage is not None
    assert second.usage.cache_read_tokens is None


def test_a_stream_asks_for_usage_and_is_assembled_from_many_chunks(harness: Harness) -> None:
    long_arguments = '{"city": "Paris", "unit": "celsius", "days": 3}'
    call = ToolCall(id="call_1", name="get_weather", arguments=long_arguments)
    harness.server.add(Reply("It is sunny and warm today.", tool_calls=(call,), usage=USAGE))

    response = harness.complete(tools=[WEATHER_TOOL], stream=True)

    assert response.content == "It is sunny and warm today."
    assert response.tool_calls == (call,)
    assert response.usage == USAGE
    assert harness.server.requests[0].json["stream_options"] == {"include_usage": True}


def test_the_whole_conversation_is_sent_in_the_chat_format(harness: Harness) -> None:
    conversation = [
        *QUESTION,
        Message.assistant(None, (PARIS,)),
        Message.tool("call_a", '{"sky": "clear"}', name="get_weather"),
    ]
    harness.server.add(Reply("Clear skies."))

    harness.complete(conversation, [WEATHER_TOOL])

    assert harness.server.requests[0].messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {
            "role": "tool",
            "content": '{"sky": "clear"}',
            "tool_call_id": "call_a",
            "name": "get_weather",
        },
    ]


RETRYABLE = [
    pytest.param(408, "APIStatusError", id="408-request-timeout"),
    pytest.param(409, "ConflictError", id="409-conflict"),
    pytest.param(429, "RateLimitError", id="429-rate-limited"),
    pytest.param(500, "InternalServerError", id="500-server-error"),
    pytest.param(503, "InternalServerError", id="503-unavailable"),
]


@pytest.mark.parametrize(("status", "error_type"), RETRYABLE)
@STREAMING
def test_a_transient_status_is_retried_until_it_succeeds(
    harness: Harness, status: int, error_type: str, stream: bool
) -> None:
    harness.server.add(ErrorResponse(status), ErrorResponse(status), Reply("Finally."))

    response = harness.complete(stream=stream)

    assert response.content == "Finally."
    assert len(harness.server.requests) == 3
    assert [(n.attempt, n.status_code, n.error_type) for n in harness.notices] == [
        (1, status, error_type),
        (2, status, error_type),
    ]
    assert harness.waits == [0.5, 1.0]
    assert [n.wait for n in harness.notices] == harness.waits
    assert all(f"HTTP {status}" in n.message for n in harness.notices)


RETRY_AFTER = [
    pytest.param({"Retry-After": "2"}, 2.0, id="seconds"),
    pytest.param({"Retry-After": "0.25"}, 0.25, id="fractional-seconds"),
    pytest.param({"Retry-After": "-3"}, 0.0, id="negative-is-now"),
    pytest.param({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0, id="date-in-the-past"),
    pytest.param({"Retry-After": "soon"}, 0.5, id="unreadable-means-backoff"),
    pytest.param({"retry-after-ms": "1500", "Retry-After": "9"}, 1.5, id="milliseconds-first"),
]


@pytest.mark.parametrize(("headers", "expected_wait"), RETRY_AFTER)
def test_retry_after_is_waited_out_exactly(
    harness: Harness, headers: dict[str, str], expected_wait: float
) -> None:
    harness.server.add(ErrorResponse(429, headers=headers), Reply("ok"))

    harness.complete()

    assert harness.waits == [expected_wait]
    assert harness.notices[0].wait == expected_wait


def test_retry_after_as_a_near_date_waits_until_then(harness: Harness) -> None:
    then = email.utils.formatdate(time.time() + 10, usegmt=True)
    harness.server.add(ErrorResponse(503, retry_after=then), Reply("ok"))

    harness.complete()

    (wait,) = harness.waits
    assert 8.0 <= wait <= 10.0


NOT_RETRYABLE = [
    pytest.param(400, "BadRequestError", id="400-bad-request"),
    pytest.param(401, "AuthenticationError", id="401-unauthenticated"),
    pytest.param(403, "PermissionDeniedError", id="403-forbidden"),
    pytest.param(404, "NotFoundError", id="404-not-found"),
    pytest.param(422, "UnprocessableEntityError", id="422-unprocessable"),
]


@pytest.mark.parametrize(("status", "error_type"), NOT_RETRYABLE)
def test_a_refused_request_fails_after_exactly_one_attempt(
    harness: Harness, status: int, error_type: str
) -> None:
    harness.server.add(
        ErrorResponse(status, message="you may not", retry_after="1"), Reply("never sent")
    )

    with pytest.raises(ModelCallError) as caught:
        harness.complete()

    error = caught.value
    assert (error.status_code, error.attempts, error.retryable) == (status, 1, False)
    assert (error.reason, error.model) == ("status", "gpt-test")
    assert f"HTTP {status} ({error_type}): you may not" in str(error)
    assert "not retried" in str(error)
    assert isinstance(error.__cause__, openai.APIStatusError)
    assert len(harness.server.requests) == 1
    assert (harness.waits, harness.notices) == ([], [])


def test_attempts_are_bounded_and_the_last_failure_is_reported(harness: Harness) -> None:
    harness.server.add(*[ErrorResponse(503, message="overloaded")] * 5)

    with pytest.raises(ModelCallError) as caught:
        harness.complete()

    error = caught.value
    assert (error.status_code, error.attempts, error.retryable) == (503, 4, True)
    assert "transient, but all 4 attempt(s) allowed failed" in str(error)
    assert "overloaded" in str(error)
    assert len(harness.server.requests) == 4
    assert harness.waits == [0.5, 1.0, 2.0]
    assert [n.attempt for n in harness.notices] == [1, 2, 3]


def test_one_attempt_policy_never_retries(harness: Harness) -> None:
    harness.server.add(ErrorResponse(429), Reply("never sent"))

    with pytest.raises(ModelCallError) as caught:
        harness.complete(retry=RetryPolicy(max_attempts=1))

    assert (caught.value.attempts, caught.value.retryable) == (1, True)
    assert len(harness.server.requests) == 1


@STREAMING
def test_a_dropped_connection_is_retried(harness: Harness, stream: bool) -> None:
    harness.server.add(Disconnect(), Reply("Back."))

    response = harness.complete(stream=stream)

    assert response.content == "Back."
    assert len(harness.server.requests) == 2
    (notice,) = harness.notices
    assert (notice.error_type, notice.status_code) == ("APIConnectionError", None)


def test_connections_dropped_every_time_fail_as_a_connection_error(harness: Harness) -> None:
    harness.server.add(*[Disconnect()] * 4)

    with pytest.raises(ModelCallError) as caught:
        harness.complete()

    error = caught.value
    assert (error.reason, error.attempts, error.status_code) == ("connection", 4, None)
    assert error.retryable
    assert harness.server.url in str(error)


def test_a_read_timeout_is_retried(harness: Harness) -> None:
    harness.server.add(Reply("Too late.", delay=0.3), Reply("In time."))

    response = harness.complete(timeout=0.05)

    assert response.content == "In time."
    (notice,) = harness.notices
    assert (notice.error_type, notice.status_code) == ("APITimeoutError", None)


def test_read_timeouts_every_time_fail_as_a_timeout(harness: Harness) -> None:
    harness.server.add(Reply("late", delay=0.3), Reply("late", delay=0.3))

    with pytest.raises(ModelCallError) as caught:
        harness.complete(timeout=0.05, retry=RetryPolicy(max_attempts=2))

    assert (caught.value.reason, caught.value.attempts) == ("timeout", 2)


UNUSABLE: list[tuple[Step, bool, str]] = [
    (EmptyChoices(), False, "empty_choices"),
    (EmptyChoices(), True, "empty_choices"),
    (Reply("It is sun", finish_reason="length"), False, "length"),
    (Reply("It is sun", finish_reason="length"), True, "length"),
    (Reply(None, finish_reason="content_filter"), False, "content_filter"),
    (Reply(None, finish_reason="content_filter"), True, "content_filter"),
    (Reply("?", finish_reason="thinking"), False, "unknown_finish_reason"),
]


@pytest.mark.parametrize(
    ("step", "stream", "reason"),
    UNUSABLE,
    ids=[f"{type(s).__name__}-{r}-{'stream' if st else 'json'}" for s, st, r in UNUSABLE],
)
def test_an_unusable_response_is_an_error_and_is_not_retried(
    harness: Harness, step: Step, stream: bool, reason: str
) -> None:
    harness.server.add(step, Reply("never sent"))

    with pytest.raises(ModelResponseError) as caught:
        harness.complete(stream=stream)

    assert (caught.value.reason, caught.value.attempts) == (reason, 1)
    assert caught.value.model == "gpt-test"
    assert "gpt-test" in str(caught.value)
    assert len(harness.server.requests) == 1


def test_an_unusable_response_after_retries_counts_every_attempt(harness: Harness) -> None:
    harness.server.add(ErrorResponse(500), EmptyChoices())

    with pytest.raises(ModelResponseError) as caught:
        harness.complete()

    assert (caught.value.reason, caught.value.attempts) == ("empty_choices", 2)


def test_a_missing_api_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY") as caught:
        OpenAIModel("gpt-test")

    assert caught.value.spec == "gpt-test"


def test_the_api_key_comes_from_the_environment(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "from-the-environment")
    harness.server.add(Reply("ok"))
    model = OpenAIModel("gpt-test", base_url=harness.server.url)

    asyncio.run(model.complete(QUESTION, []))

    assert harness.server.requests[0].headers["authorization"] == "Bearer from-the-environment"


def test_a_given_client_is_used_with_its_own_retries_off(harness: Harness) -> None:
    harness.server.add(ErrorResponse(400), Reply("ok"))

    async def scenario() -> None:
        async with openai.AsyncOpenAI(
            api_key="own", base_url=harness.server.url, max_retries=5
        ) as client:
            model = OpenAIModel("gpt-test", client=client, sleep=harness.sleep)
            with pytest.raises(ModelCallError):
                await model.complete(QUESTION, [])
            assert (await model.complete(QUESTION, [])).content == "ok"

    asyncio.run(scenario())

    assert [r.headers["authorization"] for r in harness.server.requests] == ["Bearer own"] * 2


def test_a_retry_listener_is_optional(harness: Harness) -> None:
    harness.server.add(ErrorResponse(429), Reply("ok"))
    model = harness.model()

    response = asyncio.run(model.complete(QUESTION, []))

    assert response.content == "ok"
    assert harness.waits == [0.5]


def test_the_model_is_named_and_shown_without_its_key(harness: Harness) -> None:
    model = harness.model(stream=True)

    assert model.name == "gpt-test"
    assert repr(model) == f"OpenAIModel('gpt-test', base_url={harness.server.url!r}, stream=True)"
    assert API_KEY not in repr(model)
    assert repr(OpenAIModel("gpt-x", api_key=API_KEY)) == "OpenAIModel('gpt-x', stream=False)"


def test_every_call_opens_its_client_with_one_shared_tls_context(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Making a TLS context loads the whole CA store (50-100 ms of CPU): a client is opened
    # per call, so a context per call cost more than the call itself over loopback.
    contexts: list[object] = []

    class Recording(openai.DefaultAsyncHttpxClient):
        def __init__(self, **options: Any) -> None:
            contexts.append(options.get("verify"))
            super().__init__(**options)

    monkeypatch.setattr(openai, "DefaultAsyncHttpxClient", Recording)
    harness.server.add(Reply("one"), Reply("two"))

    answers = [harness.complete().content, harness.complete(stream=True).content]

    assert answers == ["one", "two"]
    assert len(contexts) == 2
    assert contexts[0] is contexts[1]
    shared = contexts[0]
    assert isinstance(shared, ssl.SSLContext)
    assert (shared.verify_mode, shared.check_hostname) == (ssl.CERT_REQUIRED, True)
