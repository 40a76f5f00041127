"""Passwords in store URLs and connection strings: found, and masked wherever they would show.

Kept apart from `agentfsm.stores.urls` so that the PostgreSQL store, which `open_store`
imports only when asked for, can mask its errors without importing it back.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

__all__ = ["MASK", "redact", "scrub", "secrets_of"]

# A password in a URL's user info, in a ``password=`` query parameter, or in a libpq
# key=value string (quoted or not).
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^:/@?#]*:)([^@/?#]*)(@)")
_PARAMETER = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^&\s]*)", re.IGNORECASE)
MASK = "***"
"""What stands for a password."""


def redact(url: str) -> str:
    """``url`` with any password in it replaced by ``***``.

    Args:
        url: A store URL or libpq connection string, with or without credentials.
    """
    return _PARAMETER.sub(rf"\g<1>{MASK}", _USERINFO.sub(rf"\g<1>{MASK}\g<3>", url))


def secrets_of(url: str) -> list[str]:
    """The passwords written in ``url`` (as written and decoded), longest first."""
    found: set[str] = set()
    match = _USERINFO.match(url)
    if match and match.group(2):
        found |= {match.group(2), unquote(match.group(2))}
    for value in (m.group(2) for m in _PARAMETER.finditer(url)):
        stripped = value.strip("'")
        found |= {v for v in (value, stripped, unquote(stripped)) if v}
    return sorted(found, key=len, reverse=True)


def scrub(text: str, url: str) -> str:
    """``text`` (say a driver's error message) with every password of ``url`` masked."""
    for secret in secrets_of(url):
        text = text.replace(secret, MASK)
    return redact(text)
