"""Deltas from ScriptedModel(chunk_size=...) through the Agent, and their edge cases."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfsm import Agent, ModelResponse, ScriptedModel
from agentfsm.agent import Delta, StreamItem
from agentfsm.agent.deltas import takes_deltas
from agentfsm.llm import DeltaKind, ModelDelta, RetryListener
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message


def get_weather(city: str) -> str:
    """Weather in a city."""
    return f"sunny in {city}"


def run_stream(agent: Agent, text: str) -> list[StreamItem]:
    async def collect() -> list[StreamItem]:
        return [item async for item in agent.stream(text)]

    return asyncio.run(collect())


def deltas_of(items: Sequence[object]) -> list[Delta]:
    return [item for item in items if isinstance(item, Delta)]


@given(text=st.text(min_size=1, max_size=40), size=st.integers(1, 8))
def test_scripted_chunks_concatenate_to_the_stored_reply(text: str, size: int) -> None:
    agent = Agent(ScriptedModel(chunk_size=size).text(text))
    agent.start()

    deltas = deltas_of(run_stream(agent, "hi"))

    assert "".join(d.text for d in deltas) == agent.messages[-1].content == text
    assert all(0 < len(d.text) <= size for d in deltas)
    assert {(d.turn, d.iteration, d.kind) for d in deltas} == {(1, 1, DeltaKind.TEXT)}


def test_scripted_tool_call_pieces_carry_id_and_name_first() -> None:
    model = ScriptedModel(chunk_size=4).tool_call("get_weather", city="Bern").text("Sunny.")
    agent = Agent(model, [get_weather])
    agent.start()

    deltas = deltas_of(run_stream(agent, "Weather?"))

    pieces = [d for d in deltas if d.kind == DeltaKind.TOOL_CALL]
    assert "".join(d.text for d in pieces) == json.dumps({"city": "Bern"})
    assert (pieces[0].call_id, pieces[0].name) == ("call_1", "get_weather")
    assert all(d.call_id is None and d.name is None for d in pieces[1:])
    assert [d.iteration for d in deltas if d.kind == DeltaKind.TEXT] == [2, 2]


def test_a_scripted_retry_with_a_partial_answer_streams_it_then_a_reset() -> None:
    model = ScriptedModel(chunk_size=2).retry(partial="Sun").text("Rain.")
    agent = Agent(model)
    agent.start()

    items = run_stream(agent, "hi")

    deltas = deltas_of(items)
    assert [(d.kind, d.text, d.attempt) for d in deltas] == [
        (DeltaKind.TEXT, "Su", 1),
        (DeltaKind.TEXT, "n", 1),
        (DeltaKind.RESET, "", 1),
        (DeltaKind.TEXT, "Ra", 2),
        (DeltaKind.TEXT, "in", 2),
        (DeltaKind.TEXT, ".", 2),
    ]
    assert [m.content for m in agent.messages if m.role == "assistant"] == ["Rain."]


def test_without_chunk_size_or_listener_nothing_is_streamed() -> None:
    told: list[ModelDelta] = []
    model = ScriptedModel().retry(partial="Sun").text("Rain.")
    response = asyncio.run(model.complete([Message.user("hi")], [], on_delta=told.append))
    assert (response.content, told) == ("Rain.", [])
    chunked = ScriptedModel(chunk_size=1).retry(partial="Sun").text("ok")
    assert asyncio.run(chunked.complete([Message.user("hi")], [])).content == "ok"


def test_stream_without_deltas_yields_only_events() -> None:
    agent = Agent(ScriptedModel(chunk_size=1).text("Hello."))
    agent.start()

    async def collect() -> list[StreamItem]:
        return [item async for item in agent.stream("hi", deltas=False)]

    items = asyncio.run(collect())
    assert items
    assert not deltas_of(items)


class PlainModel:
    """A model whose complete takes no on_delta: it keeps working with delta listeners."""

    name = "plain"

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[JSONObject],
        *,
        on_retry: RetryListener | None = None,
    ) -> ModelResponse:
        return ModelResponse(content="plain answer")


class KeywordModel:
    """A model taking any keyword: it is given on_delta."""

    name = "keywords"

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[JSONObject], **options: Any
    ) -> ModelResponse:
        options["on_delta"](ModelDelta(DeltaKind.TEXT, "kw"))
        return ModelResponse(content="kw")


def test_a_model_without_on_delta_still_answers_a_delta_listener() -> None:
    agent = Agent(PlainModel())
    agent.start()

    items = run_stream(agent, "hi")

    assert not deltas_of(items)
    assert agent.outcome().reply == "plain answer"


def test_a_model_with_keywords_is_given_on_delta() -> None:
    agent = Agent(KeywordModel())
    agent.start()

    assert [d.text for d in deltas_of(run_stream(agent, "hi"))] == ["kw"]


def test_takes_deltas_is_false_for_a_complete_without_a_signature() -> None:
    class Unreadable:
        __signature__ = "not a signature"  # inspect.signature raises TypeError

        async def __call__(self, *args: object, **kwargs: object) -> ModelResponse:
            raise AssertionError("never called")

    class Opaque:
        name = "opaque"
        complete = Unreadable()

    assert takes_deltas(PlainModel()) is False
    assert takes_deltas(ScriptedModel()) is True
    assert takes_deltas(Opaque()) is False  # type: ignore[arg-type]


def test_bad_arguments_are_refused_naming_them() -> None:
    with pytest.raises(TypeError, match="chunk_size"):
        ScriptedModel(chunk_size="3")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="chunk_size"):
        ScriptedModel(chunk_size=True)
    with pytest.raises(ValueError, match="chunk_size is 0"):
        ScriptedModel(chunk_size=0)
    with pytest.raises(TypeError, match="partial"):
        ScriptedModel().retry(partial=3)  # type: ignore[arg-type]
    agent = Agent(ScriptedModel())
    with pytest.raises(TypeError, match="deltas"):
        agent.add_listener(print, deltas="yes")  # type: ignore[call-overload]
    assert agent._listeners == ()

    async def bad_stream() -> None:
        async for _ in agent.stream("hi", deltas=1):  # type: ignore[arg-type]
            pass

    with pytest.raises(TypeError, match="deltas"):
        asyncio.run(bad_stream())


def test_closing_the_stream_mid_turn_does_not_cancel_the_turn() -> None:
    async def scenario() -> Agent:
        gate = asyncio.Event()

        class Gated:
            name = "gated"

            async def complete(
                self,
                messages: Sequence[Message],
                tools: Sequence[JSONObject],
                *,
                on_retry: RetryListener | None = None,
                on_delta: Any = None,
            ) -> ModelResponse:
                on_delta(ModelDelta(DeltaKind.TEXT, "Hel"))
                await gate.wait()
                return ModelResponse(content="Hello")

        agent = Agent(Gated())
        await agent.astart()
        stream = agent.stream("hi")
        async for item in stream:
            if isinstance(item, Delta):
                break
        await stream.aclose()  # the client went away
        assert agent.state == "busy"
        assert agent._delta_listeners == ()
        gate.set()
        for _ in range(100):
            if agent.state != "busy":
                break
            await asyncio.sleep(0)
        return agent

    agent = asyncio.run(scenario())
    assert (agent.state, agent.outcome().reply) == ("completed", "Hello")
