"""Anthropic's Messages API wire format, for the loopback server (``POST /v1/messages``).

A `Reply` becomes a ``message`` (a ``text`` block, a ``tool_use`` block per call), or,
streaming, server-sent events: ``message_start``, each block's ``content_block_start``,
its deltas (``text_delta`` a word at a time, ``input_json_delta`` a few characters at a
time) and ``content_block_stop``, then ``message_delta`` (the ``stop_reason`` and output
usage) and ``message_stop``. The finish reasons ``length`` and ``content_filter`` are sent
as ``max_tokens`` and ``refusal``. A truncated stream ends before ``message_stop``
(``at="finish"``), before ``message_delta`` (``"middle"``), or before its first event.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.testing import _chat_wire as chat
from agentfsm.testing._chat_answer import ChatAnswer
from agentfsm.testing._steps import MalformedChunk, Reply

_STOP = {"length": "max_tokens", "content_filter": "refusal", "tool_calls": "tool_use"}


def stop_reason(reply: Reply) -> str:
    """The reply's ``stop_reason``."""
    if reply.finish_reason is None:
        return "tool_use" if reply.tool_calls else "end_turn"
    return _STOP.get(reply.finish_reason, reply.finish_reason)


def _input(arguments: str) -> JSONValue:
    try:
        parsed: JSONValue = json.loads(arguments or "{}")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _usage(reply: Reply, *, output: bool = True) -> JSONObject:
    usage = reply.usage
    return {
        "input_tokens": usage.prompt_tokens if usage else 0,
        "output_tokens": usage.completion_tokens if usage and output else 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def message(number: int, model: str, reply: Reply) -> JSONObject:
    """The ``message`` of a whole reply."""
    content: list[JSONValue] = []
    if reply.content is not None:
        content.append({"type": "text", "text": reply.content})
    content += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": _input(c.arguments)}
        for c in reply.tool_calls
    ]
    return {
        "id": f"msg_{number}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(reply),
        "stop_sequence": None,
        "usage": _usage(reply),
    }


def events(number: int, model: str, reply: Reply, *, cut: str | None = None) -> list[JSONObject]:
    """The stream's events; ``cut`` ends it early (``start``, ``middle`` or ``finish``)."""
    if cut == "start":
        return []
    head = {**message(number, model, reply), "content": [], "stop_reason": None}
    out: list[JSONObject] = [
        {"type": "message_start", "message": {**head, "usage": _usage(reply, output=False)}}
    ]
    index = 0
    if reply.content is not None:
        block: JSONObject = {"type": "text", "text": ""}
        out.append({"type": "content_block_start", "index": index, "content_block": block})
        for word in chat._WORDS.findall(reply.content):
            delta: JSONObject = {"type": "text_delta", "text": word}
            out.append({"type": "content_block_delta", "index": index, "delta": delta})
        out.append({"type": "content_block_stop", "index": index})
        index += 1
    for call in reply.tool_calls:
        use: JSONObject = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        out.append({"type": "content_block_start", "index": index, "content_block": use})
        for start in range(0, len(call.arguments), chat.ARGUMENT_PIECE):
            piece = call.arguments[start : start + chat.ARGUMENT_PIECE]
            part: JSONObject = {"type": "input_json_delta", "partial_json": piece}
            out.append({"type": "content_block_delta", "index": index, "delta": part})
        out.append({"type": "content_block_stop", "index": index})
        index += 1
    if cut == "middle":
        return out
    out.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(reply), "stop_sequence": None},
            "usage": {"output_tokens": _usage(reply)["output_tokens"]},
        }
    )
    if cut != "finish":
        out.append({"type": "message_stop"})
    return out


def sse(stream: Sequence[JSONObject]) -> bytes:
    """Server-sent events, each named by its type (no ``[DONE]``)."""
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in stream).encode()


@dataclass(slots=True)
class AnthropicAnswer(ChatAnswer):
    """How one ``POST /v1/messages`` is answered by one step."""

    def _reply(self, reply: Reply) -> None:
        if self.request.stream:
            payload = sse(events(self.number, self.model, reply))
            self.handler._send_bytes(200, payload, "text/event-stream")
            return
        self.handler._send_json(200, message(self.number, self.model, reply))

    def _truncated(self, reply: Reply, at: str) -> None:
        if self.request.stream:
            payload = sse(events(self.number, self.model, reply, cut=at))
            self.handler._send_bytes(200, payload, "text/event-stream", close_delimited=True)
            return
        whole = json.dumps(message(self.number, self.model, reply)).encode()
        self.handler._send_bytes(
            200, whole[: len(whole) // 2], "application/json", close_delimited=True
        )

    def _body(self, reply: Reply, *, done: bool = True) -> bytes:
        if self.request.stream:
            return sse(events(self.number, self.model, reply, cut=None if done else "finish"))
        return json.dumps(message(self.number, self.model, reply)).encode()

    def _malformed_chunk(self, step: MalformedChunk) -> None:
        if self.request.stream:
            good = events(self.number, self.model, step.reply)[:-1]
            payload = sse(good) + f"event: message_stop\ndata: {step.text}\n\n".encode()
            self.handler._send_bytes(200, payload, "text/event-stream")
            return
        whole = self._body(step.reply)
        self.handler._send_bytes(200, whole[:-1] + step.text.encode(), "application/json")

    def _empty(self) -> None:
        body = message(self.number, self.model, Reply(content=""))
        if self.request.stream:
            self.handler._send_bytes(
                200, sse(events(self.number, self.model, Reply())), "text/event-stream"
            )
            return
        self.handler._send_json(200, body)
