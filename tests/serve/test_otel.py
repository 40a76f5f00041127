"""The OTel listener turns an Agent's runs into GenAI spans (the SDK's in-memory exporter)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import INVALID_SPAN, SpanKind, StatusCode

from agentfsm import Agent, Event, ScriptedModel, tool
from agentfsm.errors import ModelCallError
from agentfsm.fsm.trace import LLMCallTrace, ToolExecutionTrace
from agentfsm.llm import OpenAIModel
from agentfsm.llm.base import DeltaKind, DeltaListener, ModelDelta, ModelResponse, Usage
from agentfsm.serve.otel import TRANSITION_EVENT, OTelListener, instrument
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message, ToolCall
from agentfsm.testing import LoopbackOpenAIServer, Reply


@tool
def weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


@tool(policy="require_approval")
def transfer(amount: int) -> str:
    """Move money."""
    return "moved"


@tool
def broken() -> str:
    """Always fails."""
    raise RuntimeError("no luck")


class Traced:
    def __init__(self, model: ScriptedModel, **options: object) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        ticks = itertools.count(1000)
        self.agent = Agent(
            model,
            [weather, transfer, broken],
            clock=lambda: float(next(ticks)),
            **options,  # type: ignore[arg-type]
        )
        self.listener = instrument(self.agent, provider.get_tracer("test"), agent_name="helper")
        self.agent.start()

    def spans(self, prefix: str = "") -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if s.name.startswith(prefix)]


def transitions(span: ReadableSpan) -> list[tuple[object, ...]]:
    return [
        tuple(e.attributes[k] for k in ("agentfsm.machine", "agentfsm.event", "agentfsm.target"))
        for e in span.events
        if e.name == TRANSITION_EVENT and e.attributes is not None
    ]


def test_a_turn_with_a_tool_round_is_one_agent_span_with_chat_and_tool_children() -> None:
    model = ScriptedModel().tool_call("weather", city="Oslo")
    model.text("Sunny.", usage=Usage(prompt_tokens=12, completion_tokens=3, total_tokens=15))
    traced = Traced(model)
    traced.agent.submit("Weather?")

    (turn,) = traced.spans("invoke_agent")
    chats = traced.spans("chat")
    (run_tool,) = traced.spans("execute_tool")
    assert turn.name == "invoke_agent helper"
    assert turn.attributes is not None
    assert turn.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert turn.attributes["gen_ai.agent.name"] == "helper"
    assert turn.attributes["gen_ai.conversation.id"] == traced.agent.run_id
    assert turn.attributes["agentfsm.turn"] == 1
    assert turn.attributes["agentfsm.state"] == "completed"
    assert turn.status.status_code == StatusCode.UNSET
    assert [c.name for c in chats] == ["chat scripted", "chat scripted"]
    assert all(c.kind == SpanKind.CLIENT for c in chats)
    assert chats[0].attributes is not None
    assert chats[1].attributes is not None
    assert chats[0].attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert chats[1].attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert chats[1].attributes["gen_ai.usage.input_tokens"] == 12
    assert chats[1].attributes["gen_ai.usage.output_tokens"] == 3
    assert chats[1].attributes["gen_ai.request.model"] == "scripted"
    assert run_tool.name == "execute_tool weather"
    assert run_tool.attributes is not None
    assert run_tool.attributes["gen_ai.tool.name"] == "weather"
    assert run_tool.attributes["gen_ai.tool.call.id"] == traced.agent.trace[2].call_id  # type: ignore[union-attr]
    assert run_tool.attributes["agentfsm.tool.status"] == "success"
    for child in [*chats, run_tool]:
        assert child.parent is not None
        assert child.parent.span_id == turn.context.span_id
        assert child.context.trace_id == turn.context.trace_id
    assert transitions(turn) == [
        ("run", "submit", "busy"),
        ("loop", "model_replied", "acting"),
        ("loop", "tools_finished", "thinking"),
        ("loop", "model_replied", "answered"),
        ("run", "complete", "completed"),
    ]


def test_each_transition_is_an_event_in_the_order_of_the_log() -> None:
    traced = Traced(ScriptedModel().text("Hi."))
    traced.agent.submit("Hello")
    (turn,) = traced.spans("invoke_agent")
    seqs = [e.attributes["agentfsm.seq"] for e in turn.events if e.attributes is not None]
    assert seqs == sorted(seqs)
    assert turn.start_time is not None
    assert turn.end_time is not None
    assert turn.start_time <= turn.events[0].timestamp <= turn.end_time


def test_a_failed_turn_has_an_error_status_and_a_failed_chat_span() -> None:
    model = ScriptedModel().fail(ModelCallError("boom", model="scripted", reason="status"))
    traced = Traced(model)
    traced.agent.submit("Hello")
    (turn,) = traced.spans("invoke_agent")
    (chat,) = traced.spans("chat")
    assert turn.status.status_code == StatusCode.ERROR
    assert turn.attributes is not None
    assert turn.attributes["error.type"] == "ModelCallError"
    assert chat.status.status_code == StatusCode.ERROR
    assert chat.parent is not None
    assert chat.parent.span_id == turn.context.span_id


def test_a_failing_tool_is_an_error_span_in_a_turn_that_goes_on() -> None:
    traced = Traced(ScriptedModel().tool_call("broken").text("Sorry."))
    traced.agent.submit("Try")
    (run_tool,) = traced.spans("execute_tool")
    (turn,) = traced.spans("invoke_agent")
    assert run_tool.status.status_code == StatusCode.ERROR
    assert run_tool.attributes is not None
    assert run_tool.attributes["agentfsm.tool.status"] == "error"
    assert turn.status.status_code == StatusCode.UNSET


def test_a_turn_that_waits_for_approval_is_two_spans_of_the_same_turn() -> None:
    traced = Traced(ScriptedModel().tool_call("transfer", amount=5).text("Done."))
    outcome = traced.agent.submit("Pay")
    assert [s.name for s in traced.spans()] == ["chat scripted", "invoke_agent helper"]
    traced.agent.resolve_action({outcome.pending[0].id: "approve"})
    first, second = traced.spans("invoke_agent")
    assert first.attributes is not None
    assert second.attributes is not None
    assert first.attributes["agentfsm.state"] == "requires_action"
    assert second.attributes["agentfsm.entered_by"] == "resolve_action"
    assert first.attributes["agentfsm.turn"] == second.attributes["agentfsm.turn"] == 1
    assert second.attributes["agentfsm.state"] == "completed"


def test_a_cancelled_wait_is_a_failed_span_of_its_own() -> None:
    traced = Traced(ScriptedModel().tool_call("transfer", amount=5))
    traced.agent.submit("Pay")
    traced.agent.cancel()
    last = traced.spans("invoke_agent")[-1]
    assert transitions(last) == [("run", "cancel", "failed")]
    assert last.status.status_code == StatusCode.ERROR


def test_start_and_shutdown_outside_a_turn_make_no_span() -> None:
    traced = Traced(ScriptedModel())
    traced.agent.shutdown()
    assert traced.spans() == []


def test_the_global_tracer_is_used_when_none_is_given() -> None:
    listener = OTelListener()
    agent = Agent(ScriptedModel().text("Hi."), listeners=[listener])
    agent.start()
    assert agent.submit("Hello").reply == "Hi."  # a no-op tracer records nothing, costs little


@pytest.mark.parametrize("name", ["", None])
def test_an_empty_agent_name_is_refused(name: object) -> None:
    with pytest.raises(ValueError, match="agent_name must be a non-empty string"):
        OTelListener(agent_name=name)  # type: ignore[arg-type]


def test_instrument_wants_an_agent() -> None:
    with pytest.raises(TypeError, match="agent must be an Agent, not str"):
        instrument("agent")  # type: ignore[arg-type]


STEPS = st.lists(
    st.sampled_from(["text", "weather", "broken", "transfer", "fail"]), min_size=1, max_size=6
)


@given(STEPS)
def test_spans_account_for_every_model_call_tool_call_and_transition(steps: list[str]) -> None:
    model = ScriptedModel()
    for step in steps:
        if step == "text":
            model.text("ok")
        elif step == "fail":
            model.fail(ModelCallError("down", model="scripted", reason="status"))
        elif step == "transfer":
            model.tool_call("transfer", amount=1)
        else:
            model.tool_call(step, **({"city": "Oslo"} if step == "weather" else {}))
    traced = Traced(model.text("done"), max_iterations=3)
    events: list[object] = []
    traced.agent.add_listener(events.append)
    for _ in range(len(steps)):
        outcome = traced.agent.submit("go")
        while outcome.state == "requires_action":
            outcome = traced.agent.resolve_action({c.id: "approve" for c in outcome.pending})
        if model.remaining == 0:
            break

    turns = traced.spans("invoke_agent")
    ids = {span.context.span_id for span in turns}
    children = traced.spans("chat") + traced.spans("execute_tool")
    assert all(child.parent is not None and child.parent.span_id in ids for child in children)
    trace = traced.agent.trace
    model_calls = [e for e in trace if isinstance(e, LLMCallTrace)]
    logged = [e for e in events if isinstance(e, Event)]
    failed_calls = [e for e in logged if e.event == "model_failed"]
    assert len(traced.spans("chat")) == len(model_calls) + len(failed_calls)
    tool_calls = [e for e in trace if isinstance(e, ToolExecutionTrace)]
    assert len(traced.spans("execute_tool")) == len(tool_calls)
    recorded = [event for span in turns for event in span.events]
    transitions = [e for e in logged if e.machine != "conversation"]
    assert [e.attributes["agentfsm.seq"] for e in recorded] == [e.seq for e in transitions]
    assert all(span.end_time is not None for span in turns)
    failed = [s for s in turns if s.attributes["agentfsm.state"] == "failed"]
    assert all(s.status.status_code == StatusCode.ERROR for s in failed)


# -- the conventions' attribute lists (semantic-conventions v1.41, GenAI spans) --------------

CHAT_REQUIRED = {"gen_ai.operation.name", "gen_ai.provider.name"}
RESPONDED = {"gen_ai.response.id"}  # recommended; every model here sends an id: required
CHAT_CONDITIONAL = {  # each condition holds for the model below
    "gen_ai.conversation.id",  # when available
    "gen_ai.request.model",  # if available
    "gen_ai.request.seed",  # if the request includes a seed
    "gen_ai.request.stream",  # if the request is streaming
    "server.port",  # if server.address is set
}
CHAT_RECOMMENDED = {
    "gen_ai.request.frequency_penalty",
    "gen_ai.request.max_tokens",
    "gen_ai.request.presence_penalty",
    "gen_ai.request.stop_sequences",
    "gen_ai.request.temperature",
    "gen_ai.request.top_k",
    "gen_ai.request.top_p",
    "gen_ai.response.finish_reasons",
    "gen_ai.response.model",
    "gen_ai.response.time_to_first_chunk",  # if the request was a streaming request
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.reasoning.output_tokens",
    "server.address",
}
AGENT_REQUIRED = {"gen_ai.operation.name", "gen_ai.provider.name"}
AGENT_CONDITIONAL = {"gen_ai.agent.name", "gen_ai.conversation.id", "gen_ai.request.model"}
AGENT_RECOMMENDED = {
    "gen_ai.request.frequency_penalty",
    "gen_ai.request.max_tokens",
    "gen_ai.request.presence_penalty",
    "gen_ai.request.stop_sequences",
    "gen_ai.request.temperature",
    "gen_ai.request.top_p",
    "gen_ai.response.finish_reasons",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
}
TOOL_REQUIRED = {"gen_ai.operation.name", "gen_ai.tool.name"}
TOOL_RECOMMENDED = {"gen_ai.tool.call.id", "gen_ai.tool.description", "gen_ai.tool.type"}

TRACER = TracerProvider()
EXPORTER = InMemorySpanExporter()
TRACER.add_span_processor(SimpleSpanProcessor(EXPORTER))


class StreamingModel:
    """A model as `OpenAIModel` describes itself: a server, settings, a stream."""

    name = "gpt-4o-mini"
    base_url = "https://llm.internal:8443/v1"
    stream = True
    settings: ClassVar[dict[str, object]] = {
        "temperature": 0.2,
        "top_p": 0.9,
        "top_k": 40,
        "max_tokens": 256,
        "frequency_penalty": 0.1,
        "presence_penalty": 0.0,
        "stop": ["END"],
        "seed": 7,
    }

    def __init__(self, script: ScriptedModel) -> None:
        self.script = script
        self.inside: list[str] = []
        self.calls = 0

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[JSONObject],
        on_retry: object = None,
        on_delta: DeltaListener | None = None,
    ) -> ModelResponse:
        # A span the model client opens (an HTTP instrumentation's) is a child of chat.
        with TRACER.get_tracer("http").start_as_current_span("POST /v1/chat/completions"):
            self.inside.append(
                trace.get_current_span().get_span_context().span_id.to_bytes(8).hex()
            )
        if on_delta is not None:
            on_delta(ModelDelta(DeltaKind.TEXT, "…"))
        response = await self.script.complete(messages, tools)
        usage = Usage(
            prompt_tokens=10,
            completion_tokens=2,
            total_tokens=12,
            cache_creation_tokens=0,
            cache_read_tokens=6,
            reasoning_tokens=1,
        )
        self.calls += 1
        return response.model_copy(
            update={"model": "gpt-4o-mini-2024-07-18", "usage": usage, "id": f"r-{self.calls}"}
        )


@tool(timeout=5.0)  # (a sync body with a timeout runs in a thread of its own)
def lookup(city: str) -> str:
    """Look a city up in the application's own index."""
    with TRACER.get_tracer("app").start_as_current_span("app.index.lookup"):
        return f"found {city}"


