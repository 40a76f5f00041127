"""OpenTelemetry spans for an Agent's runs, following the GenAI semantic conventions.

Needs the ``otel`` extra (``opentelemetry-api``). `instrument` adds an `OTelListener` to an
Agent through its public listener and hook APIs; the listener turns what the Agent tells it
into spans, so the Agent itself knows nothing of tracing and an Agent with no listener pays
nothing for it. The spans follow the GenAI conventions as of semantic-conventions v1.41
(commit c9e48b1^ of open-telemetry/semantic-conventions, the last text there before the
conventions moved to open-telemetry/semantic-conventions-genai):

- ``invoke_agent {name}`` (INTERNAL): one per stretch of a turn's work, from the transition
  that makes the run ``busy`` (``submit``, ``resolve_action``, ``provide_input``, ``resume``)
  to the one that leaves it (``complete``, ``fail``, ``cancel``, ``need_action``,
  ``need_input``, ``pause``); a turn that waits for an approval or an answer is two or more
  such spans with the same ``agentfsm.turn``. A cancelled or expired wait is a span of its
  own (as long as the transition: it does no work). It carries the provider, the request
  model and settings, and the token usage of its model calls in total; ERROR when the turn
  failed.
- ``chat {request model}`` (CLIENT): one per model call, a child of the turn's span, opened
  when the call is made (the ``before_llm`` hook) and ended when it returns, with the
  provider, request and response models, server, settings, whether it streams and the time
  to its first chunk, token usage and finish reason; ERROR when the call failed for good.
- ``execute_tool {tool}`` (INTERNAL): one per tool body run, opened as the body starts and
  ended as its result is recorded, with the tool's name, description, call id and how it
  ended; ERROR unless it succeeded.
- Each transition of either machine is an event ``agentfsm.transition`` on the turn's span,
  with the machine, the event, the source and target states and the sequence number.

Each span is the **current span while its work runs**: a span the application opens in a
tool body is a child of ``execute_tool``, one opened by the model client (an HTTP client's
instrumentation) a child of ``chat``, and both are in the turn's trace. Spans are timed from
the run's clock (the events' ``at``), so a run with a fake clock gives reproducible spans.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

from agentfsm.agent.core import Agent
from agentfsm.agent.deltas import Delta
from agentfsm.fsm.trace import LLMCallTrace, ToolExecutionTrace
from agentfsm.llm.base import Usage
from agentfsm.serve.otel_model import ModelFacts, model_facts
from agentfsm.states.events import Event
from agentfsm.states.json import JSONValue
from agentfsm.states.names import LoopEvent, MachineName, RunState
from agentfsm.tools.hooks import HookContext

__all__ = ["TRANSITION_EVENT", "OTelListener", "instrument"]

TRANSITION_EVENT = "agentfsm.transition"
"""The name of the span event each transition becomes."""

_INSTRUMENTATION = "agentfsm"
_ENDING = frozenset({RunState.COMPLETED, RunState.FAILED})
_TOOL_STARTED, _TOOL_RESULT = "tool_started", "tool_result"


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


_TOKEN_DETAILS = {
    "cache_read_tokens": "gen_ai.usage.cache_read.input_tokens",
    "cache_creation_tokens": "gen_ai.usage.cache_creation.input_tokens",
    "reasoning_tokens": "gen_ai.usage.reasoning.output_tokens",
}
"""The conventions' attribute of each detail of `Usage` (set when the provider reported it)."""


def _token_attributes(usage: Usage) -> dict[str, AttributeValue]:
    """A chat span's token counts: in, out, then each detail the provider reported.

    In and out include the cache's and the reasoning's tokens, as the conventions want.
    """
    found: dict[str, AttributeValue] = {
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens,
    }
    for name, key in _TOKEN_DETAILS.items():
        count = getattr(usage, name)
        if count is not None:
            found[key] = count
    return found


