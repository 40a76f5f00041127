"""The loop in pydantic-graph, idiomatically: two `BaseNode` classes, a graph built once.

``ModelNode`` asks the scripted model and goes to ``ToolsNode`` while the reply has tool
calls, else ends with the final text; ``ToolsNode`` parses and validates each call's
arguments with the shared validator, calls the body, and goes back to ``ModelNode``. The run
is driven with ``graph.iter`` and the listener is told of every step it yields.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_graph import BaseNode, End, GraphBuilder, GraphRunContext
from pydantic_graph.step import NodeStep

from benchmarks.loops.hand import script
from benchmarks.loops.workload import PROMPT, Listener, run_tool

Message = dict[str, Any]


@dataclass
class Conversation:
    """The graph's state: one run's messages and its script."""

    iterations: int
    latency: float = 0.0
    messages: list[Message] = field(default_factory=list)
    calls: int = 0


@dataclass
class ModelNode(BaseNode[Conversation, None, str]):
    """Ask the model for its next reply."""

    async def run(self, ctx: GraphRunContext[Conversation, None]) -> ToolsNode | End[str]:
        """Go to the tools while the reply asks for calls, else end with its text."""
        state = ctx.state
        if state.latency:
            await asyncio.sleep(state.latency)
        reply = script(state.iterations)[state.calls]
        state.calls += 1
        state.messages.append(reply)
        if reply["tool_calls"]:
            return ToolsNode()
        return End(str(reply["content"]))


@dataclass
class ToolsNode(BaseNode[Conversation, None, str]):
    """Run the round of tool calls of the last reply."""

    async def run(self, ctx: GraphRunContext[Conversation, None]) -> ModelNode:
        """Answer every call with a tool message, then back to the model."""
        messages = ctx.state.messages
        for call in messages[-1]["tool_calls"]:
            function = call["function"]
            output = run_tool(function["name"], json.loads(function["arguments"]))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})
        return ModelNode()


def build() -> Any:
    """The graph (built once, run per conversation)."""
    builder = GraphBuilder(state_type=Conversation, output_type=str)
    builder.add(
        builder.node(ModelNode),
        builder.node(ToolsNode),
        builder.edge_from(builder.start_node).to(NodeStep(ModelNode)),
    )
    return builder.build()


def make_async(listener: Listener, latency: float = 0.0) -> Callable[[int], Awaitable[str]]:
    """A runner: one ``graph.iter`` run, the listener told of each step."""
    graph = build()

    async def run(n: int) -> str:
        state = Conversation(n, latency, [{"role": "user", "content": PROMPT}])
        async with graph.iter(state=state, inputs=ModelNode()) as steps:
            async for step in steps:
                listener(step)
        return str(state.messages[-1]["content"])

    return run