def _attributes(span: ReadableSpan) -> set[str]:
    assert span.attributes is not None
    return set(span.attributes)


def test_each_span_carries_the_conventions_required_and_recommended_attributes() -> None:
    EXPORTER.clear()
    model = StreamingModel(ScriptedModel().tool_call("lookup", city="Oslo").text("Found."))
    agent = Agent(model, [lookup], run_id="conv-1")  # type: ignore[arg-type]
    instrument(agent, TRACER.get_tracer("test"), agent_name="helper")
    agent.start()
    assert agent.submit("Find Oslo").reply == "Found."
    spans = {span.name: span for span in EXPORTER.get_finished_spans()}
    chat = [s for s in EXPORTER.get_finished_spans() if s.name == "chat gpt-4o-mini"]
    turn, run_tool = spans["invoke_agent helper"], spans["execute_tool lookup"]

    assert len(chat) == 2  # named after the model asked for, not the one that answered
    assert [s.attributes and s.attributes["gen_ai.response.id"] for s in chat] == ["r-1", "r-2"]
    for call in chat:
        present = _attributes(call)
        wanted = CHAT_REQUIRED | RESPONDED | CHAT_CONDITIONAL | CHAT_RECOMMENDED
        assert present >= wanted, wanted - present
        assert call.attributes is not None
        assert call.attributes["gen_ai.usage.cache_read.input_tokens"] == 6
        assert call.attributes["gen_ai.usage.cache_creation.input_tokens"] == 0
        assert call.attributes["gen_ai.usage.reasoning.output_tokens"] == 1
        assert call.attributes["gen_ai.request.model"] == "gpt-4o-mini"
        assert call.attributes["gen_ai.response.model"] == "gpt-4o-mini-2024-07-18"
        assert call.attributes["gen_ai.provider.name"] == "tests"  # (the model's package)
        assert (call.attributes["server.address"], call.attributes["server.port"]) == (
            "llm.internal",
            8443,
        )
        assert call.attributes["gen_ai.request.stream"] is True
        assert call.attributes["gen_ai.request.stop_sequences"] == ("END",)
        assert call.attributes["gen_ai.conversation.id"] == "conv-1"
    present = _attributes(turn)
    assert present >= AGENT_REQUIRED | AGENT_CONDITIONAL | AGENT_RECOMMENDED, (
        AGENT_REQUIRED | AGENT_CONDITIONAL | AGENT_RECOMMENDED
    ) - present
    assert turn.attributes is not None
    assert turn.attributes["gen_ai.usage.input_tokens"] == 20  # both calls, in total
    assert turn.attributes["gen_ai.usage.output_tokens"] == 4
    assert turn.attributes["gen_ai.request.model"] == "gpt-4o-mini"
    assert _attributes(run_tool) >= TOOL_REQUIRED | TOOL_RECOMMENDED
    assert run_tool.attributes is not None
    assert run_tool.attributes["gen_ai.tool.description"] == (
        "Look a city up in the application's own index."
    )


