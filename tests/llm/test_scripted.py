"""ScriptedModel: steps replayed in order, every call recorded, a clear end of script."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

import pytest

from agentfsm.errors import ModelCallError, ModelResponseError
from agentfsm.llm import (
    FinishReason,
    Model,
    ModelResponse,
    RetryNotice,
    ScriptedModel,
    ScriptedRequest,
    Usage,
)
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message, ToolCall
from tests.llm.conftest import WEATHER_TOOL

ASK = [Message.user("Weather in Paris?")]


def complete(
    model: ScriptedModel,
    messages: Sequence[Message] = ASK,
    tools: Sequence[JSONObject] = (),
    notices: list[RetryNotice] | None = None,
) -> ModelResponse:
    listener = notices.append if notices is not None else None
    return asyncio.run(model.complete(messages, tools, on_retry=listener))


def test_tool_calls_then_an_answer_in_one_line() -> None:
    model = ScriptedModel().tool_call("get_weather", city="Paris").text("Sunny.")

    first, second = complete(model), complete(model)

    assert first.tool_calls == (
        ToolCall(id="call_1", name="get_weather", arguments='{"city": "Paris"}'),
    )
    assert first.finish_reason is FinishReason.TOOL_CALLS
    assert (second.content, second.tool_calls, second.finish_reason) == (
        "Sunny.",
        (),
        FinishReason.STOP,
    )
    assert model.remaining == 0


def test_call_ids_count_up_across_the_whole_script() -> None:
    model = (
        ScriptedModel()
        .tool_calls(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"}))
        .tool_call("get_time")
    )

    first, second = complete(model), complete(model)

    assert [c.id for c in first.tool_calls] == ["call_1", "call_2"]
    assert [json.loads(c.arguments) for c in first.tool_calls] == [
        {"city": "Paris"},
        {"city": "Rome"},
    ]
    assert second.tool_calls == (ToolCall(id="call_3", name="get_time", arguments="{}"),)


def test_arguments_given_as_text_are_sent_as_is() -> None:
    model = ScriptedModel().tool_calls(("get_weather", '{"city": '), content="Checking.")

    response = complete(model)

    assert response.tool_calls[0].arguments == '{"city": '
    assert response.content == "Checking."


def test_every_call_is_recorded_with_its_messages_and_tools() -> None:
    model = ScriptedModel(["one", "two"])
    later = [*ASK, Message.assistant("one"), Message.user("And Rome?")]

    complete(model, ASK, [WEATHER_TOOL])
    complete(model, later)

    assert model.requests == [
        ScriptedRequest(tuple(ASK), (WEATHER_TOOL,)),
        ScriptedRequest(tuple(later), ()),
    ]
    assert model.requests[0].tool_names == ("get_weather",)


def test_constructor_steps_take_responses_text_errors_and_callables() -> None:
    usage = Usage(prompt_tokens=1, completion_tokens=1, total_tokens=2)
    given = ModelResponse(content="given", usage=usage)
    refused = ModelCallError("refused", model="scripted", reason="status", status_code=400)

    def computed(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
        return ModelResponse(content=f"{len(messages)} messages, {len(tools)} tools")

    async def awaited(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
        await asyncio.sleep(0)
        return ModelResponse(content="awaited")

    model = ScriptedModel([given, "plain", refused, computed, awaited])

    assert complete(model) is given
    assert complete(model).content == "plain"
    with pytest.raises(ModelCallError) as caught:
        complete(model)
    assert caught.value is refused
    assert complete(model, tools=[WEATHER_TOOL]).content == "1 messages, 1 tools"
    assert complete(model).content == "awaited"


def test_the_builder_appends_every_kind_of_step() -> None:
    response = ModelResponse(content="r")
    model = (
        ScriptedModel(name="mine")
        .respond(response)
        .fail(TimeoutError("slow"))
        .reply_with(lambda messages, tools: ModelResponse(content=messages[-1].content))
        .text("t", usage=Usage(total_tokens=3))
    )

    assert model.remaining == 4
    assert complete(model) is response
    with pytest.raises(TimeoutError, match="slow"):
        complete(model)
    assert complete(model).content == "Weather in Paris?"
    last = complete(model)
    assert (last.content, last.model, last.usage) == ("t", "mine", Usage(total_tokens=3))


def test_retries_are_reported_then_the_same_call_goes_on() -> None:
    model = ScriptedModel().retry().retry(status_code=503, wait=2.0).text("ok").retry().text("2")
    notices: list[RetryNotice] = []

    first = complete(model, notices=notices)
    second = complete(model, notices=notices)

    assert (first.content, second.content) == ("ok", "2")
    assert [(n.attempt, n.status_code, n.wait) for n in notices] == [
        (1, 429, 0.0),
        (2, 503, 2.0),
        (1, 429, 0.0),
    ]
    assert len(model.requests) == 2


def test_retries_need_no_listener() -> None:
    assert complete(ScriptedModel().retry().text("ok")).content == "ok"


def test_running_out_of_script_is_a_clear_error() -> None:
    model = ScriptedModel(["one", "two"], name="tiny")
    complete(model)
    complete(model)

    with pytest.raises(ModelResponseError) as caught:
        complete(model)

    error = caught.value
    assert (error.reason, error.model) == ("script_exhausted", "tiny")
    assert str(error) == (
        "scripted model 'tiny' has no step left for call 3: its script had 2 step(s); "
        "script more, or give it a fallback"
    )
    assert len(model.requests) == 3


def test_a_fallback_answers_once_the_script_ran_out() -> None:
    model = ScriptedModel(["first"], fallback=lambda messages, tools: ModelResponse(content="fb"))

    assert [complete(model).content for _ in range(3)] == ["first", "fb", "fb"]


def test_it_is_a_model() -> None:
    model = ScriptedModel()

    assert isinstance(model, Model)
    assert model.name == "scripted"
    assert repr(ScriptedModel(["a"], name="x")) == "ScriptedModel(name='x', remaining=1)"


CITY = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
COUNT = {
    "type": "function",
    "function": {
        "name": "count",
        "parameters": {
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
        },
    },
}


def test_the_demo_calls_a_tool_with_the_users_words_then_reports_the_result() -> None:
    model = ScriptedModel.demo()

    asked = complete(model, ASK, [COUNT, CITY])
    conversation = [*ASK, asked.to_message(), Message.tool("call_1", "Sunny, 21 °C")]
    answered = complete(model, conversation, [COUNT, CITY])

    assert asked.tool_calls == (
        ToolCall(id="call_1", name="get_weather", arguments='{"city": "Paris"}'),
    )
    assert answered.content == "Here is what I found: Sunny, 21 °C."
    assert (model.name, asked.model) == ("scripted:demo", "scripted:demo")


@pytest.mark.parametrize(
    ("said", "argument"),
    [("Weather in Paris?", "Paris"), ("paris", "paris"), ("Rome", "Rome"), ("", "")],
    ids=["capitalised-word", "no-capitals", "one-word", "nothing"],
)
def test_the_demo_argument_is_the_last_capitalised_word_or_the_whole_text(
    said: str, argument: str
) -> None:
    response = complete(ScriptedModel.demo(), [Message.user(said)], [CITY])

    assert json.loads(response.tool_calls[0].arguments) == {"city": argument}


def test_the_demo_numbers_its_calls_after_those_in_the_conversation() -> None:
    earlier = [
        Message.user("Weather in Paris?"),
        Message.assistant(None, (ToolCall(id="call_1", name="get_weather"),)),
        Message.tool("call_1", "Sunny"),
        Message.assistant("Sunny."),
        Message.user("And in Rome?"),
    ]

    response = complete(ScriptedModel.demo(), earlier, [CITY])

    assert response.tool_calls == (
        ToolCall(id="call_2", name="get_weather", arguments='{"city": "Rome"}'),
    )


@pytest.mark.parametrize(
    ("messages", "tools", "answer"),
    [
        (ASK, [], "You said: Weather in Paris?"),
        (ASK, [COUNT], "You said: Weather in Paris?"),
        (ASK, [{"type": "function"}], "You said: Weather in Paris?"),
        ([], [], "Hello! Ask me anything."),
    ],
    ids=["no-tools", "no-string-only-tool", "schema-without-function", "no-messages"],
)
def test_the_demo_answers_in_words_when_no_tool_fits(
    messages: list[Message], tools: list[JSONObject], answer: str
) -> None:
    response = complete(ScriptedModel.demo(), messages, tools)

    assert (response.content, response.tool_calls) == (answer, ())


def test_a_responder_that_returns_no_response_fails_the_call_naming_what_it_returned() -> None:
    """A model error (the turn fails as for any unusable response), not an AttributeError."""

    async def answers_a_dict(messages: Sequence[Message], tools: Sequence[JSONObject]) -> object:
        return {"content": "hi"}

    model = ScriptedModel().reply_with(lambda messages, tools: 42).reply_with(answers_a_dict)  # type: ignore[arg-type, return-value]
    for shown in ("42 (int)", "{'content': 'hi'} (dict)"):
        with pytest.raises(ModelResponseError) as caught:
            complete(model)
        assert caught.value.reason == "not_a_response"
        assert f"returned {shown}; a responder returns a ModelResponse" in str(caught.value)


def test_a_bad_step_is_refused_when_scripted_not_when_reached() -> None:
    with pytest.raises(TypeError, match=r"^steps\[1\] must be a script step"):
        ScriptedModel(["fine", 42])  # type: ignore[list-item]
    model = ScriptedModel(["fine"])
    for append, bad, name in (
        (model.respond, "text", "response"),
        (model.fail, ValueError, "error"),
        (model.reply_with, "text", "responder"),
    ):
        with pytest.raises(TypeError, match=f"^{name} must be "):
            append(bad)  # type: ignore[operator]
    assert model.remaining == 1  # nothing was appended
