"""``agentfsm verify``: in a real subprocess, and in process for its failure modes."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentfsm.cli import main
from agentfsm.fsm import RUN_MACHINE
from agentfsm.verify import PROPERTIES, command
from tests.verify.mutants import MUTANTS, loop_thinking
from tests.verify.rebuild import Edge, adding, rebuild

ThinkingRetry = rebuild(
    RUN_MACHINE,
    "ThinkingRetry",
    edit=adding(
        Edge("retry", "failed", "retrying", cond=(loop_thinking,)),
        Edge("resume_retry", "retrying", "busy"),
    ),
    states=["retrying"],
)
"""A retry that only free interleavings take (the Agent fails a run once its loop ended),
through a state of its own (between the contract's states it would be an extra row):
it breaks nothing, and only the warning ``agent-coverage`` says so."""
EarlyPausingRun = MUTANTS["subclass_pauses_from_created"].build()[0]
NaiveExpiry = MUTANTS["expire_without_a_deadline"].build()[0]

ROOT = Path(__file__).resolve().parents[2]


def test_verify_command_proves_the_shipped_machines_in_a_subprocess(tmp_path: Path) -> None:
    # Bound 2 (13,000 configurations): the command end to end in a process of its own. The
    # default bound's proof (three times the configurations) is test_verifier's `shipped`,
    # the same `verify` in process; proving it twice took half a minute of CI.
    done = subprocess.run(
        [sys.executable, "-m", "agentfsm.cli", "verify", "--max-iterations", "2"],
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
    assert int(totals[1]) > 10_000


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
            "--fail-fast",
            "--counterexample-dot",
            str(dot),
        ]
    )

    out = capsys.readouterr().out
    assert code == 1
    assert re.search(r"^I1\s+fail\s", out, re.MULTILINE)
    assert re.search(r"^I2\s+unknown\s", out, re.MULTILINE)
    assert "stopped at the first failure (fail_fast)" in out
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


def test_verify_command_with_strict_fails_on_a_warning_and_without_it_passes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    argv = ["verify", "--run", "tests.verify.test_command:ThinkingRetry", "--max-iterations", "2"]

    assert main(argv) == 0
    assert re.search(r"^agent-coverage\s+warn\s", capsys.readouterr().out, re.MULTILINE)
    assert main([*argv, "--strict"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^agent-coverage\s+fail\s", out, re.MULTILINE)
    assert "run retry failed → retrying" in out


def test_verify_command_refuses_a_subclass_that_changes_its_parent_with_exit_code_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(ROOT))

    assert main(["verify", "--run", "tests.verify.test_command:EarlyPausingRun"]) == 2

    err = capsys.readouterr().err
    assert "cannot verify these classes" in err
    assert "EarlyPausingRun changes the states of its parent FreshRun" in err


def test_a_raising_guard_fails_a_property_with_exit_code_1_not_a_crash(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(ROOT))

    code = main(
        ["verify", "--run", "tests.verify.test_command:NaiveExpiry", "--max-iterations", "1"]
    )

    out = capsys.readouterr().out
    assert code == 1
    assert re.search(r"^exceptions\s+fail\s", out, re.MULTILINE)
    assert "guard deadline_compared of 'expire' requires_action → failed raised TypeError" in out
    assert "4. run  expire(now=50.0): requires_action → refused" in out


def test_a_crash_of_the_verifier_itself_exits_with_code_3_and_its_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the verifier's own bug")

    monkeypatch.setattr(command, "verify", broken)

    assert main(["verify", "--max-iterations", "1"]) == 3

    err = capsys.readouterr().err
    assert "the verifier crashed" in err
    assert "RuntimeError: the verifier's own bug" in err


def test_verify_command_imports_the_run_class_from_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / "my_machines.py").write_text(
        "from agentfsm.fsm import RunLifecycle\n\nMyRun = RunLifecycle\n", encoding="utf-8"
    )
    # -I: no environment, and (like the installed `agentfsm` script) nothing prepended to
    # sys.path; the command itself must make the current directory importable.
    command = [sys.executable, "-I", "-m", "agentfsm.cli", "verify", "--run", "my_machines:MyRun"]
    done = subprocess.run(
        [*command, "--max-iterations", "1"],  # (what is imported is the point, not the bound)
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(
        "agentfsm verify: RunLifecycle and TurnLoop: all properties hold"
    )


def test_the_current_directory_is_importable_only_while_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "elsewhere_machines.py").write_text("X = 1\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    before = list(sys.path)

    assert main(["verify", "--run", "elsewhere_machines:X"]) == 2  # found, but not a class

    assert sys.path == before
