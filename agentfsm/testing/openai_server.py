"""A loopback OpenAI-compatible server that answers from a script, for end-to-end tests.

`LoopbackOpenAIServer` listens on ``127.0.0.1`` (an ephemeral port, never another address)
and serves ``POST /v1/chat/completions`` — as JSON, or as server-sent events when the
request asks for ``"stream": true`` — with the next step of its script: a `Reply`, or a
fault (`ErrorResponse`, `Disconnect`, `TruncatedStream`, `MalformedBody`, `MalformedChunk`,
`CutConnection`, `EmptyChoices`).
It records every request it receives, so a test can assert how many attempts were made and
exactly what was sent. Point the real ``openai`` client, or `agentfsm.OpenAIModel`, at
``server.url``::

    with LoopbackOpenAIServer([Reply("Hello!")]) as server:
        model = OpenAIModel("gpt-test", base_url=server.url, api_key="test")
        ...

Each connection is served by a thread of its own; `stop` (or leaving the ``with`` block)
closes every connection and joins every thread, so nothing outlives the server.
"""

from __future__ import annotations

import contextlib
import json
import socket
import socketserver
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from types import MappingProxyType, TracebackType

from agentfsm.llm.base import Usage
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import ToolCall
from agentfsm.testing import _chat_wire as wire

HOST = "127.0.0.1"
"""The only address the server binds."""
CHAT_PATH = "/v1/chat/completions"
"""The one path served; any other answers 404."""


@dataclass(frozen=True, slots=True)
class Reply:
    """A successful completion: text and/or tool calls.

    Attributes:
        content: The text, if any.
        tool_calls: The calls, in order (their ``arguments`` are sent exactly as given).
        finish_reason: Sent as is; by default ``"tool_calls"`` when there are calls, else
            ``"stop"``. Use ``"length"`` or ``"content_filter"`` for those faults.
        usage: Token counts to report, or None to report none.
        delay: Seconds to wait before answering (keep it tiny: for read-timeout tests).
    """

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    usage: Usage | None = None
    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    """An HTTP error status with an error body in the API's shape.

    Attributes:
        status: The HTTP status, e.g. 429 or 503.
        retry_after: The ``Retry-After`` header (seconds or an HTTP date), if any.
        message: The error message in the body.
        headers: More headers to send.
        delay: Seconds to wait before answering.
    """

    status: int
    retry_after: str | None = None
    message: str = "scripted error"
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class Disconnect:
    """Close the connection without answering (the client sees a connection error)."""


@dataclass(frozen=True, slots=True)
class TruncatedStream:
    """Send the reply's chunks, then end the body cleanly without ``[DONE]``.

    Meant for streaming requests; a plain request gets the first half of the JSON body.

    Attributes:
        reply: What the stream starts to say.
        at: Where the body ends: ``"middle"`` (the default) after the reply's chunks but
            before its finish reason; ``"start"`` before the first chunk (a 200 with an
            empty event stream); ``"finish"`` after the finish reason, before the usage
            chunk and ``[DONE]``.
    """

    reply: Reply = field(default_factory=lambda: Reply("It was cut"))
    at: str = "middle"


@dataclass(frozen=True, slots=True)
class MalformedBody:
    """Answer 200 with a body that is not valid JSON (or, streaming, not valid event data).

    Attributes:
        text: The body.
    """

    text: str = '{"choices": [{"index": 0, "message": '


@dataclass(frozen=True, slots=True)
class MalformedChunk:
    """Stream the reply's chunks but for its last, then one chunk that is not JSON, then end.

    Meant for streaming requests; a plain request gets the reply's body with its last
    character replaced by ``text``.

    Attributes:
        reply: What the stream starts to say.
        text: The malformed chunk's data.
    """

    reply: Reply = field(default_factory=lambda: Reply("It was garbled"))
    text: str = '{"choices": [{"index": 0, "delta": '


@dataclass(frozen=True, slots=True)
class CutConnection:
    """Promise a longer body than is sent, send part of the reply, then drop the connection.

    The client sees the connection fail in the middle of the body (a protocol error), as
    when a proxy or the network cuts a long answer.

    Attributes:
        reply: What the body starts to say.
    """

    reply: Reply = field(default_factory=lambda: Reply("It was cut off mid-"))


@dataclass(frozen=True, slots=True)
class EmptyChoices:
    """Answer 200 with a completion that has no choices (streaming: no choice chunks)."""


Step = (
    Reply
    | ErrorResponse
    | Disconnect
    | TruncatedStream
    | MalformedBody
    | MalformedChunk
    | CutConnection
    | EmptyChoices
)
"""One scripted answer of the server."""

