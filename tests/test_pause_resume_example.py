"""The pause/resume example of docs/persistence.md, run for real in two processes."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from agentfsm import Agent, Snapshot, SQLiteStore, replay
from agentfsm.testing import assert_history_valid

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "pause_resume.py"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_docs_show_the_example_file_as_it_is() -> None:
    page = (ROOT / "docs" / "persistence.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", page, re.DOTALL | re.MULTILINE)
    shown = [b for b in blocks if b.startswith("# file: examples/pause_resume.py")]
    assert shown == [EXAMPLE.read_text()]


def test_a_run_paused_in_one_process_is_finished_in_another(tmp_path: Path) -> None:
    first = run("start", "runs.db", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == ["requires_action ['book_hotel']", "paused"]

    second = run("resume", "runs.db", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines() == [
        "completed Here is what I found: booked a hotel in Lisbon."
    ]

    with SQLiteStore(tmp_path / "runs.db") as store:
        stored = store.load("trip-42")
        assert stored is not None
        assert (stored.state, stored.turn) == ("completed", 1)
        assert_history_valid(stored.messages)
        replay(store.events("trip-42"), expected=stored)
        transitions = [e.event for e in store.events("trip-42") if e.machine != "conversation"]
        assert transitions == [
            "start", "submit", "model_replied", "need_action", "pause", "resume",
            "resolve_action", "resolved", "tools_finished", "model_replied", "complete",
        ]  # fmt: skip

    again = run("resume", "runs.db", cwd=tmp_path)  # nothing left to resume: one clear error
    assert again.returncode != 0
    assert "'resume' is not allowed in state 'completed'" in again.stderr


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pause_resume_example", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_loser_of_a_resume_race_is_told_so_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    example = load_example()
    path = str(tmp_path / "runs.db")
    assert example.start(path) == 0
    capsys.readouterr()

    class Raced(SQLiteStore):
        """The example's store: right after it first loads the run, a rival finishes it."""

        raced = False

        def load(self, run_id: str) -> Snapshot | None:
            loaded = super().load(run_id)
            if Raced.raced:
                return loaded
            Raced.raced = True
            with SQLiteStore(path) as other:
                rival = Agent.restore(example.MODEL, example.TOOLS, store=other, run_id=run_id)
                rival.resume()
                rival.resolve_action({call.id: "approve" for call in rival.pending})
            return loaded

    monkeypatch.setattr(example, "SQLiteStore", Raced)
    assert example.resume(path) == 1
    told = capsys.readouterr()
    assert told.err == "another process got to run 'trip-42' first; it is completed\n"
    assert told.out == ""


def test_resuming_a_run_that_was_never_started_says_so(tmp_path: Path) -> None:
    result = run("resume", "runs.db", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == "no run 'trip-42' in runs.db: run 'start' first\n"
