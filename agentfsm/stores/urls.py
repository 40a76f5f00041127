"""Stores named by URL: `open_store` and the redaction that keeps credentials out of sight.

=================================  =========================================================
``memory:``                        a `MemoryStore` (nothing persists)
``sqlite:///runs.db``              a `SQLiteStore` at ``runs.db``, relative to the working
                                   directory (three slashes, then the path)
``sqlite:////var/lib/runs.db``     an absolute path (four slashes)
``sqlite:///runs.db?synchronous=NORMAL``  the durability level (``FULL`` by default)
``postgresql://user:pw@host/db``   a `PostgresStore` (``postgres://`` too); every libpq
                                   parameter may follow as a query (``?sslmode=require``)
a plain path (``runs.db``)         a `SQLiteStore` at that path
=================================  =========================================================

A password in a URL (``user:pw@`` or ``?password=``) never appears in a store's ``repr``, in
an error or a log line of agentfsm's: `redact` replaces it with ``***`` everywhere a store
shows where it is.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qsl, unquote, urlsplit

from agentfsm import _checks
from agentfsm.errors import StoreURLError
from agentfsm.stores._credentials import redact
from agentfsm.stores.base import RunStore
from agentfsm.stores.memory import MemoryStore
from agentfsm.stores.sqlite import SQLiteStore

SCHEMES = ("memory:", "sqlite:///", "postgresql://", "postgres://")
"""The URL forms `open_store` accepts (besides a plain path)."""

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")


@dataclass(frozen=True, slots=True)
class StoreURL:
    """A parsed store URL: which store, and where."""

    kind: Literal["memory", "sqlite", "postgresql"]
    """The store it names."""
    target: str
    """The SQLite file's path, or the PostgreSQL connection URL (with its credentials)."""
    synchronous: Literal["FULL", "NORMAL"] = "FULL"
    """SQLite's durability level."""

    def __repr__(self) -> str:
        return f"StoreURL(kind={self.kind!r}, target={redact(self.target)!r})"


def _refused(url: str, problem: str) -> StoreURLError:
    return StoreURLError(redact(url), problem, SCHEMES)


def parse_store_url(url: str | os.PathLike[str]) -> StoreURL:
    """What ``url`` names (see the module docstring), without opening anything.

    Args:
        url: A store URL, or a plain path to a SQLite file.

    Raises:
        StoreURLError: An unknown scheme, or a URL of a known scheme that says no place.
        TypeError: ``url`` is neither a str nor a path.
    """
    text = os.fspath(url) if isinstance(url, (str, os.PathLike)) else url
    if not isinstance(text, str):
        _checks.refuse_type(
            "url", url, "a store URL (a str such as 'sqlite:///runs.db' or 'memory:') or a path"
        )
    match = _SCHEME.match(text)
    if match is None:  # a plain path (or a drive letter, which is one character)
        if not text:
            raise _refused(text, "it is empty")
        return StoreURL("sqlite", text)
    scheme = match.group(1).lower()
    if scheme == "memory":
        if text[len("memory:") :]:
            raise _refused(text, "'memory:' takes nothing after the colon")
        return StoreURL("memory", "")
    if scheme in ("postgresql", "postgres"):
        return StoreURL("postgresql", text)
    if scheme == "sqlite":
        return _sqlite(text)
    raise _refused(text, f"the scheme {scheme!r} is not a store agentfsm knows")


def _sqlite(text: str) -> StoreURL:
    if not text.lower().startswith("sqlite:///"):
        raise _refused(text, "a SQLite URL is sqlite:/// followed by the file's path")
    parts = urlsplit(text)
    path = unquote(text[len("sqlite:///") :].split("?", 1)[0])
    if not path:
        raise _refused(text, "it names no file after sqlite:///")
    options = dict(parse_qsl(parts.query, keep_blank_values=True))
    level = options.pop("synchronous", "FULL").upper()
    if options:
        raise _refused(
            text,
            f"unknown option(s) {sorted(options)!r}; a SQLite URL takes 'synchronous'",
        )
    if level not in ("FULL", "NORMAL"):
        raise _refused(text, f"synchronous={level!r}; expected FULL or NORMAL")
    return StoreURL("sqlite", path, "FULL" if level == "FULL" else "NORMAL")


def open_store(url: str | os.PathLike[str], *, create: bool = True) -> RunStore:
    """Open the store ``url`` names (``memory:``, ``sqlite:///PATH``, ``postgresql://…``).

    A plain path names a SQLite file. PostgreSQL needs the ``postgres`` extra
    (``pip install 'agentfsm[postgres]'``).

    Args:
        url: Where the runs are (see the module docstring).
        create: Make the store if there is none yet (a SQLite file, or agentfsm's tables in
            an empty PostgreSQL database); with False a missing store is an error and
            nothing is created.

    Raises:
        StoreURLError: ``url`` names no store agentfsm knows, or (with ``create=False``) a
            store that does not exist.
        StoreError: The store cannot be opened (see each store).
        TypeError: ``url`` is neither a str nor a path, or ``create`` is not a bool.
    """
    where = parse_store_url(url)
    _checks.flag("create", create)
    if where.kind == "memory":
        return MemoryStore()
    if where.kind == "sqlite":
        path = Path(where.target)
        if not create and (not path.is_file() or path.stat().st_size == 0):
            problem = "the file is empty" if path.is_file() else "no such file"
            raise _refused(os.fspath(url), f"there is no store there ({problem})")
        return SQLiteStore(path, synchronous=where.synchronous)
    from agentfsm.stores.postgres import PostgresStore  # the postgres extra, when asked for

    return PostgresStore(where.target, create=create)