Responder = Callable[["RecordedRequest"], Step]
"""Answers a request from what it holds (its messages, its tools): for a script that must
not depend on how many requests came before, such as a run resumed after a crash, which
asks its model again for the reply it lost."""


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request the server received.

    Attributes:
        method: The HTTP method.
        path: The request path.
        headers: The headers, names lower-cased.
        body: The parsed JSON body, or None if it was not JSON.
    """

    method: str
    path: str
    headers: Mapping[str, str]
    body: JSONValue

    @property
    def json(self) -> JSONObject:
        """The body as a JSON object (empty if it was something else)."""
        return self.body if isinstance(self.body, dict) else {}

    @property
    def messages(self) -> list[JSONValue]:
        """The ``messages`` sent."""
        messages = self.json.get("messages")
        return messages if isinstance(messages, list) else []

    @property
    def tools(self) -> list[JSONValue]:
        """The ``tools`` sent (empty when none were)."""
        tools = self.json.get("tools")
        return tools if isinstance(tools, list) else []

    @property
    def response_format(self) -> JSONObject | None:
        """The ``response_format`` sent (a typed Agent's structured output), or None."""
        shape = self.json.get("response_format")
        return shape if isinstance(shape, dict) else None

    @property
    def stream(self) -> bool:
        """Whether the request asked for a stream."""
        return self.json.get("stream") is True


class LoopbackOpenAIServer:
    """An OpenAI-compatible chat completions server on 127.0.0.1, answering from a script.

    Steps are used one per request, in order; a request after the last step is answered
    400 with a message saying how many steps were scripted. Use it as a context manager,
    or call `start` and `stop`.

    Args:
        steps: The script.
        model: The model name reported when a request names none.
        responder: Answers every request after the script ran out (by default such a
            request is answered 400).
    """

    def __init__(
        self,
        steps: Iterable[Step] = (),
        *,
        model: str = "loopback",
        responder: Responder | None = None,
    ) -> None:
        if responder is not None and not callable(responder):
            raise TypeError(
                f"responder must be a callable taking a RecordedRequest, not {responder!r}"
            )
        self._responder = responder
        self._steps = list(steps)
        self._scripted = len(self._steps)
        self._model = model
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._http: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL to give a client: ``http://127.0.0.1:<port>/v1``."""
        if self._http is None:
            raise RuntimeError("the loopback server is not running; call start() first")
        return f"http://{HOST}:{self._http.server_port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def remaining(self) -> int:
        """How many scripted steps are still unused."""
        with self._lock:
            return len(self._steps)

    def add(self, *steps: Step) -> None:
        """Append ``steps`` to the script."""
        with self._lock:
            self._steps.extend(steps)
            self._scripted += len(steps)

    def start(self) -> LoopbackOpenAIServer:
        """Bind an ephemeral port on 127.0.0.1 and start serving in a background thread."""
        if self._http is not None:
            raise RuntimeError("the loopback server is already running")
        self._http = _HTTPServer(self)
        self._thread = threading.Thread(
            target=self._http.serve_forever,
            kwargs={"poll_interval": 0.01},
            name=f"loopback-openai-{self._http.server_port}",
            # `stop` joins it; a daemon, so a server never stopped cannot hold up exit.
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close every connection and join every thread (idempotent)."""
        http, thread = self._http, self._thread
        if http is None or thread is None:
            return
        http.shutdown()
        http.close_connections()
        http.server_close()
        thread.join()
        self._http = self._thread = None

    def __enter__(self) -> LoopbackOpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _record(self, request: RecordedRequest) -> tuple[int, Step | None]:
        """Record ``request``; return its number (from 1) and the step that answers it."""
        with self._lock:
            self._requests.append(request)
            step = self._steps.pop(0) if self._steps else None
            number = len(self._requests)
        if step is None and self._responder is not None:
            step = self._responder(request)
        return number, step

    def _exhausted_message(self) -> str:
        with self._lock:
            scripted = self._scripted
        return f"loopback server: no scripted step left ({scripted} were scripted)"


class _HTTPServer(socketserver.ThreadingMixIn, HTTPServer):
    """The socket side: one non-daemon thread per connection, all joined on close."""

    daemon_threads = False
    block_on_close = True
    allow_reuse_address = False

    def __init__(self, owner: LoopbackOpenAIServer) -> None:
        self.owner = owner
        self.stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__((HOST, 0), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's FQDN, a DNS lookup a loopback server
        # has no use for.
        socketserver.TCPServer.server_bind(self)
        self.server_name = HOST
        self.server_port = self.socket.getsockname()[1]

    def process_request(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: object
    ) -> None:
        if isinstance(request, socket.socket):
            with self._connections_lock:
                self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: socket.socket | tuple[bytes, socket.socket]) -> None:
        if isinstance(request, socket.socket):
            with self._connections_lock:
                self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Wake every connection thread (idle keep-alive reads, delays) so it can end."""
        self.stopping.set()
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):  # already closed by its own thread
                connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: object, client_address: object) -> None:
        # A client that gave up (a read timeout) makes our late write fail; that is the
        # scenario under test, not a server failure worth a traceback.
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out as two writes; without this, Nagle holds the body back until
    # the client acknowledges the headers, which its delayed ACK puts off by ~40 ms.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body: JSONValue = json.loads(raw)
        except ValueError:
            body = None
        request = RecordedRequest(
            method="POST",
            path=self.path,
            headers=MappingProxyType({k.lower(): v for k, v in self.headers.items()}),
            body=body,
        )
        if self.path != CHAT_PATH:
            self._send_json(404, wire.error_body(f"loopback server serves only {CHAT_PATH}"))
            return
        owner = self.server.owner
        number, step = owner._record(request)
        if step is None:
            self._send_json(400, wire.error_body(owner._exhausted_message()))
            return
        model = request.json.get("model")
        _Answer(self, number, model if isinstance(model, str) else owner._model, request).send(
            step
        )

    def _send_json(
        self, status: int, body: JSONObject, headers: Mapping[str, str] = MappingProxyType({})
    ) -> None:
        self._send_bytes(status, json.dumps(body).encode(), "application/json", headers)

    def _send_bytes(
        self,
        status: int,
        payload: bytes,
        content_type: str,
        headers: Mapping[str, str] = MappingProxyType({}),
        *,
        close_delimited: bool = False,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in headers.items():
            self.send_header(name, value)
        if close_delimited:
            # No length: the body ends where the connection does, cleanly for HTTP.
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def drop(self) -> None:
        """Close the connection without a word."""
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)


@dataclass(slots=True)
class _Answer:
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
        if self.request.stream:
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