def test_spans_opened_inside_a_tool_and_a_model_call_are_children_of_theirs() -> None:
    EXPORTER.clear()
    script = ScriptedModel().tool_call("lookup", city="Oslo").text("Found.")
    model = StreamingModel(script)
    agent = Agent(model, [lookup])  # type: ignore[arg-type]
    instrument(agent, TRACER.get_tracer("test"))
    agent.start()
    with TRACER.get_tracer("app").start_as_current_span("app.request") as request:
        agent.submit("Find Oslo")
    spans = {span.name: span for span in EXPORTER.get_finished_spans()}
    inner, run_tool = spans["app.index.lookup"], spans["execute_tool lookup"]
    turn = spans["invoke_agent agentfsm"]
    assert inner.parent is not None
    assert inner.parent.span_id == run_tool.context.span_id  # not the app's request span
    assert run_tool.parent is not None
    assert run_tool.parent.span_id == turn.context.span_id
    assert turn.parent is not None
    assert turn.parent.span_id == request.get_span_context().span_id  # the app's trace
    http = [s for s in EXPORTER.get_finished_spans() if s.name.startswith("POST")]
    chats = [s for s in EXPORTER.get_finished_spans() if s.name.startswith("chat")]
    assert [h.parent.span_id for h in http if h.parent] == [c.context.span_id for c in chats]
    assert trace.get_current_span() is INVALID_SPAN  # nothing of ours is left current


