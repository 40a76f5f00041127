"""The pause/resume example of docs/persistence.md, run for real in two processes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from agentfsm import SQLiteStore, replay
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
