"""How the loopback server answers one chat completions request with one step of its script."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentfsm.llm.base import Usage
from agentfsm.testing import _chat_wire as wire
from agentfsm.testing._steps import (
    CutConnection,
    Disconnect,
    ErrorResponse,
    MalformedBody,
    MalformedChunk,
    RecordedRequest,
    Reply,
    Step,
    TruncatedStream,
)

if TYPE_CHECKING:
    from agentfsm.testing.openai_server import _Handler


@dataclass(slots=True)
class ChatAnswer:
    """How one request is answered by one step."""

    handler: _Handler
    number: int
    model: str
    request: RecordedRequest

    def send(self, step: Step) -> None:
        if isinstance(step, Reply | ErrorResponse) and step.delay > 0:
            self.handler.server.stopping.wait(step.delay)
        if isinstance(step, Reply):
            self._reply(step)
        elif isinstance(step, ErrorResponse):
            headers = dict(step.headers)
            if step.retry_after is not None:
                headers["Retry-After"] = step.retry_after
            self.handler._send_json(step.status, wire.error_body(step.message), headers)
        elif isinstance(step, Disconnect):
            self.handler.drop()
        elif isinstance(step, TruncatedStream):
            self._truncated(step.reply, step.at)
        elif isinstance(step, MalformedChunk):
            self._malformed_chunk(step)
        elif isinstance(step, CutConnection):
            self._cut(step.reply)
        elif isinstance(step, MalformedBody):
            kind = "text/event-stream" if self.request.stream else "application/json"
            text = f"data: {step.text}\n\n" if self.request.stream else step.text
            self.handler._send_bytes(200, text.encode(), kind)
        else:
            self._empty()

    def _reply(self, reply: Reply) -> None:
        finish = wire.finish_reason_of(reply.tool_calls, reply.finish_reason)
        if self.request.stream:
            events = wire.chunks(
                self.number,
                self.model,
                reply.content,
                reply.tool_calls,
                finish,
                self._usage(reply),
            )
            self.handler._send_bytes(200, wire.sse(events, done=True), "text/event-stream")
            return
        body = wire.completion(
            self.number, self.model, reply.content, reply.tool_calls, finish, reply.usage
        )
        self.handler._send_json(200, body)

    def _usage(self, reply: Reply) -> Usage | None:
        options = self.request.json.get("stream_options")
        wanted = isinstance(options, dict) and options.get("include_usage") is True
        return reply.usage if wanted else None

    def _truncated(self, reply: Reply, at: str) -> None:
        if self.request.stream:  # (the chat format's; see agentfsm.testing._responses_wire)
            finish = wire.finish_reason_of(reply.tool_calls, reply.finish_reason)
            events = wire.chunks(
                self.number,
                self.model,
                reply.content,
                reply.tool_calls,
                finish if at == "finish" else None,
                None,  # (no usage chunk: it comes after the finish reason)
            )
            payload = wire.sse(events if at != "start" else [], done=False)
            self.handler._send_bytes(200, payload, "text/event-stream", close_delimited=True)
            return
        finish = wire.finish_reason_of(reply.tool_calls, reply.finish_reason)
        whole = json.dumps(
            wire.completion(
                self.number, self.model, reply.content, reply.tool_calls, finish, reply.usage
            )
        ).encode()
        payload = whole[: len(whole) // 2]
        self.handler._send_bytes(200, payload, "application/json", close_delimited=True)

    def _body(self, reply: Reply, *, done: bool = True) -> bytes:
        """The reply as this request asked for it: server-sent events, or one JSON body."""
        finish = wire.finish_reason_of(reply.tool_calls, reply.finish_reason)
        if self.request.stream:
            events = wire.chunks(
                self.number, self.model, reply.content, reply.tool_calls, finish, None
            )
            return wire.sse(events, done=done)
        return json.dumps(
            wire.completion(
                self.number, self.model, reply.content, reply.tool_calls, finish, reply.usage
            )
        ).encode()

    def _malformed_chunk(self, step: MalformedChunk) -> None:
        if self.request.stream:
            finish = wire.finish_reason_of(step.reply.tool_calls, step.reply.finish_reason)
            events = wire.chunks(
                self.number, self.model, step.reply.content, step.reply.tool_calls, finish, None
            )
            payload = wire.sse(events[:-1], done=False) + f"data: {step.text}\n\n".encode()
            payload += b"data: [DONE]\n\n"
            self.handler._send_bytes(200, payload, "text/event-stream")
            return
        whole = self._body(step.reply)
        self.handler._send_bytes(200, whole[:-1] + step.text.encode(), "application/json")

    def _cut(self, reply: Reply) -> None:
        whole = self._body(reply)
        kind = "text/event-stream" if self.request.stream else "application/json"
        handler = self.handler
        handler.send_response(200)
        handler.send_header("Content-Type", kind)
        handler.send_header("Content-Length", str(len(whole) * 2))  # more than will come
        handler.end_headers()
        handler.wfile.write(whole[: max(len(whole) * 2 // 3, 1)])
        handler.wfile.flush()
        handler.drop()

    def _empty(self) -> None:
        if self.request.stream:
            self.handler._send_bytes(200, wire.sse([], done=True), "text/event-stream")
            return
        self.handler._send_json(200, wire.empty_completion(self.number, self.model))
