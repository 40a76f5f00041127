"""SQLiteStore.save_many: a hop's saves, each its own transaction, made durable by one fsync."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, cast

import pytest

from agentfsm import Agent, Event
from agentfsm.errors import SnapshotConflictError, StoreWriteError
from agentfsm.stores import RunStore, Snapshot, SQLiteStore
from agentfsm.stores._sqlite_layout import FILE_FORMAT
from agentfsm.stores.base import start_saves
from agentfsm.testing.store_conformance import make_events, make_snapshot
from tests.stores.durable_support import agent

ROOT = Path(__file__).resolve().parents[2]
Save = tuple[Snapshot, Sequence[Event], int | None]


def three_saves(run_id: str = "r1") -> list[Save]:
    """Three saves continuing one another: versions 1-3, events 1-2, 3, 4-6."""
    return [
        (make_snapshot(run_id, 2, 1), make_events(run_id, 1, 2), None),
        (make_snapshot(run_id, 3, 2, 3), make_events(run_id, 3, 1), 1),
        (make_snapshot(run_id, 6, 3, 4), make_events(run_id, 4, 3), 2),
    ]


class Traced(SQLiteStore):
    """A SQLiteStore recording the statements its connection runs (``statements``)."""

    def __init__(self, path: Path, synchronous: Literal["FULL", "NORMAL"] = "FULL") -> None:
        self.statements: list[str] = []

        def connect(where: Path) -> sqlite3.Connection:
            conn = sqlite3.connect(where, isolation_level=None, check_same_thread=False)
            conn.set_trace_callback(self.statements.append)
            return conn

        super().__init__(path, synchronous=synchronous, connect=connect)
        self.statements.clear()

    def level(self) -> int:
        """The connection's ``PRAGMA synchronous`` now (2 FULL, 1 NORMAL)."""
        return int(self._conn.execute("PRAGMA synchronous").fetchone()[0])

    def commits(self) -> list[str]:
        """The synchronous level each write transaction committed at, in order."""
        level, levels, writing = "FULL", [], False
        for statement in self.statements:
            if statement.startswith("PRAGMA synchronous="):
                level = statement.split("=")[1]
            elif statement.startswith("BEGIN"):
                writing = statement == "BEGIN IMMEDIATE"
            elif statement == "COMMIT" and writing:
                levels.append(level)
        return levels


def test_each_save_is_stored_in_order_and_all_but_the_last_commit_without_an_fsync(
    tmp_path: Path,
) -> None:
    with Traced(tmp_path / "runs.db") as store:
        saves = three_saves()
        store.save_many(saves)
        assert store.load("r1") == saves[-1][0]
        assert store.events("r1") == [e for _, events, _ in saves for e in events]
        assert store.commits() == ["NORMAL", "NORMAL", "FULL"]
        assert store.level() == 2  # FULL again for every later save
        store.save(make_snapshot("r1", 6, 4, 4), [], expected_version=3)
        assert store.commits()[-1] == "FULL"


def test_on_normal_every_commit_is_as_the_store_was_opened(tmp_path: Path) -> None:
    with Traced(tmp_path / "runs.db", synchronous="NORMAL") as store:
        store.save_many(three_saves())
        assert not any("synchronous" in s for s in store.statements)
        assert store.level() == 1


def test_one_save_alone_commits_with_its_fsync(tmp_path: Path) -> None:
    with Traced(tmp_path / "runs.db") as store:
        store.save_many(three_saves()[:1])
        assert store.commits() == ["FULL"]
        store.save_many([])
        assert store.commits() == ["FULL"]


def test_a_failed_save_ends_them_and_what_committed_before_it_is_fsynced(
    tmp_path: Path,
) -> None:
    with Traced(tmp_path / "runs.db") as store:
        first, _, third = three_saves()
        with pytest.raises(SnapshotConflictError):
            store.save_many([first, third])  # the second expects version 2: 1 is stored
        assert store.load("r1") == first[0]
        assert store.events("r1") == list(first[1])
        # one more commit, fsynced, that changes nothing: it makes the first durable
        assert store.commits() == ["NORMAL", "FULL"]
        assert f"PRAGMA user_version={FILE_FORMAT}" in store.statements
        assert store.level() == 2


