"""The ``--store`` of ``agentfsm ui`` and ``agentfsm serve-a2a``, resolved in one place.

Both take any store URL `agentfsm.stores.urls` knows (``sqlite:///PATH``,
``postgresql://…``, ``memory:``) or a plain path, which names a SQLite file. What they
show of it (printed lines, errors) is `shown`: the URL with its password masked.

- The web view reads a SQLite file as a ``read_only=True`` store (`open_read_only`), also
  on a place nothing can write (a read-only mount), and never creates one; its actions
  open the file read-write when first needed. Any other store (PostgreSQL) is opened
  once, without creating agentfsm's tables, and used for both.
- The A2A server opens the store read-write and creates it when missing.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentfsm.errors import StoreError
from agentfsm.stores._credentials import redact
from agentfsm.stores.base import RunStore
from agentfsm.stores.sqlite import SQLiteStore
from agentfsm.stores.urls import open_store, parse_store_url

__all__ = ["open_read_only", "open_to_read", "open_to_serve", "shown", "sqlite_path"]


def shown(url: str | os.PathLike[str]) -> str:
    """``url`` as it may be shown: any password in it replaced by ``***``."""
    return redact(os.fspath(url))


def open_read_only(path: str | os.PathLike[str]) -> SQLiteStore:
    """Open an existing SQLite run store for reading only.

    Raises:
        StoreError: There is no file at ``path``, or it is empty (a store is never
            created by reading it).
        StoreCorruptError: The file is not an agentfsm run store.
    """
    where = Path(path)
    if not where.is_file() or where.stat().st_size == 0:
        problem = "the file is empty" if where.is_file() else "no such file"
        raise StoreError(
            f"no run store at {str(where)!r} ({problem}); pass the SQLite file an agent "
            "saved its runs in"
        )
    return SQLiteStore(where, read_only=True)


def sqlite_path(url: str | os.PathLike[str]) -> Path | None:
    """The SQLite file ``url`` names (a plain path or ``sqlite:///…``), or None for another store.

    Raises:
        StoreURLError: ``url`` names no store agentfsm knows (its password masked).
    """
    where = parse_store_url(url)
    return Path(where.target) if where.kind == "sqlite" else None


def open_to_read(url: str | os.PathLike[str]) -> RunStore:
    """The store ``url`` names, for the web view to read; nothing is ever created.

    A SQLite file is opened read-only (`open_read_only`); any other store as it is, with
    ``create=False`` (an empty PostgreSQL database is an error and stays empty).

    Raises:
        StoreURLError: ``url`` names no store agentfsm knows.
        StoreError: There is no store there, or it cannot be opened (password masked).
    """
    path = sqlite_path(url)
    if path is not None:
        return open_read_only(path)
    return open_store(url, create=False)


def open_to_serve(url: str | os.PathLike[str]) -> RunStore:
    """The store ``url`` names, read-write, created if missing (the A2A server's runs).

    Raises:
        StoreURLError: ``url`` names no store agentfsm knows.
        StoreError: The store cannot be opened (password masked).
    """
    return open_store(url, create=True)
