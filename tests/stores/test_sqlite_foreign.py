"""SQLiteStore on other people's files, and on a read-only place.

A file that is not agentfsm's is refused byte-identical, with nothing left beside it
(no ``-wal``, no ``-shm``), however it is opened. A store on a read-only place (here a
read-only bind mount, or an immutable folder: file modes do not stop root, these do) is read
with ``read_only=True`` and otherwise named read-only, not "corrupt".
"""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentfsm import SQLiteStore
from agentfsm.errors import StoreCorruptError, StoreError
from agentfsm.testing.store_conformance import make_events, make_snapshot


def state_of(folder: Path) -> dict[str, str]:
    """Every file of ``folder`` and the hash of its bytes."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.iterdir())
    }


def foreign(path: Path, tables: tuple[str, ...], *, wal: bool) -> None:
    conn = sqlite3.connect(path)
    if wal:
        conn.execute("PRAGMA journal_mode=WAL")
    for table in tables:
        conn.execute(f"CREATE TABLE {table} (name TEXT)")
        conn.execute(f"INSERT INTO {table} VALUES ('ada')")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("read_only", [False, True], ids=["writable", "read_only"])
@pytest.mark.parametrize("wal", [False, True], ids=["rollback", "wal"])
@pytest.mark.parametrize(
    "tables",
    [("runs",), ("runs", "events", "items"), ("users",)],
    ids=["its-own-runs", "runs-events-items", "users"],
)
def test_a_foreign_file_is_refused_byte_identical_with_nothing_beside_it(
    tmp_path: Path, tables: tuple[str, ...], wal: bool, read_only: bool
) -> None:
    path = tmp_path / "app.db"
    foreign(path, tables, wal=wal)
    before = state_of(tmp_path)

    with pytest.raises(StoreCorruptError, match="something else"):
        SQLiteStore(path, read_only=read_only)

    assert state_of(tmp_path) == before


def test_a_foreign_file_in_use_by_its_app_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    foreign(path, ("runs",), wal=True)
    app = sqlite3.connect(path)  # the app runs: its WAL holds a change not checkpointed
    app.execute("PRAGMA wal_autocheckpoint=0")
    app.execute("INSERT INTO runs VALUES ('grace')")
    app.commit()
    before = state_of(tmp_path)
    try:
        for read_only in (False, True):
            with pytest.raises(StoreCorruptError, match="something else"):
                SQLiteStore(path, read_only=read_only)
            assert state_of(tmp_path) == before
    finally:
        app.close()


@pytest.fixture(params=["read-only-mount", "immutable-folder"])
def read_only_place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """A folder holding a healthy store, that not even root can write.

    Either a read-only bind mount of it, or the folder made immutable (``chattr +i``: no
    file can be made in it). File modes (a 0444 file in a 0555 folder) do not stop root.
    """
    source, place = tmp_path / "source", tmp_path / "place"
    source.mkdir()
    with SQLiteStore(source / "runs.db") as store:
        store.save(make_snapshot("r1", 2, 1), make_events("r1", 1, 2), expected_version=None)
    if request.param == "read-only-mount":
        place.mkdir()
        commands = [
            ["mount", "--bind", str(source), str(place)],
            ["mount", "-o", "remount,ro,bind", str(place)],
        ]
        undo = ["umount", str(place)]
    else:
        place = source
        commands = [["chattr", "+i", str(place)]]
        undo = ["chattr", "-i", str(place)]
    try:
        for command in commands:
            done = subprocess.run(command, capture_output=True, check=False)
            if done.returncode != 0:
                pytest.skip(f"{command[0]} is not allowed here: {done.stderr!r}")
        yield place
    finally:
        subprocess.run(undo, capture_output=True, check=False)


def test_a_store_on_a_read_only_place_is_read_with_read_only(read_only_place: Path) -> None:
    path = read_only_place / "runs.db"
    with pytest.raises(OSError, match=r"Read-only file system|Operation not permitted"):
        (read_only_place / "probe").write_text("x")  # truly read-only, even for root
    before = state_of(read_only_place)

    with SQLiteStore(path, read_only=True) as store:
        assert store.load("r1") == make_snapshot("r1", 2, 1)
        assert store.events("r1") == make_events("r1", 1, 2)
        assert [run.run_id for run in store.list_runs()] == ["r1"]

    assert state_of(read_only_place) == before


def test_a_store_on_a_read_only_place_opened_to_write_is_named_read_only(
    read_only_place: Path,
) -> None:
    before = state_of(read_only_place)

    with pytest.raises(StoreError) as refused:
        SQLiteStore(read_only_place / "runs.db")

    assert not isinstance(refused.value, StoreCorruptError)
    assert "read-only" in str(refused.value)
    assert "read_only=True" in str(refused.value)
    assert state_of(read_only_place) == before
