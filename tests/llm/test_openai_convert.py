"""Conversion of the openai client's objects into a ModelResponse: the edge cases."""

from __future__ import annotations

import json

import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from agentfsm.errors import ModelResponseError
from agentfsm.llm import FinishReason
from agentfsm.llm._openai_convert import Origin, StreamAssembly, from_completion
from agentfsm.llm.base import Usage
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import ToolCall

ORIGIN = Origin("gpt-test", attempt=2)


def completion(message: JSONObject, finish_reason: str | None = "stop") -> ChatCompletion:
    # Built as the client builds what it receives: without validation, the way a lax
    # compatible server's fields (ids and arguments left out) reach the conversion.
    return ChatCompletion.construct(
        id="c",
        object="chat.completion",
        created=0,
        model="gpt-test-2024",
        choices=[{"index": 0, "message": message, "finish_reason": finish_reason}],
    )


def function_call(call_id: str | None, name: str, arguments: str | None) -> JSONObject:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def chunk(*choices: JSONValue, usage: JSONObject | None = None) -> ChatCompletionChunk:
    return ChatCompletionChunk.construct(
        id="c",
        object="chat.completion.chunk",
        created=0,
        model="gpt-test-2024",
        choices=list(choices),
        usage=usage,
    )


def delta(
    content: JSONValue = None, index: int = 0, finish: str | None = None, **more: JSONValue
) -> JSONObject:
    return {"index": index, "delta": {"content": content, **more}, "finish_reason": finish}


def test_a_missing_finish_reason_of_a_whole_body_is_read_from_its_message() -> None:
    with_calls = completion(
        {"role": "assistant", "tool_calls": [function_call("a", "f", "{}")]}, None
    )
    text = completion({"role": "assistant", "content": "hi"}, None)

    assert from_completion(ORIGIN, with_calls).finish_reason is FinishReason.TOOL_CALLS
    assert from_completion(ORIGIN, text).finish_reason is FinishReason.STOP


def test_the_response_names_the_model_that_answered() -> None:
    response = from_completion(ORIGIN, completion({"role": "assistant", "content": "hi"}))

    assert (response.model, response.usage) == ("gpt-test-2024", None)


def test_responses_read_apart_share_their_tool_and_model_names() -> None:
    body = json.dumps(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-test-2024",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "tool_calls": [function_call("a", "lookup_weather", "{}")],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6},
        }
    )
    # each read as the client reads a body: its own new strings
    first, second = (
        from_completion(ORIGIN, ChatCompletion.construct(**json.loads(body))) for _ in range(2)
    )
    streamed = StreamAssembly(ORIGIN)
    opening = {"index": 0, "id": "a", "function": {"name": "lookup_weather", "arguments": "{}"}}
    for piece in (
        chunk(delta(tool_calls=[opening])),
        chunk(delta(finish="tool_calls")),
    ):
        streamed.add(piece)
    third = streamed.response()

    assert first == second
    assert first.usage == Usage(prompt_tokens=4, completion_tokens=2, total_tokens=6)
    assert (
        first.tool_calls
        == (ToolCall(id="a", name="lookup_weather", arguments="{}"),)
        == third.tool_calls
    )
    # a run keeps these names in each call, result and trace entry: one string each, shared
    assert first.model is second.model is third.model
    assert first.tool_calls[0].name is second.tool_calls[0].name is third.tool_calls[0].name


def test_calls_without_ids_get_stable_ones_and_missing_arguments_are_empty() -> None:
    message: JSONObject = {
        "role": "assistant",
        "tool_calls": [function_call(None, "f", None), function_call("", "g", '{"x": 1}')],
    }

    response = from_completion(ORIGIN, completion(message, "tool_calls"))

    assert response.tool_calls == (
        ToolCall(id="call_1", name="f", arguments=""),
        ToolCall(id="call_2", name="g", arguments='{"x": 1}'),
    )


def test_a_custom_tool_call_is_passed_through_with_its_input() -> None:
    custom: JSONObject = {"id": "k", "type": "custom", "custom": {"name": "grep", "input": "x"}}

    response = from_completion(
        ORIGIN, completion({"role": "assistant", "tool_calls": [custom]}, "tool_calls")
    )

    assert response.tool_calls == (ToolCall(id="k", name="grep", arguments="x"),)


def test_repeated_tool_call_ids_are_refused() -> None:
    calls = [function_call("same", "f", "{}"), function_call("same", "g", "{}")]

    with pytest.raises(ModelResponseError, match="repeat") as caught:
        from_completion(ORIGIN, completion({"role": "assistant", "tool_calls": calls}))

    assert (caught.value.reason, caught.value.attempts) == ("duplicate_tool_call_ids", 2)


def test_a_refusal_is_the_answer_when_there_is_no_content() -> None:
    message: JSONObject = {"role": "assistant", "content": None, "refusal": "I can't help."}

    assert from_completion(ORIGIN, completion(message)).content == "I can't help."


def test_the_legacy_function_call_finish_reason_means_tool_calls() -> None:
    response = from_completion(
        ORIGIN,
        completion(
            {"role": "assistant", "tool_calls": [function_call("a", "f", "{}")]}, "function_call"
        ),
    )

    assert response.finish_reason is FinishReason.TOOL_CALLS


def test_a_stream_keeps_only_the_first_choice_and_joins_name_pieces() -> None:
    assembly = StreamAssembly(ORIGIN)
    opening = {"index": 0, "id": "a", "function": {"name": "get_", "arguments": '{"ci'}}
    for piece in (
        chunk(delta("Hel"), delta("ignored", index=1)),
        chunk(delta("lo", tool_calls=[opening])),
        chunk(delta(tool_calls=[{"index": 0, "function": {"name": "weather"}}])),
        chunk(delta(tool_calls=[{"index": 0, "function": {"arguments": 'ty": "Rome"}'}}])),
        chunk(delta(finish="tool_calls")),
        chunk(usage={"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}),
    ):
        assembly.add(piece)

    response = assembly.response()

    assert response.content == "Hello"
    assert response.tool_calls == (
        ToolCall(id="a", name="get_weather", arguments='{"city": "Rome"}'),
    )
    assert response.usage is not None
    assert response.usage.total_tokens == 6


def test_calls_are_ordered_by_their_stream_index() -> None:
    assembly = StreamAssembly(ORIGIN)
    second = {"index": 1, "id": "b", "function": {"name": "g", "arguments": "{}"}}
    first = {"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}}
    assembly.add(chunk(delta(tool_calls=[second])))
    assembly.add(chunk(delta(tool_calls=[first], finish="tool_calls")))

    assert [call.id for call in assembly.response().tool_calls] == ["a", "b"]


def test_a_stream_without_a_finish_reason_says_how_far_it_got() -> None:
    assembly = StreamAssembly(ORIGIN)
    assembly.add(chunk(delta("It is")))
    assembly.add(chunk(delta(" sun")))

    with pytest.raises(ModelResponseError, match="after 2 chunks") as caught:
        assembly.response()

    assert caught.value.reason == "no_finish_reason"
