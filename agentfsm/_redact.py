"""Secrets kept out of what the library prints, raises and records.

`redact` masks, in any text: the user-info of a URL (``https://user:secret@host`` becomes
``https://***@host``), the value of a query parameter or an assignment whose name says it
is a secret (``?api_key=…``, ``token=…``), an ``Authorization`` value and a bearer token,
and each of the ``secrets`` given (a model's own API key), wherever it appears. It is
applied wherever agentfsm formats a URL or an error: ``repr`` of a model, the messages of
model errors and retry notices, and the ``fail`` events (and so the store).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = "***"
"""What a secret is replaced by."""

_SECRET_NAME = (
    r"[\w.-]*(?:key|token|secret|password|passwd|pwd|auth|authorization|signature|sig"
    r"|credentials?)"
)
"""A parameter name that says its value is secret: it ends in key, token, secret…"""
_PATTERNS = (
    # https://user:password@host -> https://***@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@?#]+@"), rf"\1{MASK}@"),
    # Authorization: Bearer abc / "authorization": "Basic abc"
    (
        re.compile(
            r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?)(?:(bearer|basic|token|digest)\s+)?"
            r"[^\s\"',;&]+"
        ),
        lambda m: f"{m.group(1)}{m.group(2) + ' ' if m.group(2) else ''}{MASK}",
    ),
    (re.compile(r"(?i)\b(bearer\s+)[\w.~+/=-]+"), rf"\1{MASK}"),
    # ?api_key=abc&x=1, token: "abc", x-api-key=abc
    (
        re.compile(
            rf"(?i)((?:[?&;]|\b){_SECRET_NAME}[\"']?\s*[:=]\s*[\"']?)"
            rf"(?!{re.escape(MASK)}|(?:bearer|basic|token|digest)\s)[^\s\"',;&#]+"
        ),
        rf"\1{MASK}",
    ),
)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with credentials masked (see the module docstring).

    Args:
        text: A URL, a message or an error's text.
        secrets: Values to mask wherever they appear, such as the API key in use; empty
            values and None are ignored.
    """
    for secret in secrets:
        if secret:
            text = text.replace(secret, MASK)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text
