"""Run stores: where runs persist, as snapshots plus an append-only event log.

`RunStore` is the protocol; `MemoryStore` keeps runs in a dict, `SQLiteStore` in one
durable SQLite file. See docs/persistence.md.
"""

from __future__ import annotations

from agentfsm.stores.base import RunStore, RunSummary
from agentfsm.stores.exact_replay import replay
from agentfsm.stores.memory import MemoryStore
from agentfsm.stores.snapshot import SNAPSHOT_SCHEMA_VERSION, Snapshot, ToolAnswer
from agentfsm.stores.sqlite import SQLiteStore

__all__ = [
    "SNAPSHOT_SCHEMA_VERSION",
    "MemoryStore",
    "RunStore",
    "RunSummary",
    "SQLiteStore",
    "Snapshot",
    "ToolAnswer",
    "replay",
]
