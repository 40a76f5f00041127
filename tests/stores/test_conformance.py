"""The RunStore conformance suite, run against MemoryStore, SQLiteStore and PostgresStore."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentfsm.stores import MemoryStore, RunStore, SQLiteStore
from agentfsm.stores.postgres import PostgresStore
from agentfsm.testing.postgres_server import TemporaryPostgres
from agentfsm.testing.store_conformance import RunStoreConformance


class TestMemoryStore(RunStoreConformance):
    def make_store(self, directory: Path) -> RunStore:
        return MemoryStore()


class TestSQLiteStore(RunStoreConformance):
    def make_store(self, directory: Path) -> RunStore:
        return SQLiteStore(directory / "runs.db")

    def reopen(self, store: RunStore, directory: Path) -> RunStore:
        return SQLiteStore(directory / "runs.db")


class TestPostgresStore(RunStoreConformance):
    @pytest.fixture(autouse=True)
    def _server(self, postgres_server: TemporaryPostgres) -> None:
        self.server = postgres_server
        self.urls: dict[Path, str] = {}

    def make_store(self, directory: Path) -> RunStore:
        # a fresh database per store made; the same one when the test reopens it
        self.urls[directory] = self.server.new_database()
        return PostgresStore(self.urls[directory])

    def reopen(self, store: RunStore, directory: Path) -> RunStore:
        return PostgresStore(self.urls[directory])
