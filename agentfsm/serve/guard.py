"""Who may use the live view: a token, the ``Host`` a request names, where an action comes from.

A page on another site can send requests to a server on the user's machine (a no-cors
``POST``), and a name the attacker controls can be made to resolve to 127.0.0.1 (DNS
rebinding). So, as Jupyter does, the view served by ``agentfsm ui`` checks three things
before any handler runs (`Guard`, an ASGI middleware):

- **The token.** A secret generated at start (or given) is printed in the URL the command
  shows (``http://127.0.0.1:8765/?token=…``). The first visit with ``?token=`` sets a
  cookie (``HttpOnly``, ``SameSite=Strict``) and redirects to the same URL without it;
  later requests carry the cookie, or the header ``Authorization: token …`` (or
  ``Bearer …``). Anything else is refused with 403.
- **The Host.** The name in the ``Host`` header must be one the view was bound to or
  allowed (``--allow-host``); a rebound name is refused with 403.
- **Actions** (every request that is not ``GET``/``HEAD``) need a JSON body
  (``Content-Type: application/json``, 415 otherwise: a form or a ``text/plain`` no-cors
  request from another page is not one) and, when the browser names one, an ``Origin``
  that is the view's own (403 otherwise).
"""

from __future__ import annotations

import hashlib
import hmac
import html
import json
from collections.abc import Iterable
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["LOOPBACK_HOSTS", "Guard", "cookie_name", "host_name"]

LOOPBACK_HOSTS: frozenset[str] = frozenset({"localhost", "127.0.0.1", "::1"})
"""The names of this machine that a view bound to a loopback address answers to."""

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def cookie_name(token: str) -> str:
    """The cookie holding ``token``, named after a hash of it.

    Two views on one host (different ports share cookies) do not overwrite each other's.
    """
    return "agentfsm_ui_" + hashlib.sha256(token.encode()).hexdigest()[:12]


def host_name(host: str) -> str:
    """The name in a ``Host`` header: no port, no brackets, lower case (``[::1]:80`` → ``::1``)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host[1:]
    if host.count(":") == 1:
        return host.partition(":")[0]
    return host


def _headers(scope: Scope) -> dict[str, str]:
    return {key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]}


def _cookie(header: str, name: str) -> str | None:
    cookies: SimpleCookie = SimpleCookie()
    try:
        cookies.load(header)
    except CookieError:
        return None
    morsel = cookies.get(name)
    return morsel.value if morsel is not None else None


def _same(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


class Guard:
    """An ASGI middleware that lets through only requests the view should answer.

    Args:
        app: The view's app.
        token: The secret every request must carry (None: no token is asked for; the
            application mounting the view authenticates its users itself).
        hosts: The names the ``Host`` header may give (None: any).
    """

    def __init__(
        self, app: ASGIApp, token: str | None = None, hosts: Iterable[str] | None = None
    ) -> None:
        self.app = app
        self.token = token
        self.hosts = None if hosts is None else frozenset(host_name(h) for h in hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a refused request with its reason; pass the others to the view."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            page = "text/html" in headers.get("accept", "")
            await _answer(send, *refusal, page=page)
            return
        if self.token is not None and scope["method"] in ("GET", "HEAD"):
            query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), True)
            if any(key == "token" for key, _ in query):
                await self._welcome(scope, send, [(k, v) for k, v in query if k != "token"])
                return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str, str] | None:
        host = headers.get("host", "")
        if self.hosts is not None and host_name(host) not in self.hosts:
            return (
                403,
                "ForeignHost",
                f"the Host {host!r} is not one this view serves ({', '.join(sorted(self.hosts))}"
                "); start it with --allow-host NAME to allow a name",
            )
        if self.token is not None and not self._carries_token(scope, headers):
            return (
                403,
                "NoToken",
                "this view needs its token: open the URL 'agentfsm ui' printed "
                "(…/?token=…), or send the header 'Authorization: token …'",
            )
        if scope["method"] not in _SAFE_METHODS:
            return _action_refusal(headers)
        return None

    def _carries_token(self, scope: Scope, headers: dict[str, str]) -> bool:
        assert self.token is not None
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() in ("token", "bearer") and _same(given.strip(), self.token):
            return True
        if _same(_cookie(headers.get("cookie", ""), cookie_name(self.token)), self.token):
            return True
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), True)
        return scope["method"] in ("GET", "HEAD") and any(
            key == "token" and _same(value, self.token) for key, value in query
        )

    async def _welcome(self, scope: Scope, send: Send, query: list[tuple[str, str]]) -> None:
        """Set the token's cookie; send the browser to the same URL without the token."""
        assert self.token is not None
        raw = scope.get("raw_path") or scope["path"].encode()
        location = raw.decode("latin-1") + ("?" + urlencode(query) if query else "")
        path = (scope.get("root_path") or "").rstrip("/") + "/"
        cookie = f"{cookie_name(self.token)}={self.token}; Path={path}; HttpOnly; SameSite=Strict"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", location.encode("latin-1")),
                    (b"set-cookie", cookie.encode("latin-1")),
                    (b"cache-control", b"no-store"),
                    (b"content-length", b"0"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})


def _action_refusal(headers: dict[str, str]) -> tuple[int, str, str] | None:
    media = headers.get("content-type", "").partition(";")[0].strip().lower()
    if media != "application/json":
        return (
            415,
            "NotJSON",
            f"an action's body must be JSON (Content-Type: application/json), not {media!r}",
        )
    origin = headers.get("origin")
    fetch_site = headers.get("sec-fetch-site", "same-origin")
    own = headers.get("host", "").strip().lower()
    if (origin is not None and urlsplit(origin).netloc.lower() != own) or fetch_site not in (
        "same-origin",
        "none",
    ):
        return (
            403,
            "ForeignOrigin",
            f"an action must come from the view's own page, not from {origin!r}",
        )
    return None


async def _answer(send: Send, status: int, kind: str, message: str, *, page: bool) -> None:
    """The refusal: JSON for a program, a short page for a browser (``Accept: text/html``)."""
    if page:
        body = (
            '<!doctype html><meta charset="utf-8"><title>agentfsm: refused</title>'
            f"<h1>{status}: {html.escape(kind)}</h1><p>{html.escape(message)}</p>"
        ).encode()
        media = b"text/html; charset=utf-8"
    else:
        body = json.dumps({"error": kind, "message": message}).encode()
        media = b"application/json"
    start: Message = {
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", media),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"),
        ],
    }
    await send(start)
    await send({"type": "http.response.body", "body": body})
