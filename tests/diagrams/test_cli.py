"""``agentfsm diagram`` as a real subprocess."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentfsm.diagrams import markdown, mermaid, run_diagram


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentfsm.cli", "diagram", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
    )


def test_text_formats_from_the_suffix(tmp_path: Path) -> None:
    for name, expected in [
        ("run.dot", run_diagram()),
        ("loop.mmd", mermaid("loop")),
        ("both.md", markdown("combined")),
    ]:
        view = {"run": "run", "loop": "loop", "both": "combined"}[name.split(".")[0]]
        done = _cli(view, "-o", name, cwd=tmp_path)
        assert (done.returncode, done.stderr) == (0, "")
        assert (tmp_path / name).read_text() == expected


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' missing")
def test_svg_by_default_combined(tmp_path: Path) -> None:
    done = _cli("-o", "all.svg", cwd=tmp_path)
    assert done.returncode == 0
    svg = (tmp_path / "all.svg").read_text()
    assert "cluster_busy" in svg
    assert "thinking" in svg


def test_errors_are_one_line_and_exit_1(tmp_path: Path) -> None:
    done = _cli("run", "-o", "run.gif", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert "unknown suffix '.gif'" in done.stderr
    missing = _cli("run", "-o", str(tmp_path / "no" / "dir.dot"), cwd=tmp_path)
    assert missing.returncode == 1
    assert missing.stderr.startswith("agentfsm diagram: error:")
    assert missing.stderr.count("\n") == 1


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert _cli("sideways", "-o", "x.dot", cwd=tmp_path).returncode == 2
    assert _cli("run", cwd=tmp_path).returncode == 2
    assert list(tmp_path.iterdir()) == []


def test_flat_draws_one_edge_per_transition(tmp_path: Path) -> None:
    for args, expected in [
        (("run", "--flat", "-o", "flat.dot"), run_diagram(flat=True)),
        (("combined", "--flat", "-o", "flat.md"), markdown("combined", flat=True)),
    ]:
        done = _cli(*args, cwd=tmp_path)
        assert (done.returncode, done.stderr) == (0, "")
        assert (tmp_path / args[-1]).read_text() == expected
    assert "cluster_run_at_rest" in run_diagram()
    assert "cluster_run_at_rest" not in (tmp_path / "flat.dot").read_text()
