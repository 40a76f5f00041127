"""The ``agentfsm`` command line, in process and as a real subprocess."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentfsm._demo import run_story
from agentfsm.cli import main
from agentfsm.states import LOOP_TABLE, RUN_TABLE, RunState

EVENT_LINE = re.compile(r"^\s*(\d+)\s+(run|loop)\s+(\w+)\s+(\w+) [→↺] (\w+)", re.MULTILINE)


def test_demo_story_passes_through_every_run_state_with_contiguous_events() -> None:
    out = io.StringIO()

    data = run_story(out, clock=lambda: 0.0)

    lines = EVENT_LINE.findall(out.getvalue())
    assert [int(seq) for seq, *_ in lines] == list(range(1, len(lines) + 1))
    run_states = {s for _, m, _, src, dst in lines if m == "run" for s in (src, dst)}
    assert run_states == set(RunState)
    assert (data.state, data.turn, data.reason) == ("shutdown", 3, "cancelled")
    assert "IllegalTransitionError: event 'provide_input' is not allowed" in out.getvalue()


@pytest.mark.parametrize(("machine", "table"), [("run", RUN_TABLE), ("loop", LOOP_TABLE)])
def test_table_command_prints_one_row_per_transition(
    machine: str, table: object, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["table", machine]) == 0

    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| `")]
    assert len(rows) == len(table.rows)  # type: ignore[attr-defined]


def test_unknown_command_is_one_clear_error_and_exit_code_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["fly"])

    assert exited.value.code == 2
    assert "invalid choice: 'fly'" in capsys.readouterr().err


def test_demo_runs_as_the_installed_console_script(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("agentfsm")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "agentfsm.cli"]

    done = subprocess.run(
        [*command, "demo"], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )

    assert done.returncode == 0, done.stderr
    assert "run 'demo-run': state=shutdown, turns=3" in done.stdout
    assert done.stdout.count("| `") == len(RUN_TABLE.rows) + len(LOOP_TABLE.rows)
