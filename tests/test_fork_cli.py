"""``agentfsm fork`` as a subprocess on a SQLite file; ``runs`` and ``inspect`` show origins."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentfsm import SQLiteStore
from agentfsm.stores import replay_run
from tests.stores.test_fork import recorded_run


def agentfsm(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentfsm.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        check=False,
    )


@pytest.fixture
def store_file(tmp_path: Path) -> Path:
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as store:
        recorded_run(store)
    return path


def test_fork_makes_a_new_run_that_runs_and_inspect_show_with_its_origin(
    store_file: Path, tmp_path: Path
) -> None:
    done = agentfsm(
        "fork", "origin", "--store", str(store_file), "--at", "4", "--run-id", "f",
        "--edit-call", "k0", '{"item": "coffee"}',
        cwd=tmp_path,
    )  # fmt: skip

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        "forked run origin at seq 4 into run f: requires_action, 1 pending",
        "forked from  origin at seq 4",
    ]
    listed = agentfsm("runs", "--store", str(store_file), cwd=tmp_path)
    rows = [row.split() for row in listed.stdout.splitlines()[1:]]
    assert rows == [
        ["f", "requires_action", "1", "2", "1", "origin@4"],
        ["origin", "completed", "1", "22", "11", "—"],
    ]
    shown = agentfsm("inspect", "f", "--store", str(store_file), cwd=tmp_path)
    assert "forked from  origin at seq 4" in shown.stdout
    assert 'k0  buy({"item": "coffee"})' in shown.stdout
    with SQLiteStore(store_file) as store:
        assert replay_run(store, "f").pending == ("k0",)


def test_fork_at_the_end_by_default_with_a_new_id(store_file: Path, tmp_path: Path) -> None:
    done = agentfsm(
        "fork", "origin", "--store", f"sqlite:///{store_file}", "--add-message", "Again?",
        cwd=tmp_path,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first.startswith("forked run origin at seq 22 into run ")
    assert first.endswith(": completed")
    assert second == "forked from  origin at seq 22"


def test_a_seq_that_is_no_rest_point_is_an_error_naming_the_nearest_ones(
    store_file: Path, tmp_path: Path
) -> None:
    before = store_file.read_bytes()

    done = agentfsm("fork", "origin", "--store", str(store_file), "--at", "7", cwd=tmp_path)

    assert (done.returncode, done.stdout) == (1, "")
    assert "at=7 is not a rest point" in done.stderr
    assert "seq 4 (before) and seq 12 (after)" in done.stderr
    assert "--nearest" in done.stderr
    assert store_file.read_bytes() == before


def test_nearest_forks_at_the_rest_point_before_and_says_so_first(
    store_file: Path, tmp_path: Path
) -> None:
    done = agentfsm(
        "fork", "origin", "--store", str(store_file), "--at", "7", "--nearest", "--run-id", "f",
        cwd=tmp_path,
    )  # fmt: skip

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[0] == (
        "forked run origin at seq 4 (the nearest rest point before --at 7) into run f: "
        "requires_action, 1 pending"
    )


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["nope"], "agentfsm fork: error: no run 'nope' in"),
        (["origin", "--at", "99"], "at=99 is past its last event; allowed: 1 to 22"),
        (["origin", "--at", "4", "--edit-call", "k9", "{}"], "call 'k9' is not pending"),
        (["origin", "--replace-user-message", " "], "non-empty str"),
    ],
)
def test_a_bad_fork_is_one_line_and_writes_nothing(
    store_file: Path, tmp_path: Path, args: list[str], words: str
) -> None:
    before = store_file.read_bytes()

    done = agentfsm("fork", *args, "--store", str(store_file), cwd=tmp_path)

    assert (done.returncode, done.stdout) == (1, "")
    assert words in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert store_file.read_bytes() == before


def test_fork_needs_a_store_and_a_seq(tmp_path: Path) -> None:
    missing = agentfsm("fork", "origin", cwd=tmp_path)
    assert missing.returncode == 1
    assert "no store at" in missing.stderr
    assert not (tmp_path / ".agentfsm").exists()
    zero = agentfsm("fork", "origin", "--at", "0", cwd=tmp_path)
    assert zero.returncode == 2
    assert "expected a seq, a whole number >= 1, got '0'" in zero.stderr
