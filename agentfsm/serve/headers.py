"""The security headers every response of the live view carries (`SecurityHeaders`).

The view shows what runs stored, some of it written by tools and models (a message, a
tool's content for the user, an image). The page's script puts all of it in the document as
text or as an ``<img>`` of a checked raster image; these headers are the second line, in
case a bug lets something through:

- ``Content-Security-Policy``: scripts, styles, fetches and event streams only from the
  view itself (no inline script or style, no ``eval``), images from the view or ``data:``
  URLs, no plugins (``object-src 'none'``), no ``<base>``, forms only to the view, and no
  page of another site may frame it (``frame-ancestors 'none'``, against clickjacking the
  operator's buttons).
- ``X-Content-Type-Options: nosniff``: a JSON answer or an event stream is never read as
  a script or a page.
- ``Referrer-Policy: no-referrer``: the view's URLs (a run's id) never leave with a link.
- ``X-Frame-Options: DENY``: ``frame-ancestors`` for browsers that predate it.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CONTENT_SECURITY_POLICY", "SECURITY_HEADERS", "SecurityHeaders"]

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)
"""The view's policy: its pages load their script and style sheet from ``static/``, fetch
and stream from ``api/``, and show images only as ``data:`` URLs the script builds."""

SECURITY_HEADERS: tuple[tuple[str, str], ...] = (
    ("content-security-policy", CONTENT_SECURITY_POLICY),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("x-frame-options", "DENY"),
)
"""The headers added to every HTTP response of the view (one the response sets is kept)."""

_NAMES = frozenset(name.encode("latin-1") for name, _ in SECURITY_HEADERS)


class SecurityHeaders:
    """An ASGI middleware that adds `SECURITY_HEADERS` to every HTTP response.

    It wraps the whole view, `agentfsm.serve.guard.Guard` included, so a refusal (403,
    415) carries them too, as do the JSON API and the Server-Sent Events streams.

    Args:
        app: The view's app.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; add the headers to the start of its response."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers} & _NAMES
                headers += [
                    (name.encode("latin-1"), value.encode("latin-1"))
                    for name, value in SECURITY_HEADERS
                    if name.encode("latin-1") not in present
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
