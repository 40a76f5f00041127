"""Run stores: where runs persist, as snapshots plus an append-only event log.

`RunStore` is the protocol (`LeasingStore`: a store that keeps busy runs' leases;
`LeasePolicy` says how an Agent holds them); `MemoryStore` keeps runs in a dict,
`SQLiteStore` in one durable SQLite file, `PostgresStore` in a PostgreSQL database (the
``postgres`` extra, imported only when used). `open_store` opens any of them by URL. See
docs/persistence.md. `fork` makes a new run from a rest point of a stored one (docs/fork.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentfsm.stores._credentials import redact
from agentfsm.stores.base import AsyncRunStore, LeasingStore, RunStore, RunSummary
from agentfsm.stores.exact_replay import replay
from agentfsm.stores.forking import (
    AddMessage,
    Edit,
    EditCall,
    ReplaceUserMessage,
    fork,
    replay_run,
    rest_points,
    state_at,
)
from agentfsm.stores.leases import Lease, LeasePolicy
from agentfsm.stores.memory import MemoryStore
from agentfsm.stores.snapshot import SNAPSHOT_SCHEMA_VERSION, ForkPoint, Snapshot, ToolAnswer
from agentfsm.stores.sqlite import SQLiteStore
from agentfsm.stores.urls import open_store, parse_store_url
from agentfsm.stores.watch import WatchableStore

if TYPE_CHECKING:
    from agentfsm.stores.postgres import PostgresStore

__all__ = [
    "SNAPSHOT_SCHEMA_VERSION",
    "AddMessage",
    "AsyncRunStore",
    "Edit",
    "EditCall",
    "ForkPoint",
    "Lease",
    "LeasePolicy",
    "LeasingStore",
    "MemoryStore",
    "PostgresStore",
    "ReplaceUserMessage",
    "RunStore",
    "RunSummary",
    "SQLiteStore",
    "Snapshot",
    "ToolAnswer",
    "WatchableStore",
    "fork",
    "open_store",
    "parse_store_url",
    "redact",
    "replay",
    "replay_run",
    "rest_points",
    "state_at",
]


def __getattr__(name: str) -> object:
    # PostgresStore needs psycopg (the postgres extra): imported on first use only, so that
    # `import agentfsm` never does.
    if name == "PostgresStore":
        from agentfsm.stores.postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
