"""The OTel listener turns an Agent's runs into GenAI spans (the SDK's in-memory exporter)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from agentfsm import Agent, Event, ScriptedModel, tool
from agentfsm.errors import ModelCallError
from agentfsm.fsm.trace import LLMCallTrace, ToolExecutionTrace
from agentfsm.llm.base import Usage
from agentfsm.serve.otel import TRANSITION_EVENT, OTelListener, instrument


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
