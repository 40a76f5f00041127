"""The peer of bench_temporal.py: pydantic-ai's Temporal durability on the same workload.

A module of its own, because Temporal workflows must be module-level classes (and
pydantic-ai's sandboxed workflow re-imports this module). Needs ``pydantic-ai-slim[temporal]``.
"""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import TemporalAgent
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from temporalio import workflow

ITERATIONS = 10


def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """One no-op tool call per iteration, then the answer."""
    done = sum(1 for m in messages for part in m.parts if isinstance(part, ToolReturnPart))
    if done < ITERATIONS - 1:
        return ModelResponse(parts=[ToolCallPart("noop", {"n": done}, tool_call_id=f"c{done}")])
    return ModelResponse(parts=[TextPart("done")])


peer = Agent(FunctionModel(answer), name="bench")


@peer.tool_plain
def noop(n: int) -> int:
    """Do nothing."""
    return n


durable = TemporalAgent(peer)


@workflow.defn(name="pydantic_ai_bench")
class BenchWorkflow:
    """One run of the peer agent."""

    @workflow.run
    async def run(self, prompt: str) -> str:
        """Run the agent on ``prompt``."""
        result = await durable.run(prompt)
        return str(result.output)
