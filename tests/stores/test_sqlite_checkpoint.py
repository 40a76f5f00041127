"""SQLiteStore checkpoints its WAL in a worker thread, not in the commit of a save."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentfsm.stores import SQLiteStore, _checkpoint
from agentfsm.testing.store_conformance import make_events, make_snapshot


def _save_runs(store: SQLiteStore, count: int, first: int = 0) -> None:
    for number in range(first, first + count):
        run_id = f"r{number}"
        store.save(
            make_snapshot(run_id, 3, 1, 6), make_events(run_id, 1, 3), expected_version=None
        )


def _wait(checkpoints: _checkpoint.Checkpointer | None) -> None:
    assert checkpoints is not None
    assert checkpoints._running is not None
    checkpoints._running.result(timeout=30)


def test_the_stores_own_commits_never_checkpoint(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "r.db") as store:
        assert store._conn.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
        assert store._checkpoints is not None


def test_a_checkpoint_runs_behind_the_saves_once_they_wrote_enough(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_checkpoint, "CHECKPOINT_FRAMES", 40)
    path = tmp_path / "r.db"
    with SQLiteStore(path) as store:
        _save_runs(store, 5)  # 5 saves of 3 estimated pages each: not enough yet
        assert store._checkpoints is not None
        assert store._checkpoints._running is None
        empty = path.stat().st_size  # (the schema only: every page since is in the WAL)
        _save_runs(store, 20, first=5)
        assert store._checkpoints._running is not None
        _wait(store._checkpoints)
        assert path.stat().st_size > empty  # the pages were copied into the file
        _save_runs(store, 5, first=25)  # the saves go on, the WAL is reused
        assert [run.run_id for run in store.list_runs()][:3] == ["r0", "r1", "r10"]
    with SQLiteStore(path) as store:
        assert len(store.list_runs()) == 30
        assert store.load("r7") == make_snapshot("r7", 3, 1, 6)


def test_a_failed_checkpoint_gives_the_checkpoints_back_to_sqlite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_checkpoint, "CHECKPOINT_FRAMES", 10)
    with SQLiteStore(tmp_path / "r.db") as store:
        checkpoints = store._checkpoints
        assert checkpoints is not None
        checkpoints._path = tmp_path  # a directory: its connection cannot be opened
        _save_runs(store, 5)  # (the fifth starts a checkpoint)
        _wait(checkpoints)
        assert checkpoints.failed
        _save_runs(store, 1, first=5)  # the next save hands the checkpoints back
        assert store._checkpoints is None
        assert store._conn.execute("PRAGMA wal_autocheckpoint").fetchone() == (1000,)
        _save_runs(store, 1, first=6)  # and saves go on as before
        assert len(store.list_runs()) == 7


def test_closing_waits_for_a_checkpoint_and_none_runs_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_checkpoint, "CHECKPOINT_FRAMES", 10)
    store = SQLiteStore(tmp_path / "r.db")
    checkpoints = store._checkpoints
    assert checkpoints is not None
    _save_runs(store, 6)
    store.close()
    store.close()
    assert checkpoints._conn is None
    assert checkpoints._closed
    checkpoints._checkpoint()  # (one submitted but not begun by then does nothing)
    assert checkpoints._conn is None
    assert not (tmp_path / "r.db-wal").exists()  # the last connection closed checkpointed


def test_a_read_only_store_has_no_checkpointer(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "r.db").close()
    with SQLiteStore(tmp_path / "r.db", read_only=True) as store:
        assert store._checkpoints is None
