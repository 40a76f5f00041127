"""The Responses API's wire format, for the loopback server (``POST /v1/responses``).

A `Reply` becomes a ``response`` object (its text as a ``message`` output item, each tool
call a ``function_call`` item), or, streaming, server-sent events: ``response.created``,
then for each output item ``response.output_item.added``, its text a word at a time
(``response.output_text.delta``) or its arguments a few characters at a time
(``response.function_call_arguments.delta``), and at the end ``response.completed`` (or
``response.incomplete`` for the finish reasons ``length`` and ``content_filter``). The
faults are the chat format's, in this shape: a truncated stream ends before its last event.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from agentfsm.llm.base import Usage
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import ToolCall
from agentfsm.testing import _chat_wire as chat
from agentfsm.testing._chat_answer import ChatAnswer
from agentfsm.testing._steps import MalformedChunk, Reply

_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


def _usage(usage: Usage | None) -> JSONValue:
    if usage is None:
        return None
    return {
        "input_tokens": usage.prompt_tokens,
        "output_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens or 0},
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens or 0},
    }


def _items(number: int, content: str | None, tool_calls: Sequence[ToolCall]) -> list[JSONValue]:
    items: list[JSONValue] = []
    if content is not None:
        items.append(
            {
                "type": "message",
                "id": f"msg_{number}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": content, "annotations": []}],
            }
        )
    for index, call in enumerate(tool_calls):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{number}_{index}",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments,
                "status": "completed",
            }
        )
    return items


def response(
    number: int, model: str, reply: Reply, *, usage: Usage | None, reasoning: bool = False
) -> JSONObject:
    """The ``response`` object of a whole reply.

    With ``reasoning`` (the request asked for ``reasoning.encrypted_content``), a reply with
    tool calls starts with a reasoning item, as a reasoning model's does.
    """
    incomplete = _INCOMPLETE.get(reply.finish_reason or "")
    output = _items(number, reply.content, reply.tool_calls)
    if reasoning and reply.tool_calls:
        thought: JSONObject = {
            "type": "reasoning",
            "id": f"rs_{number}",
            "summary": [],
            "encrypted_content": f"encrypted-{number}",
        }
        output.insert(0, thought)
    return {
        "id": f"resp_{number}",
        "object": "response",
        "created_at": 0,
        "model": model,
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "error": None,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": _usage(usage),
    }


def events(
    number: int, model: str, reply: Reply, *, final: bool, reasoning: bool = False
) -> list[JSONObject]:
    """The stream's events, in order; without its last (``final`` False) it is cut."""
    out: list[JSONObject] = [
        {
            "type": "response.created",
            "response": {**response(number, model, Reply(), usage=None), "status": "in_progress"},
        }
    ]
    position = 0
    if reply.content is not None:
        item = f"msg_{number}"
        added: JSONObject = {
            "type": "message",
            "id": item,
            "status": "in_progress",
            "role": "assistant",
        }
        out.append({"type": "response.output_item.added", "output_index": 0, "item": added})
        for word in chat._WORDS.findall(reply.content):
            out.append(
                {
                    "type": "response.output_text.delta",
                    "item_id": item,
                    "output_index": 0,
                    "content_index": 0,
                    "delta": word,
                }
            )
        position = 1
    for index, call in enumerate(reply.tool_calls):
        item = f"fc_{number}_{index}"
        head: JSONObject = {
            "type": "function_call",
            "id": item,
            "call_id": call.id,
            "name": call.name,
            "arguments": "",
            "status": "in_progress",
        }
        at = position + index
        out.append({"type": "response.output_item.added", "output_index": at, "item": head})
        for start in range(0, len(call.arguments), chat.ARGUMENT_PIECE):
            piece = call.arguments[start : start + chat.ARGUMENT_PIECE]
            out.append(
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": item,
                    "output_index": at,
                    "delta": piece,
                }
            )
    if final:
        whole = response(number, model, reply, usage=reply.usage, reasoning=reasoning)
        kind = "response.incomplete" if whole["status"] == "incomplete" else "response.completed"
        out.append({"type": kind, "response": whole})
    return [{**event, "sequence_number": n} for n, event in enumerate(out)]


def sse(stream: Sequence[JSONObject]) -> bytes:
    """Server-sent events, each named by its type (the Responses API sends no ``[DONE]``)."""
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in stream).encode()


@dataclass(slots=True)
class ResponsesAnswer(ChatAnswer):
    """How one ``POST /v1/responses`` is answered by one step."""

    def _reply(self, reply: Reply) -> None:
        include = self.request.json.get("include")
        reasoning = isinstance(include, list) and "reasoning.encrypted_content" in include
        if self.request.stream:
            stream = events(self.number, self.model, reply, final=True, reasoning=reasoning)
            self.handler._send_bytes(200, sse(stream), "text/event-stream")
            return
        body = response(self.number, self.model, reply, usage=reply.usage, reasoning=reasoning)
        self.handler._send_json(200, body)

    def _truncated(self, reply: Reply, at: str) -> None:
        if self.request.stream:
            cut = events(self.number, self.model, reply, final=False)
            payload = sse(cut if at != "start" else [])
            self.handler._send_bytes(200, payload, "text/event-stream", close_delimited=True)
            return
        whole = json.dumps(response(self.number, self.model, reply, usage=reply.usage))
        payload = whole.encode()[: len(whole) // 2]
        self.handler._send_bytes(200, payload, "application/json", close_delimited=True)

    def _body(self, reply: Reply, *, done: bool = True) -> bytes:
        if self.request.stream:
            return sse(events(self.number, self.model, reply, final=done))
        return json.dumps(response(self.number, self.model, reply, usage=reply.usage)).encode()

    def _malformed_chunk(self, step: MalformedChunk) -> None:
        if self.request.stream:
            good = events(self.number, self.model, step.reply, final=True)[:-1]
            payload = sse(good) + f"event: response.completed\ndata: {step.text}\n\n".encode()
            self.handler._send_bytes(200, payload, "text/event-stream")
            return
        whole = self._body(step.reply)
        self.handler._send_bytes(200, whole[:-1] + step.text.encode(), "application/json")

    def _empty(self) -> None:
        body = response(self.number, self.model, Reply(), usage=None)
        if self.request.stream:
            final: JSONObject = {
                "type": "response.completed",
                "response": body,
                "sequence_number": 0,
            }
            self.handler._send_bytes(200, sse([final]), "text/event-stream")
            return
        self.handler._send_json(200, body)
