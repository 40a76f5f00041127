"""Whole numbers of agentfsm's metadata sent as JSON integers, not as ``5.0``.

A2A carries metadata as a protocol-buffer ``Struct``, whose numbers are all doubles: the
SDK writes a transition's ``metadata.agentfsm.seq`` as ``5.0``, which a typed client reads
as a float. `IntegerMetadata` (an ASGI middleware) rewrites the JSON the server sends (a
response body, or each event of a stream) so that every whole number inside an
``"agentfsm"`` object is an integer again. Nothing else of the message is touched.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["IntegerMetadata", "integral"]

_JSON_TYPES = (b"application/json", b"application/a2a+json")


def integral(value: object, inside: bool = False) -> object:
    """``value`` with each whole float inside an ``"agentfsm"`` object made an int."""
    if isinstance(value, dict):
        return {key: integral(item, inside or key == "agentfsm") for key, item in value.items()}
    if isinstance(value, list):
        return [integral(item, inside) for item in value]
    if inside and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _rewrite(text: bytes) -> bytes:
    if b'"agentfsm"' not in text:
        return text
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    return json.dumps(integral(parsed), ensure_ascii=False, separators=(",", ":")).encode()


def _rewrite_events(chunk: bytes) -> bytes:
    """Each ``data:`` line of a chunk of Server-Sent Events, rewritten."""
    lines = chunk.split(b"\n")
    for index, line in enumerate(lines):
        if line.startswith(b"data: "):
            lines[index] = b"data: " + _rewrite(line[6:].rstrip(b"\r"))
    return b"\n".join(lines)


class IntegerMetadata:
    """An ASGI middleware: whole numbers of ``"agentfsm"`` metadata sent as integers.

    Args:
        app: The A2A app.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; rewrite the JSON of its answer."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        kind = ""
        start: Message | None = None
        body = bytearray()

        async def sending(message: Message) -> None:
            nonlocal kind, start
            if message["type"] == "http.response.start":
                media = dict(message.get("headers", [])).get(b"content-type", b"")
                if media.startswith(b"text/event-stream"):
                    kind = "events"
                elif media.split(b";")[0].strip() in _JSON_TYPES:
                    kind, start = "json", message
                    return  # sent with the whole body, its length changed
                await send(message)
                return
            if message["type"] != "http.response.body" or not kind:
                await send(message)
                return
            if kind == "events":
                await send({**message, "body": _rewrite_events(message.get("body", b""))})
                return
            body.extend(message.get("body", b""))
            if message.get("more_body", False):
                return
            await _send_json(send, start, _rewrite(bytes(body)))

        await self.app(scope, receive, sending)


async def _send_json(send: Send, start: Message | None, body: bytes) -> None:
    assert start is not None
    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
    headers.append((b"content-length", str(len(body)).encode()))
    await send({**start, "headers": headers})
    await send({"type": "http.response.body", "body": body})
