"""The RunStore conformance suite, run against MemoryStore and SQLiteStore."""

from __future__ import annotations

from pathlib import Path

from agentfsm.stores import MemoryStore, RunStore, SQLiteStore
from agentfsm.testing.store_conformance import RunStoreConformance


class TestMemoryStore(RunStoreConformance):
    def make_store(self, directory: Path) -> RunStore:
        return MemoryStore()


class TestSQLiteStore(RunStoreConformance):
    def make_store(self, directory: Path) -> RunStore:
        return SQLiteStore(directory / "runs.db")

    def reopen(self, store: RunStore, directory: Path) -> RunStore:
        return SQLiteStore(directory / "runs.db")