def test_a_cancelled_wait_has_the_turn_it_belongs_to() -> None:
    traced = Traced(ScriptedModel().tool_call("transfer", amount=5))
    traced.agent.submit("Pay")
    traced.agent.cancel()
    first, last = traced.spans("invoke_agent")
    assert last.attributes is not None
    assert first.attributes is not None
    assert last.attributes["agentfsm.turn"] == first.attributes["agentfsm.turn"] == 1
    assert last.attributes["gen_ai.provider.name"] == "agentfsm.scripted"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_the_chat_spans_carry_the_response_id_and_token_details_sent_over_http(
    stream: bool,
) -> None:
    EXPORTER.clear()
    detailed = Usage(
        prompt_tokens=30,
        completion_tokens=9,
        total_tokens=39,
        cache_read_tokens=24,
        reasoning_tokens=4,
    )
    oslo = ToolCall(id="call_1", name="lookup", arguments='{"city": "Oslo"}')
    script = [Reply(tool_calls=(oslo,)), Reply("Found.", usage=detailed)]
    with LoopbackOpenAIServer(script) as server:
        model = OpenAIModel("gpt-test", base_url=server.url, api_key="test", stream=stream)
        agent = Agent(model, [lookup])
        instrument(agent, TRACER.get_tracer("test"), agent_name="http")
        assert agent.start("Find Oslo").reply == "Found."
    chat = [s for s in EXPORTER.get_finished_spans() if s.name == "chat gpt-test"]
    assert [s.attributes and s.attributes["gen_ai.response.id"] for s in chat] == [
        "chatcmpl-loopback-1",
        "chatcmpl-loopback-2",
    ]
    answered = chat[1].attributes
    assert answered is not None
    assert answered["gen_ai.usage.input_tokens"] == 30
    assert answered["gen_ai.usage.cache_read.input_tokens"] == 24
    assert answered["gen_ai.usage.reasoning.output_tokens"] == 4
    assert "gen_ai.usage.cache_creation.input_tokens" not in answered  # OpenAI tells none
