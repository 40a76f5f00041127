"""What tracing costs an Agent: a turn with no tracer, a no-op tracer and a recording one.

Turn: one ``submit`` whose model asks for a round of three no-op tool calls, then answers
(2 chat spans, 3 execute_tool spans, 1 invoke_agent span with its transition events).
Candidates: no listener at all (an Agent that is not instrumented: the code path of every
Agent without a tracer); a listener that does nothing (what telling any listener costs the
Agent, whatever it does); `agentfsm.serve.otel.instrument` with the global tracer while
OpenTelemetry is not configured (the API's no-op tracer); and with the SDK's tracer
provider exporting to memory through a simple span processor. All in one process,
interleaved in a rotating order after a warm-up, medians of several repetitions; no
store.

Run: ``.venv/bin/python benchmarks/bench_tracing.py``.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentfsm import Agent, ScriptedModel, tool
from agentfsm.llm.base import FinishReason, ModelResponse
from agentfsm.serve.otel import instrument
from agentfsm.states import Message, ToolCall

REPEATS = 15
TURNS = 200


@tool
def noop(n: int) -> int:
    """Do nothing."""
    return n


def reply(messages: list[Message], tools: object) -> ModelResponse:
    if messages[-1].role == "user":
        calls = tuple(
            ToolCall(id=f"c{i}", name="noop", arguments=f'{{"n": {i}}}') for i in range(3)
        )
        return ModelResponse(tool_calls=calls, finish_reason=FinishReason.TOOL_CALLS)
    return ModelResponse(content="done")


def untraced(agent: Agent) -> None:
    """No listener: an Agent that was never instrumented."""


def empty_listener(agent: Agent) -> None:
    """A listener that does nothing: what the Agent pays to tell any listener."""
    agent.add_listener(lambda item: None)


def noop_tracer(agent: Agent) -> None:
    """The global tracer with OpenTelemetry not configured: the API's no-op."""
    instrument(agent)


def recording(agent: Agent) -> None:
    """The SDK's tracer provider, spans exported to memory."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    instrument(agent, provider.get_tracer("bench"))


CANDIDATES: dict[str, Callable[[Agent], None]] = {
    "no tracer": untraced,
    "empty listener": empty_listener,
    "no-op tracer": noop_tracer,
    "SDK, in memory": recording,
}


def time_turns(setup: Callable[[Agent], None]) -> float:
    """µs per turn."""
    agent = Agent(ScriptedModel(fallback=reply), [noop])  # type: ignore[arg-type]
    setup(agent)
    agent.start()
    start = time.perf_counter()
    for n in range(TURNS):
        agent.submit(f"turn {n}")
        agent.reset()
    elapsed = time.perf_counter() - start
    agent.close()
    return elapsed / TURNS * 1e6


def main() -> None:
    samples: dict[str, list[float]] = {name: [] for name in CANDIDATES}
    for setup in CANDIDATES.values():
        time_turns(setup)  # warm up: imports, caches, the tracer provider's first span
    names = list(CANDIDATES)
    for repetition in range(REPEATS):
        turn = repetition % len(names)  # rotate the order
        for name in names[turn:] + names[:turn]:
            samples[name].append(time_turns(CANDIDATES[name]))
    base = statistics.median(samples["no tracer"])
    print(f"a turn of one 3-call tool round, traced (median of {REPEATS} x {TURNS} turns):")
    for name, values in samples.items():
        micros = statistics.median(values)
        print(f"  {name:<15} {micros:8.0f} µs/turn   {micros - base:+7.0f} µs vs no tracer")


if __name__ == "__main__":
    main()
