"""The loopback server on its own: the wire format of each step, recording, and shutdown."""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from agentfsm.llm import Usage
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import ToolCall
from agentfsm.testing import (
    Disconnect,
    EmptyChoices,
    ErrorResponse,
    LoopbackOpenAIServer,
    MalformedBody,
    Reply,
    TruncatedStream,
)

CALL = ToolCall(id="call_1", name="get_weather", arguments='{"city": "Paris", "days": 3}')
BODY: JSONObject = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
STREAM_BODY: JSONObject = {**BODY, "stream": True, "stream_options": {"include_usage": True}}


@pytest.fixture(autouse=True)
def no_thread_outlives_the_test() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    assert [thread for thread in threading.enumerate() if thread not in before] == []


@contextlib.contextmanager
def connection(server: LoopbackOpenAIServer) -> Iterator[http.client.HTTPConnection]:
    address = urlsplit(server.url)
    client = http.client.HTTPConnection(address.hostname or "", address.port, timeout=5)
    try:
        yield client
    finally:
        client.close()


def post(
    server: LoopbackOpenAIServer,
    body: JSONValue = BODY,
    path: str = "/v1/chat/completions",
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    with connection(server) as client:
        raw = body if isinstance(body, str) else json.dumps(body)
        client.request("POST", path, raw, {"Content-Type": "application/json", **(headers or {})})
        response = client.getresponse()
        return response.status, dict(response.getheaders()), response.read()


def events(payload: bytes) -> list[str]:
    """The data of each server-sent event."""
    return [block.removeprefix("data: ") for block in payload.decode().split("\n\n") if block]


def test_it_listens_on_the_loopback_address_only_with_an_ephemeral_port() -> None:
    with LoopbackOpenAIServer() as first, LoopbackOpenAIServer() as second:
        urls = [urlsplit(first.url), urlsplit(second.url)]

    assert [url.hostname for url in urls] == ["127.0.0.1", "127.0.0.1"]
    assert [url.path for url in urls] == ["/v1", "/v1"]
    assert urls[0].port != urls[1].port
    assert all(url.port for url in urls)


def test_it_records_each_request_body_and_headers() -> None:
    body: JSONObject = {**BODY, "tools": [{"type": "function"}], "stream": False}
    with LoopbackOpenAIServer([Reply("one")]) as server:
        post(server, body, headers={"X-Trace": "abc"})
        (request,) = server.requests

    assert (request.method, request.path, request.body) == ("POST", "/v1/chat/completions", body)
    assert request.headers["x-trace"] == "abc"
    assert request.messages == [{"role": "user", "content": "hi"}]
    assert request.tools == [{"type": "function"}]
    assert request.stream is False


def test_a_reply_is_a_chat_completion() -> None:
    usage = Usage(prompt_tokens=3, completion_tokens=2, total_tokens=5)
    with LoopbackOpenAIServer([Reply("Hi!", tool_calls=(CALL,), usage=usage)]) as server:
        status, headers, payload = post(server)

    completion = json.loads(payload)
    assert (status, headers["Content-Type"]) == (200, "application/json")
    assert completion["model"] == "m"
    assert completion["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Hi!", "tool_calls": [CALL.to_openai()]},
            "finish_reason": "tool_calls",
            "logprobs": None,
        }
    ]
    assert completion["usage"] == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


def test_a_streamed_reply_arrives_in_pieces_then_finishes_then_says_done() -> None:
    usage = Usage(prompt_tokens=3, completion_tokens=2, total_tokens=5)
    with LoopbackOpenAIServer([Reply("It is sunny", tool_calls=(CALL,), usage=usage)]) as server:
        status, headers, payload = post(server, STREAM_BODY)

    data = events(payload)
    assert (status, headers["Content-Type"]) == (200, "text/event-stream")
    assert data[-1] == "[DONE]"
    chunks = [json.loads(item) for item in data[:-1]]
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("content") or "" for d in deltas) == "It is sunny"
    pieces = [d["tool_calls"][0]["function"]["arguments"] for d in deltas if "tool_calls" in d]
    assert len(pieces) > 2
    assert "".join(pieces) == CALL.arguments
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "tool_calls"
    assert (chunks[-1]["choices"], chunks[-1]["usage"]) == (
        [],
        usage.model_dump(exclude_none=True),
    )


def test_a_stream_reports_usage_only_when_asked() -> None:
    usage = Usage(prompt_tokens=1, completion_tokens=1, total_tokens=2)
    with LoopbackOpenAIServer([Reply("ok", usage=usage)]) as server:
        _, _, payload = post(server, {**BODY, "stream": True})

    assert all("usage" not in json.loads(item) for item in events(payload)[:-1])


