"""``agentfsm verify``: in a real subprocess, and in process for its failure modes."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentfsm.cli import main
from agentfsm.verify import PROPERTIES

ROOT = Path(__file__).resolve().parents[2]


def test_verify_command_proves_the_shipped_machines_in_a_subprocess(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentfsm.cli", "verify"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    rows = re.findall(r"^(\S+)\s+(pass|fail|unknown)\s", done.stdout, re.MULTILINE)
    assert rows == [(name, "pass") for name in PROPERTIES]
    totals = re.search(r"^(\d+) configurations, .* in ([\d.]+) s$", done.stdout, re.MULTILINE)
    assert totals is not None
    assert int(totals[1]) > 1_000


def test_verify_command_fails_a_broken_machine_and_draws_the_counterexample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    dot = tmp_path / "cex.dot"

    code = main(
        [
            "verify",
            "--run",
            "tests.verify.mutants:ReopeningRun",
            "--max-iterations",
            "1",
            "--counterexample-dot",
            str(dot),
        ]
    )

    out = capsys.readouterr().out
    assert code == 1
    assert re.search(r"^I1\s+fail\s", out, re.MULTILINE)
    assert "I1: 'shutdown' accepted 'reopen' (to 'ready')" in out
    assert "2. run  reopen(): shutdown → ready" in out
    assert f"counterexample diagram written to {dot}" in out
    assert '"run.shutdown" -> "run.ready" [label="reopen\\n#2"' in dot.read_text()
    if shutil.which("dot"):
        assert dot.with_suffix(".svg").read_text().lstrip().startswith("<?xml")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--run", "agentfsm.fsm"], "expected 'package.module:Class'"),
        (["--loop", "agentfsm.nowhere:Loop"], "agentfsm.nowhere"),
        (["--max-iterations", "0"], "--max-iterations must be at least 1"),
    ],
    ids=["not-a-reference", "no-such-module", "no-bound"],
)
def test_verify_command_refuses_bad_options_with_exit_code_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["verify", *argv]) == 2

    assert message in capsys.readouterr().err


def test_verify_command_says_when_there_is_no_counterexample_to_draw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dot = tmp_path / "cex.dot"

    assert main(["verify", "--max-iterations", "2", "--counterexample-dot", str(dot)]) == 0

    assert f"no counterexample: nothing written to {dot}" in capsys.readouterr().out
    assert not dot.exists()
