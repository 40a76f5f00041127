"""OpenTelemetry spans for an Agent's runs, following the GenAI semantic conventions.

Needs the ``otel`` extra (``opentelemetry-api``). `instrument` adds an `OTelListener` to an
Agent through its public listener API; the listener turns what the Agent tells it into
spans, so the Agent itself knows nothing of tracing and an Agent with no listener pays
nothing for it:

- ``invoke_agent {name}`` (INTERNAL): one per stretch of a turn's work, from the transition
  that makes the run ``busy`` (``submit``, ``resolve_action``, ``provide_input``, ``resume``)
  to the one that leaves it (``complete``, ``fail``, ``cancel``, ``need_action``,
  ``need_input``, ``pause``); a turn that waits for an approval or an answer is two or more
  such spans with the same ``agentfsm.turn``. A cancelled or expired wait is a span of its own.
  Its status is ERROR when the turn failed.
- ``chat {model}`` (CLIENT): one per model call, a child of the turn's span, with the
  model, token usage and finish reason; ERROR when the call failed for good.
- ``execute_tool {tool}`` (INTERNAL): one per tool call answered, with the tool's name,
  the call id and how it ended; ERROR unless it succeeded.
- Each transition of either machine is an event ``agentfsm.transition`` on the turn's span,
  with the machine, the event, the source and target states and the sequence number.

Spans are timed from the run's clock (the events' and trace entries' ``at``), so a run
with a fake clock gives reproducible spans.
"""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

from agentfsm.agent.core import Agent
from agentfsm.agent.vocabulary import AgentEvent
from agentfsm.fsm.trace import LLMCallTrace, ToolExecutionTrace
from agentfsm.states.events import Event
from agentfsm.states.names import LoopEvent, MachineName, RunState
from agentfsm.tools.results import ToolStatus

__all__ = ["TRANSITION_EVENT", "OTelListener", "instrument"]

TRANSITION_EVENT = "agentfsm.transition"
"""The name of the span event each transition becomes."""

_INSTRUMENTATION = "agentfsm"
_ENDING = frozenset({RunState.COMPLETED, RunState.FAILED})


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


