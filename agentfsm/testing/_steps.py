"""The loopback server's script: the steps it answers with, and the requests it records."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from agentfsm.llm.base import Usage
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import ToolCall


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
