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
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler, HTTPServer
from types import MappingProxyType, TracebackType

from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.testing import _chat_wire as wire
from agentfsm.testing._anthropic_wire import AnthropicAnswer
from agentfsm.testing._chat_answer import ChatAnswer
from agentfsm.testing._responses_wire import ResponsesAnswer
from agentfsm.testing._steps import (
    CutConnection,
    Disconnect,
    EmptyChoices,
    ErrorResponse,
    MalformedBody,
    MalformedChunk,
    RecordedRequest,
    Reply,
    Responder,
    Step,
    TruncatedStream,
)

__all__ = [
    "CHAT_PATH",
    "HOST",
    "MESSAGES_PATH",
    "RESPONSES_PATH",
    "CutConnection",
    "Disconnect",
    "EmptyChoices",
    "ErrorResponse",
    "LoopbackOpenAIServer",
    "MalformedBody",
    "MalformedChunk",
    "RecordedRequest",
    "Reply",
    "Responder",
    "Step",
    "TruncatedStream",
]

HOST = "127.0.0.1"
"""The only address the server binds."""
CHAT_PATH = "/v1/chat/completions"
"""The chat completions path (`agentfsm.OpenAIModel`)."""
RESPONSES_PATH = "/v1/responses"
"""The Responses API's path (`agentfsm.llm.OpenAIResponsesModel`)."""
MESSAGES_PATH = "/v1/messages"
"""Anthropic's Messages API path (`agentfsm.llm.AnthropicModel`: its ``base_url`` is the
server's root, ``server.url`` without ``/v1``); any other path answers 404."""


_ANSWERS: dict[str, type[ChatAnswer]] = {
    CHAT_PATH: ChatAnswer,
    RESPONSES_PATH: ResponsesAnswer,
    MESSAGES_PATH: AnthropicAnswer,
}
"""How each served path is answered: each wire format in its own module."""


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
        if self.path not in _ANSWERS:
            served = ", ".join(_ANSWERS)
            self._send_json(404, wire.error_body(f"loopback server serves only {served}"))
            return
        owner = self.server.owner
        number, step = owner._record(request)
        if step is None:
            self._send_json(400, wire.error_body(owner._exhausted_message()))
            return
        model = request.json.get("model")
        answer = _ANSWERS[self.path]
        answer(self, number, model if isinstance(model, str) else owner._model, request).send(step)

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