def test_an_error_response_has_its_status_retry_after_and_an_error_body() -> None:
    step = ErrorResponse(429, retry_after="3", message="slow down", headers={"X-Extra": "1"})
    with LoopbackOpenAIServer([step]) as server:
        status, headers, payload = post(server)

    assert (status, headers["Retry-After"], headers["X-Extra"]) == (429, "3", "1")
    assert json.loads(payload)["error"]["message"] == "slow down"


def test_a_disconnect_sends_nothing() -> None:
    with (
        LoopbackOpenAIServer([Disconnect()]) as server,
        pytest.raises(http.client.RemoteDisconnected),
    ):
        post(server)


def test_a_truncated_stream_ends_without_a_finish_reason_or_done() -> None:
    with LoopbackOpenAIServer([TruncatedStream(Reply("cut short"))]) as server:
        status, headers, payload = post(server, STREAM_BODY)

    data = events(payload)
    assert (status, headers["Connection"]) == (200, "close")
    assert "[DONE]" not in data
    chunks = [json.loads(item) for item in data]
    assert {c["choices"][0]["finish_reason"] for c in chunks} == {None}
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == "cut short"


def test_a_truncated_plain_reply_is_half_a_body() -> None:
    with LoopbackOpenAIServer([TruncatedStream()]) as server:
        _, _, payload = post(server)

    with pytest.raises(json.JSONDecodeError):
        json.loads(payload)


@pytest.mark.parametrize("body", [BODY, STREAM_BODY], ids=["json", "stream"])
def test_a_malformed_body_is_not_json(body: JSONObject) -> None:
    with LoopbackOpenAIServer([MalformedBody("{oops")]) as server:
        status, _, payload = post(server, body)

    assert status == 200
    assert payload.decode() in ("{oops", "data: {oops\n\n")


def test_empty_choices_are_empty() -> None:
    with LoopbackOpenAIServer([EmptyChoices(), EmptyChoices()]) as server:
        _, _, plain = post(server)
        _, _, streamed = post(server, STREAM_BODY)

    assert json.loads(plain)["choices"] == []
    assert events(streamed) == ["[DONE]"]


def test_a_request_past_the_script_is_refused_saying_how_many_steps_there_were() -> None:
    with LoopbackOpenAIServer([Reply("only one")]) as server:
        post(server)
        status, _, payload = post(server)

    assert status == 400
    assert "no scripted step left (1 were scripted)" in json.loads(payload)["error"]["message"]
    assert len(server.requests) == 2


def test_steps_added_later_are_served_in_order() -> None:
    with LoopbackOpenAIServer([Reply("first")]) as server:
        server.add(Reply("second"), ErrorResponse(500))
        assert server.remaining == 3
        answers = [post(server) for _ in range(3)]

    assert [json.loads(a[2]).get("choices", [{}])[0].get("message") for a in answers[:2]] == [
        {"role": "assistant", "content": "first"},
        {"role": "assistant", "content": "second"},
    ]
    assert answers[2][0] == 500
    assert server.remaining == 0


def test_another_path_is_not_found_and_uses_no_step() -> None:
    with LoopbackOpenAIServer([Reply("kept")]) as server:
        status, _, _ = post(server, path="/v1/embeddings")
        assert server.remaining == 1

    assert status == 404
    assert server.requests == []


def test_a_body_that_is_not_json_is_recorded_as_none() -> None:
    with LoopbackOpenAIServer([Reply("ok")]) as server:
        post(server, "not json")

    assert server.requests[0].body is None
    assert server.requests[0].messages == []


def test_stop_closes_idle_keep_alive_connections_and_joins_their_threads() -> None:
    server = LoopbackOpenAIServer([Reply("one")]).start()
    with connection(server) as client:
        client.request("POST", "/v1/chat/completions", json.dumps(BODY))
        client.getresponse().read()  # the connection stays open, its thread waiting

        started = time.perf_counter()
        server.stop()

        assert time.perf_counter() - started < 2.0


def test_stop_cuts_a_delayed_reply_short() -> None:
    server = LoopbackOpenAIServer([Reply("late", delay=30.0)]).start()
    outcome: list[object] = []

    def ask() -> None:
        try:
            outcome.append(post(server)[0])
        except (OSError, http.client.HTTPException) as error:
            outcome.append(error)

    asking = threading.Thread(target=ask)
    asking.start()
    while not server.requests:
        time.sleep(0.005)
    started = time.perf_counter()
    server.stop()
    asking.join(5.0)

    assert time.perf_counter() - started < 2.0
    assert len(outcome) == 1


def test_start_and_stop_are_guarded() -> None:
    server = LoopbackOpenAIServer()
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.url
    server.start()
    with pytest.raises(RuntimeError, match="already running"):
        server.start()
    server.stop()
    server.stop()  # idempotent
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.url