@dataclass(slots=True)
class _Open:
    """A span of ours that is current in the turn's context until it ends."""

    span: Span
    token: object
    started: float
    first_chunk: float | None = None


@dataclass(slots=True)
class _Usage:
    """The token usage of a turn span's model calls, in total."""

    input_tokens: int = 0
    output_tokens: int = 0
    reported: bool = False
    finish: list[str] = field(default_factory=list)


class OTelListener:
    """An Agent listener that records the run as OpenTelemetry spans (see the module).

    Args:
        tracer: Where spans go; None for the global tracer provider's ``agentfsm`` tracer
            (a no-op until the application configures OpenTelemetry).
        agent_name: ``gen_ai.agent.name`` and the turn spans' name suffix.
        model: What the spans say of the model's requests (`model_facts` of the Agent's
            model, which `instrument` passes); None: only what the calls report.
        tools: Each tool's description, by name (``gen_ai.tool.description``).
        clock: The run's clock, for when a model call begins (``time.time`` by default).
    """

    __slots__ = (
        "_chat",
        "_clock",
        "_facts",
        "_tool",
        "_tools",
        "_tracer",
        "_turn",
        "_turn_no",
        "_usage",
        "agent_name",
    )

    def __init__(
        self,
        tracer: Tracer | None = None,
        *,
        agent_name: str = "agentfsm",
        model: ModelFacts | None = None,
        tools: Mapping[str, str] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if not isinstance(agent_name, str) or not agent_name:
            raise ValueError(f"agent_name must be a non-empty string, not {agent_name!r}")
        self._tracer = tracer if tracer is not None else trace.get_tracer(_INSTRUMENTATION)
        self.agent_name = agent_name
        """``gen_ai.agent.name``."""
        self._facts = model if model is not None else ModelFacts()
        self._tools = dict(tools or {})
        self._clock = clock if clock is not None else time.time
        self._turn: _Open | None = None
        self._chat: _Open | None = None
        self._tool: _Open | None = None
        self._turn_no: int | None = None
        self._usage = _Usage()

    # -- what the Agent tells ----------------------------------------------------------

    def __call__(self, item: object) -> None:
        """Record one transition, trace entry or delta."""
        if isinstance(item, Event):
            self._transition(item)
        elif isinstance(item, Delta):
            chat = self._chat
            if chat is not None and chat.first_chunk is None:
                chat.first_chunk = self._clock() - chat.started
        elif isinstance(item, LLMCallTrace):
            self._remember_turn(item.turn)
            self._chat_done(item)
        elif isinstance(item, ToolExecutionTrace):
            self._remember_turn(item.turn)

    def before_model(self, context: HookContext) -> None:
        """The ``before_llm`` hook: the model call begins; its ``chat`` span is current."""
        self._remember_turn(context.turn)
        if self._turn is None or self._chat is not None:
            return
        facts = self._facts
        name = f"chat {facts.request_model}" if facts.request_model else "chat"
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "chat",
            **facts.request(),
            "gen_ai.conversation.id": context.run_id,
            "agentfsm.turn": context.turn,
            "agentfsm.iteration": context.iteration,
        }
        if facts.stream:
            attributes["gen_ai.request.stream"] = True
        self._chat = self._begin(name, SpanKind.CLIENT, self._clock(), attributes)

    def _remember_turn(self, turn: int) -> None:
        self._turn_no = turn
        if self._turn is not None:
            self._turn.span.set_attribute("agentfsm.turn", turn)

    def _transition(self, event: Event) -> None:
        if event.machine == MachineName.CONVERSATION:
            self._conversation(event)
            return
        opens = event.machine == MachineName.RUN and self._turn is None
        if opens and (event.target == RunState.BUSY or event.target in _ENDING):
            self._open(event)
        turn = self._turn
        if turn is None:
            return  # start, shutdown, or a pause / resume between turns: no turn's work
        turn.span.add_event(
            TRANSITION_EVENT,
            {
                "agentfsm.machine": str(event.machine),
                "agentfsm.event": event.event,
                "agentfsm.source": event.source,
                "agentfsm.target": event.target,
                "agentfsm.seq": event.seq,
            },
            timestamp=_ns(event.at),
        )
        if event.machine == MachineName.LOOP and event.event == LoopEvent.MODEL_FAILED:
            self._chat_failed(event)
        if event.machine == MachineName.RUN and event.target != RunState.BUSY:
            self._close(event)

    # -- spans current while their work runs ----------------------------------------------

    def _begin(
        self, name: str, kind: SpanKind, start: float, attributes: Mapping[str, AttributeValue]
    ) -> _Open:
        """Start a span (a child of the innermost of ours) and make it current."""
        inner = self._tool or self._chat or self._turn
        parent = trace.set_span_in_context(inner.span) if inner is not None else None
        span = self._tracer.start_span(
            name, context=parent, kind=kind, attributes=attributes, start_time=_ns(start)
        )
        token = otel_context.attach(trace.set_span_in_context(span))
        return _Open(span, token, start)

    @staticmethod
    def _end(opened: _Open, at: float) -> None:
        """End the span; it stops being current where it was made current."""
        if trace.get_current_span() is opened.span:  # (else another task's context)
            otel_context.detach(opened.token)  # type: ignore[arg-type]
        opened.span.end(end_time=_ns(at))

    def _open(self, event: Event) -> None:
        self._usage = _Usage()
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "invoke_agent",
            **self._facts.request(),
            "gen_ai.agent.name": self.agent_name,
            "gen_ai.conversation.id": event.run_id,
            "agentfsm.run_id": event.run_id,
            "agentfsm.entered_by": event.event,
        }
        if self._turn_no is not None:
            attributes["agentfsm.turn"] = self._turn_no
        self._turn = self._begin(
            f"invoke_agent {self.agent_name}", SpanKind.INTERNAL, event.at, attributes
        )

    def _close(self, event: Event) -> None:
        turn = self._turn
        assert turn is not None
        for inner in (self._tool, self._chat):  # cut short (cancelled mid-step)
            if inner is not None:
                inner.span.set_status(Status(StatusCode.ERROR, f"cut short: {event.event}"))
                inner.span.set_attribute("error.type", "cancelled")
                self._end(inner, event.at)
        self._tool = self._chat = None
        span = turn.span
        span.set_attribute("agentfsm.state", event.target)
        usage = self._usage
        if usage.reported:
            span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
        if usage.finish:
            span.set_attribute("gen_ai.response.finish_reasons", tuple(usage.finish))
        if event.target == RunState.FAILED:
            error_type = event.data.get("error_type") or event.event
            span.set_attribute("error.type", str(error_type))
            span.set_status(Status(StatusCode.ERROR, str(event.data.get("message", error_type))))
        self._end(turn, event.at)
        self._turn = None

    # -- model calls ------------------------------------------------------------------------

    def _chat_done(self, entry: LLMCallTrace) -> None:
        chat = self._chat
        if chat is None:  # (no before_llm hook: a listener added without `instrument`)
            start = entry.at - entry.duration
            chat = self._begin(
                f"chat {entry.model}", SpanKind.CLIENT, start, self._facts.request()
            )
            chat.span.set_attribute("gen_ai.operation.name", "chat")
        self._chat = None
        span = chat.span
        attributes: dict[str, AttributeValue] = {
            "gen_ai.response.model": entry.model,
            "gen_ai.response.finish_reasons": (entry.finish_reason,),
            "agentfsm.turn": entry.turn,
            "agentfsm.iteration": entry.iteration,
            "agentfsm.tool_call_count": entry.tool_call_count,
        }
        if chat.first_chunk is not None:
            attributes["gen_ai.response.time_to_first_chunk"] = chat.first_chunk
        if entry.response_id is not None:
            attributes["gen_ai.response.id"] = entry.response_id
        span.set_attributes(attributes)
        self._usage.finish.append(entry.finish_reason)
        if entry.usage is not None:
            span.set_attributes(_token_attributes(entry.usage))
            self._usage.input_tokens += entry.usage.prompt_tokens
            self._usage.output_tokens += entry.usage.completion_tokens
            self._usage.reported = True
        self._end(chat, max(entry.at, chat.started))

    def _chat_failed(self, event: Event) -> None:
        chat = self._chat
        if chat is None:
            model = self._facts.request_model or "model"
            chat = self._begin(f"chat {model}", SpanKind.CLIENT, event.at, self._facts.request())
            chat.span.set_attribute("gen_ai.operation.name", "chat")
        self._chat = None
        error_type = str(event.data.get("error_type", "ModelError"))
        chat.span.set_attribute("error.type", error_type)
        chat.span.set_status(Status(StatusCode.ERROR, str(event.data.get("message", error_type))))
        self._end(chat, max(event.at, chat.started))

    # -- tool calls -------------------------------------------------------------------------

    def _conversation(self, event: Event) -> None:
        if self._turn is None:
            return
        if event.event == _TOOL_STARTED:
            self._tool_started(event)
        elif event.event == _TOOL_RESULT and self._tool is not None:
            self._tool_result(event)

    def _tool_started(self, event: Event) -> None:
        name = str(event.data.get("name", ""))
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.provider.name": self._facts.provider,
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": str(event.data.get("call_id", "")),
            "gen_ai.tool.type": "function",
            "gen_ai.conversation.id": event.run_id,
        }
        description = self._tools.get(name)
        if description:
            attributes["gen_ai.tool.description"] = description
        if self._turn_no is not None:
            attributes["agentfsm.turn"] = self._turn_no
        if self._tool is not None:  # (a result never told: end it where the next begins)
            self._end(self._tool, event.at)
        self._tool = self._begin(f"execute_tool {name}", SpanKind.INTERNAL, event.at, attributes)

    def _tool_result(self, event: Event) -> None:
        tool = self._tool
        assert tool is not None
        self._tool = None
        result = event.data.get("result")
        found: Mapping[str, JSONValue] = result if isinstance(result, dict) else {}
        status = str(found.get("status", "success"))
        tool.span.set_attribute("agentfsm.tool.status", status)
        if status != "success":
            error = found.get("error")
            details: Mapping[str, JSONValue] = error if isinstance(error, dict) else {}
            tool.span.set_attribute("error.type", str(details.get("type") or status))
            tool.span.set_status(Status(StatusCode.ERROR, str(details.get("message") or status)))
        self._end(tool, event.at)


def instrument(
    agent: Agent,
    tracer: Tracer | None = None,
    *,
    agent_name: str = "agentfsm",
    provider: str | None = None,
) -> OTelListener:
    """Trace ``agent``'s runs from now on; returns the listener (`Agent.remove_listener` stops it).

    It listens to the Agent (with its deltas, for the time to a stream's first chunk) and
    adds a ``before_llm`` hook, where a model call's span begins.

    Args:
        agent: The Agent to trace.
        tracer: Where spans go; None for the global tracer provider's ``agentfsm`` tracer.
        agent_name: ``gen_ai.agent.name`` and the turn spans' name suffix.
        provider: ``gen_ai.provider.name``, if the one read from the model is not right
            (`agentfsm.serve.otel_model.model_facts`).
    """
    if not isinstance(agent, Agent):
        raise TypeError(f"agent must be an Agent, not {type(agent).__name__}")
    tools = {tool.name: tool.description for tool in agent.tools.registry}
    listener = OTelListener(
        tracer,
        agent_name=agent_name,
        model=model_facts(agent.model, provider),
        tools=tools,
        clock=getattr(agent, "_clock", None),
    )
    agent.add_listener(listener, deltas=True)
    agent.on("before_llm")(listener.before_model)
    return listener
