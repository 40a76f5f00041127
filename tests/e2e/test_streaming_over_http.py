"""End to end: token streaming with the real `openai` client over HTTP to a loopback server.

The deltas an Agent tells (`agent.stream`, listeners with ``deltas=True``) concatenate to
the messages it stores: the text, and each tool call's arguments.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from agentfsm import Agent, Event, OpenAIModel, ToolCall, tool
from agentfsm.agent import Delta, StreamItem
from agentfsm.llm import DeltaKind, RetryPolicy
from agentfsm.testing import LoopbackOpenAIServer, Reply, TruncatedStream


@tool
def weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


def call(call_id: str, name: str, **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=json.dumps(arguments))


@pytest.fixture
def server() -> Iterator[LoopbackOpenAIServer]:
    with LoopbackOpenAIServer() as running:
        yield running


def streaming_agent(server: LoopbackOpenAIServer, *, stream: bool = True) -> Agent:
    async def no_wait(seconds: float) -> None:
        return None

    model = OpenAIModel(
        "loopback-model",
        base_url=server.url,
        api_key="test-key",
        timeout=5.0,
        stream=stream,
        sleep=no_wait,
        retry=RetryPolicy(max_attempts=3),
    )
    agent = Agent(model, [weather])
    agent.start()
    return agent


def run_stream(agent: Agent, text: str) -> list[StreamItem]:
    async def collect() -> list[StreamItem]:
        return [item async for item in agent.stream(text)]

    return asyncio.run(collect())


def accepted(deltas: list[Delta]) -> list[Delta]:
    """The deltas of each model call since its last reset."""
    kept: list[Delta] = []
    for delta in deltas:
        if delta.kind == DeltaKind.RESET:
            kept = [d for d in kept if d.iteration != delta.iteration]
        else:
            kept.append(delta)
    return kept


def test_deltas_concatenate_to_the_stored_text_and_tool_call_arguments(
    server: LoopbackOpenAIServer,
) -> None:
    server.add(
        Reply(
            "Let me look.",
            tool_calls=(
                call("w1", "weather", city="Saint-Malo"),
                call("w2", "weather", city="Rio de Janeiro"),
            ),
        )
    )
    server.add(Reply("Sunny in Saint-Malo, and sunny in Rio de Janeiro too."))
    agent = streaming_agent(server)

    items = run_stream(agent, "Weather in Saint-Malo and Rio?")

    deltas = [item for item in items if isinstance(item, Delta)]
    assert {d.run_id for d in deltas} == {agent.run_id}
    assert {(d.turn, d.iteration) for d in deltas} == {(1, 1), (1, 2)}
    assert len([d for d in deltas if d.kind == DeltaKind.TEXT]) > 4  # it did stream in pieces
    first, answer = (m for m in agent.messages if m.role == "assistant")
    streamed = "".join(d.text for d in deltas if d.kind == DeltaKind.TEXT and d.iteration == 1)
    assert streamed == first.content == "Let me look."
    for index, stored in enumerate(first.tool_calls):
        pieces = [d for d in deltas if d.kind == DeltaKind.TOOL_CALL and d.index == index]
        assert "".join(d.text for d in pieces) == stored.arguments
        assert len(pieces) > 1
        assert [(d.call_id, d.name) for d in pieces if d.call_id] == [(stored.id, stored.name)]
    final = "".join(d.text for d in deltas if d.kind == DeltaKind.TEXT and d.iteration == 2)
    assert final == answer.content == agent.outcome().reply


def test_deltas_come_in_order_before_the_reply_they_make_up(
    server: LoopbackOpenAIServer,
) -> None:
    server.add(Reply("One two three."))
    agent = streaming_agent(server)

    items = run_stream(agent, "Count")

    kinds = [
        "delta" if isinstance(item, Delta) else getattr(item, "event", None) for item in items
    ]
    first, last = kinds.index("delta"), len(kinds) - 1 - kinds[::-1].index("delta")
    assert kinds.index("submit") < first
    assert last < kinds.index("model_replied")
    assert set(kinds[first : last + 1]) == {"delta"}  # nothing else between them
    events = [item for item in items if isinstance(item, Event)]
    assert [e.seq for e in events] == list(range(events[0].seq, events[0].seq + len(events)))


def test_a_cut_off_stream_is_reset_then_retried_and_only_the_success_is_stored(
    server: LoopbackOpenAIServer,
) -> None:
    server.add(TruncatedStream(Reply("The answer is fort")))
    server.add(Reply("The answer is 42."))
    agent = streaming_agent(server)

    items = run_stream(agent, "The answer?")

    deltas = [item for item in items if isinstance(item, Delta)]
    resets = [d for d in deltas if d.kind == DeltaKind.RESET]
    assert [(d.attempt, d.iteration) for d in resets] == [(1, 1)]
    before = deltas[: deltas.index(resets[0])]
    assert "".join(d.text for d in before) == "The answer is fort"
    assert {d.attempt for d in deltas[deltas.index(resets[0]) + 1 :]} == {2}
    assert "".join(d.text for d in accepted(deltas)) == "The answer is 42."
    assert [m.content for m in agent.messages if m.role == "assistant"] == ["The answer is 42."]
    retry = next(i for i in items if getattr(i, "kind", None) == "llm_retry")
    assert items.index(resets[0]) < items.index(retry)  # the reset, then the retry notice


def test_a_stream_cut_off_on_every_attempt_fails_with_nothing_partial_kept(
    server: LoopbackOpenAIServer,
) -> None:
    for _ in range(3):
        server.add(TruncatedStream(Reply("Half an")))
    agent = streaming_agent(server)

    items = run_stream(agent, "hi")

    deltas = [item for item in items if isinstance(item, Delta)]
    assert [d.attempt for d in deltas if d.kind == DeltaKind.RESET] == [1, 2, 3]
    assert accepted(deltas) == []
    assert (agent.state, agent.reason) == ("failed", "error")
    assert all(m.role != "assistant" for m in agent.messages)


def test_a_listener_that_asks_for_deltas_gets_them_and_one_that_does_not_does_not(
    server: LoopbackOpenAIServer,
) -> None:
    server.add(Reply("Hello there."))
    agent = streaming_agent(server)
    plain: list[Any] = []
    streamed: list[Any] = []
    agent.add_listener(plain.append)
    agent.add_listener(streamed.append, deltas=True)

    agent.submit("hi")

    assert not any(isinstance(item, Delta) for item in plain)
    assert "".join(i.text for i in streamed if isinstance(i, Delta)) == "Hello there."
    assert [i for i in streamed if not isinstance(i, Delta)] == plain
    agent.remove_listener(streamed.append)
    server.add(Reply("Again."))
    agent.submit("again")
    assert "".join(i.text for i in streamed if isinstance(i, Delta)) == "Hello there."


def test_without_stream_there_are_no_deltas_and_the_turn_is_the_same(
    server: LoopbackOpenAIServer,
) -> None:
    server.add(Reply("Plain answer."))
    agent = streaming_agent(server, stream=False)

    items = run_stream(agent, "hi")

    assert not any(isinstance(item, Delta) for item in items)
    assert agent.outcome().reply == "Plain answer."


def test_a_delta_listener_that_raises_fails_the_turn_and_propagates(
    server: LoopbackOpenAIServer,
) -> None:
    server.add(Reply("This will not be heard."))
    agent = streaming_agent(server)

    def deaf(item: StreamItem) -> None:
        if isinstance(item, Delta):
            raise KeyError("listener broke")

    agent.add_listener(deaf, deltas=True)
    with pytest.raises(KeyError, match="listener broke"):
        agent.submit("hi")

    assert (agent.state, agent.reason) == ("failed", "error")  # not left busy (I12)
    assert len(server.requests) == 1  # a listener's exception is never retried
    assert all(m.role != "assistant" for m in agent.messages)
    agent.remove_listener(deaf)
    server.add(Reply("Fine now."))
    assert agent.submit("again").reply == "Fine now."


def test_a_filtered_stream_fails_the_call_after_a_reset(server: LoopbackOpenAIServer) -> None:
    server.add(Reply("Something the provider withheld", finish_reason="content_filter"))
    agent = streaming_agent(server)

    items = run_stream(agent, "hi")

    deltas = [item for item in items if isinstance(item, Delta)]
    assert deltas[-1].kind == DeltaKind.RESET
    assert accepted(deltas) == []
    failed = next(i for i in items if isinstance(i, Event) and i.event == "model_failed")
    assert items.index(deltas[-1]) < items.index(failed)
    assert (agent.state, len(server.requests)) == ("failed", 1)


def test_an_on_delta_that_raises_a_model_error_is_not_taken_for_a_failed_attempt(
    server: LoopbackOpenAIServer,
) -> None:
    from agentfsm.errors import ModelResponseError
    from agentfsm.llm import ModelDelta

    server.add(Reply("Never heard."))
    model = OpenAIModel("loopback-model", base_url=server.url, api_key="k", stream=True)
    mine = ModelResponseError("the listener's own", model="x", reason="malformed")
    told: list[ModelDelta] = []

    def raising(delta: ModelDelta) -> None:
        told.append(delta)
        raise mine

    with pytest.raises(ModelResponseError) as raised:
        asyncio.run(model.complete([], [], on_delta=raising))

    assert raised.value is mine  # unchanged, not retried and not reset
    assert [d.kind for d in told] == [DeltaKind.TEXT]
    assert len(server.requests) == 1