def test_a_failed_first_save_stores_nothing_and_fsyncs_again(tmp_path: Path) -> None:
    with Traced(tmp_path / "runs.db") as store:
        _, second, third = three_saves()
        with pytest.raises(SnapshotConflictError):
            store.save_many([second, third])
        assert store.load("r1") is None
        assert store.commits() == []
        assert store.level() == 2


def test_a_read_only_store_refuses_them_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    SQLiteStore(path).close()
    with SQLiteStore(path, read_only=True) as store:
        with pytest.raises(StoreWriteError, match="read_only"):
            store.save_many(three_saves())
        assert store.list_runs() == []


@pytest.mark.parametrize(
    "saves",
    [None, "saves", [("snapshot", [], None)], [(make_snapshot("r1", 0, 1), [])]],
    ids=["none", "text", "not-a-snapshot", "a-pair"],
)
def test_saves_that_are_not_triples_are_refused_and_nothing_is_written(
    tmp_path: Path, saves: object
) -> None:
    with Traced(tmp_path / "runs.db") as store:
        with pytest.raises(TypeError, match=r"saves must be a list or tuple of \(snapshot"):
            store.save_many(saves)  # type: ignore[arg-type]
        assert store.statements == []
        assert store.list_runs() == []


def test_no_other_save_of_the_store_commits_in_between(tmp_path: Path) -> None:
    """Another thread's save waits until the group is done: it never commits un-fsynced."""
    entered, gate = threading.Event(), threading.Event()

    class Held(Traced):
        def save(
            self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
        ) -> None:
            if snapshot.version == 2:
                entered.set()
                gate.wait(10)
            super().save(snapshot, events, expected_version=expected_version)

    with Held(tmp_path / "runs.db") as store:
        group = threading.Thread(target=store.save_many, args=(three_saves(),))
        group.start()
        assert entered.wait(10)
        other = threading.Thread(
            target=store.save,
            args=(make_snapshot("r2", 1, 1), make_events("r2", 1, 1)),
            kwargs={"expected_version": None},
        )
        other.start()
        other.join(0.2)
        still_waiting = other.is_alive()
        gate.set()
        group.join(10)
        other.join(10)
        assert still_waiting
        assert store.commits() == ["NORMAL", "NORMAL", "FULL", "FULL"]
        assert store.load("r2") is not None


def test_a_process_killed_between_two_saves_keeps_the_first(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    script = textwrap.dedent(
        f"""
        import os, signal
        from agentfsm.stores import SQLiteStore
        from tests.stores.test_sqlite_save_many import three_saves

        class Dying(SQLiteStore):
            def save(self, snapshot, events, *, expected_version):
                if snapshot.version == 2:
                    os.kill(os.getpid(), signal.SIGKILL)
                super().save(snapshot, events, expected_version=expected_version)

        Dying({str(path)!r}).save_many(three_saves())
        """
    )
    killed = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with SQLiteStore(path) as store:
        first = three_saves()[0]
        assert store.load("r1") == first[0]
        assert store.events("r1") == list(first[1])


def test_start_saves_gives_a_store_with_save_many_the_whole_group() -> None:
    groups: list[list[Save]] = []

    class Grouping:
        def save(self, *args: object, **kwargs: object) -> None:
            raise AssertionError("save_many takes them")

        def save_many(self, saves: Sequence[Save]) -> None:
            groups.append(list(saves))

    saves = three_saves()
    assert start_saves(cast(RunStore, Grouping()), saves).result(10) == (None, None)
    assert groups == [saves]


def test_a_durable_run_writing_behind_returns_only_once_all_it_committed_is_fsynced(
    tmp_path: Path,
) -> None:
    """End to end: whatever hops the saves took, the last commit of the call is fsynced."""
    with Traced(tmp_path / "runs.db") as store:
        the_agent: Agent = agent(store, "trip", tmp_path / "effects.log")
        heard: list[int] = []
        the_agent.add_listener(
            lambda item: heard.append(item.seq) if isinstance(item, Event) else None
        )
        the_agent.start()
        store.statements.clear()
        the_agent.submit("Plan my trip")
        assert the_agent.state == "completed"
        assert store.commits()[-1] == "FULL"
        assert store.level() == 2
        stored = store.load("trip")
        assert stored is not None
        assert stored.messages == the_agent.messages
        assert [e.seq for e in store.events("trip")] == heard == list(range(1, stored.seq + 1))
