"""The chat completions wire format the loopback server speaks: bodies, chunks and errors.

Pure functions from a scripted reply to the JSON an OpenAI-compatible server would send,
kept apart from the socket code so each can be read on its own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from agentfsm.llm.base import Usage
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import ToolCall

_WORDS = re.compile(r"\s*\S+\s*")
ARGUMENT_PIECE = 8
"""Characters of tool-call arguments per streamed chunk (small, so they arrive in pieces)."""


def finish_reason_of(tool_calls: Sequence[ToolCall], finish_reason: str | None) -> str:
    """The finish reason a reply is sent with: the scripted one, or the natural one."""
    if finish_reason is not None:
        return finish_reason
    return "tool_calls" if tool_calls else "stop"


def usage_json(usage: Usage) -> JSONObject:
    """``usage`` as the API sends it (its details only when ``usage`` has them)."""
    sent: JSONObject = {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }
    if usage.cache_read_tokens is not None:
        sent["prompt_tokens_details"] = {"cached_tokens": usage.cache_read_tokens}
    if usage.reasoning_tokens is not None:
        sent["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    return sent


def completion(
    number: int,
    model: str,
    content: str | None,
    tool_calls: Sequence[ToolCall],
    finish_reason: str,
    usage: Usage | None,
) -> JSONObject:
    """A whole ``chat.completion`` object with one choice."""
    message: JSONObject = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [call.to_openai() for call in tool_calls]
    body: JSONObject = {
        "id": f"chatcmpl-loopback-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}
        ],
    }
    if usage is not None:
        body["usage"] = usage_json(usage)
    return body


def empty_completion(number: int, model: str) -> JSONObject:
    """A ``chat.completion`` object without any choice."""
    return {
        "id": f"chatcmpl-loopback-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [],
    }


def _chunk(number: int, model: str, choices: list[JSONValue]) -> JSONObject:
    return {
        "id": f"chatcmpl-loopback-{number}",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": choices,
    }


def _delta(number: int, model: str, delta: JSONObject, finish: str | None = None) -> JSONObject:
    return _chunk(number, model, [{"index": 0, "delta": delta, "finish_reason": finish}])


def _tool_call_deltas(number: int, model: str, tool_calls: Sequence[ToolCall]) -> list[JSONObject]:
    chunks: list[JSONObject] = []
    for index, call in enumerate(tool_calls):
        opening: JSONObject = {
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        chunks.append(_delta(number, model, {"tool_calls": [opening]}))
        for start in range(0, len(call.arguments), ARGUMENT_PIECE):
            piece = call.arguments[start : start + ARGUMENT_PIECE]
            more: JSONObject = {"index": index, "function": {"arguments": piece}}
            chunks.append(_delta(number, model, {"tool_calls": [more]}))
    return chunks


def chunks(
    number: int,
    model: str,
    content: str | None,
    tool_calls: Sequence[ToolCall],
    finish_reason: str | None,
    usage: Usage | None,
) -> list[JSONObject]:
    """The ``chat.completion.chunk`` objects of a streamed reply, in order.

    Text arrives a word at a time and each call's arguments a few characters at a time.
    With ``finish_reason`` None the stream is cut short: no finishing chunk and no usage.
    """
    out = [_delta(number, model, {"role": "assistant", "content": ""})]
    out += [_delta(number, model, {"content": word}) for word in _WORDS.findall(content or "")]
    out += _tool_call_deltas(number, model, tool_calls)
    if finish_reason is None:
        return out
    out.append(_delta(number, model, {}, finish_reason))
    if usage is not None:
        out.append({**_chunk(number, model, []), "usage": usage_json(usage)})
    return out


def sse(events: Sequence[JSONObject], *, done: bool) -> bytes:
    """Server-sent events carrying ``events``, ending with ``[DONE]`` when ``done``."""
    lines = [f"data: {json.dumps(event)}\n\n" for event in events]
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


def error_body(message: str) -> JSONObject:
    """An error object in the shape the API uses."""
    return {"error": {"message": message, "type": "loopback_error", "param": None, "code": None}}
