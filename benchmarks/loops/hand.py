"""The limit: a hand-written loop doing the same work, and no more, in plain Python.

The conversation is a list of OpenAI-style message dicts; the model is a function returning
the next reply of its script; each tool call's arguments are parsed with ``json.loads``,
checked with the reused validator and passed to the body; the listener is told of each model
reply and each tool result.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from functools import cache
from typing import Any

from benchmarks.loops.workload import FINAL, PROMPT, ROUND_TEXT, Listener, call_id, run_tool

Message = dict[str, Any]


@cache
def script(n: int) -> tuple[Message, ...]:
    """The model's ``n`` replies for a run of ``n`` iterations, as assistant messages."""
    rounds = tuple(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id(i, k), "type": "function", "function": {"name": a, "arguments": t}}
                for k, (a, t) in enumerate(ROUND_TEXT)
            ],
        }
        for i in range(n - 1)
    )
    return (*rounds, {"role": "assistant", "content": FINAL, "tool_calls": []})


def _tool_messages(reply: Message, listener: Listener) -> list[Message]:
    answers = []
    for call in reply["tool_calls"]:
        function = call["function"]
        output = run_tool(function["name"], json.loads(function["arguments"]))
        answers.append({"role": "tool", "tool_call_id": call["id"], "content": output})
        listener(("tool", call["id"], output))
    return answers


def make_sync(listener: Listener) -> Callable[[int], str]:
    """A runner: one synchronous run of ``n`` iterations; returns the final text."""

    def run(n: int) -> str:
        replies = script(n)
        messages: list[Message] = [{"role": "user", "content": PROMPT}]
        for reply in replies:
            messages.append(reply)
            listener(("model", reply))
            if not reply["tool_calls"]:
                return str(reply["content"])
            messages.extend(_tool_messages(reply, listener))
        raise AssertionError("the script ended without a final text")

    return run


def make_async(listener: Listener, latency: float = 0.0) -> Callable[[int], Awaitable[str]]:
    """A runner: one async run of ``n`` iterations, the model awaiting ``latency`` seconds."""

    async def model(replies: tuple[Message, ...], iteration: int) -> Message:
        if latency:
            await asyncio.sleep(latency)
        return replies[iteration]

    async def run(n: int) -> str:
        replies = script(n)
        messages: list[Message] = [{"role": "user", "content": PROMPT}]
        for iteration in range(n):
            reply = await model(replies, iteration)
            messages.append(reply)
            listener(("model", reply))
            if not reply["tool_calls"]:
                return str(reply["content"])
            messages.extend(_tool_messages(reply, listener))
        raise AssertionError("the script ended without a final text")

    return run