class OTelListener:
    """An Agent listener that records the run as OpenTelemetry spans (see the module).

    Args:
        tracer: Where spans go; None for the global tracer provider's ``agentfsm`` tracer
            (a no-op until the application configures OpenTelemetry).
        agent_name: ``gen_ai.agent.name`` and the turn spans' name suffix.
    """

    __slots__ = ("_model", "_started", "_tracer", "_turn", "agent_name")

    def __init__(self, tracer: Tracer | None = None, *, agent_name: str = "agentfsm") -> None:
        if not isinstance(agent_name, str) or not agent_name:
            raise ValueError(f"agent_name must be a non-empty string, not {agent_name!r}")
        self._tracer = tracer if tracer is not None else trace.get_tracer(_INSTRUMENTATION)
        self.agent_name = agent_name
        """``gen_ai.agent.name``."""
        self._turn: Span | None = None
        self._started = 0.0
        """When the model call in flight began (the transition before it)."""
        self._model = ""

    def __call__(self, item: AgentEvent) -> None:
        """Record one transition or trace entry."""
        if isinstance(item, Event):
            self._transition(item)
            return
        if self._turn is not None:
            self._turn.set_attribute("agentfsm.turn", item.turn)
        if isinstance(item, LLMCallTrace):
            self._chat(item)
        elif isinstance(item, ToolExecutionTrace):
            self._tool(item)

    def _transition(self, event: Event) -> None:
        if event.machine == MachineName.CONVERSATION:
            return
        opens = event.machine == MachineName.RUN and self._turn is None
        if opens and (event.target == RunState.BUSY or event.target in _ENDING):
            self._open(event)
        span = self._turn
        if span is None:
            return  # start, shutdown, or a pause / resume between turns: no turn's work
        span.add_event(
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
            self._failed_chat(span, event)
        self._started = event.at
        if event.machine == MachineName.RUN and event.target != RunState.BUSY:
            self._close(span, event)

    def _open(self, event: Event) -> None:
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": self.agent_name,
            "gen_ai.conversation.id": event.run_id,
            "agentfsm.run_id": event.run_id,
            "agentfsm.entered_by": event.event,
        }
        self._turn = self._tracer.start_span(
            f"invoke_agent {self.agent_name}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=_ns(event.at),
        )

    def _close(self, span: Span, event: Event) -> None:
        span.set_attribute("agentfsm.state", event.target)
        if event.target == RunState.FAILED:
            error_type = event.data.get("error_type") or event.event
            span.set_attribute("error.type", str(error_type))
            span.set_status(Status(StatusCode.ERROR, str(event.data.get("message", error_type))))
        span.end(end_time=_ns(event.at))
        self._turn = None

    def _child(self, name: str, kind: SpanKind, start: float) -> Span:
        parent = trace.set_span_in_context(self._turn) if self._turn is not None else None
        return self._tracer.start_span(name, context=parent, kind=kind, start_time=_ns(start))

    def _chat(self, entry: LLMCallTrace) -> None:
        self._model = entry.model
        span = self._child(f"chat {entry.model}", SpanKind.CLIENT, entry.at - entry.duration)
        attributes: Mapping[str, AttributeValue] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": entry.model,
            "gen_ai.response.model": entry.model,
            "gen_ai.response.finish_reasons": (entry.finish_reason,),
            "agentfsm.turn": entry.turn,
            "agentfsm.iteration": entry.iteration,
            "agentfsm.tool_call_count": entry.tool_call_count,
        }
        span.set_attributes(attributes)
        if entry.usage is not None:
            span.set_attribute("gen_ai.usage.input_tokens", entry.usage.prompt_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", entry.usage.completion_tokens)
        span.end(end_time=_ns(entry.at))

    def _failed_chat(self, turn: Span, event: Event) -> None:
        model = self._model or "model"
        span = self._child(f"chat {model}", SpanKind.CLIENT, self._started)
        span.set_attribute("gen_ai.operation.name", "chat")
        error_type = str(event.data.get("error_type", "ModelError"))
        span.set_attribute("error.type", error_type)
        span.set_status(Status(StatusCode.ERROR, str(event.data.get("message", error_type))))
        span.end(end_time=_ns(event.at))

    def _tool(self, entry: ToolExecutionTrace) -> None:
        span = self._child(
            f"execute_tool {entry.name}", SpanKind.INTERNAL, entry.at - entry.duration
        )
        span.set_attributes(
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": entry.name,
                "gen_ai.tool.call.id": entry.call_id,
                "gen_ai.tool.type": "function",
                "agentfsm.tool.status": str(entry.status),
                "agentfsm.turn": entry.turn,
                "agentfsm.iteration": entry.iteration,
            }
        )
        if entry.status != ToolStatus.SUCCESS:
            span.set_attribute("error.type", entry.error_type or str(entry.status))
            message = entry.result.error.message if entry.result.error else str(entry.status)
            span.set_status(Status(StatusCode.ERROR, message))
        span.end(end_time=_ns(entry.at))


def instrument(
    agent: Agent, tracer: Tracer | None = None, *, agent_name: str = "agentfsm"
) -> OTelListener:
    """Trace ``agent``'s runs from now on; returns the listener (`Agent.remove_listener` stops it).

    Args:
        agent: The Agent to trace.
        tracer: Where spans go; None for the global tracer provider's ``agentfsm`` tracer.
        agent_name: ``gen_ai.agent.name`` and the turn spans' name suffix.
    """
    if not isinstance(agent, Agent):
        raise TypeError(f"agent must be an Agent, not {type(agent).__name__}")
    listener = OTelListener(tracer, agent_name=agent_name)
    agent.add_listener(listener)
    return listener
