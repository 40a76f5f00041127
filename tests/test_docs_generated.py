"""The generated parts of docs/ (the diagrams and the lifecycle tables) are fresh.

When one of these fails, run ``make docs`` (``python scripts/gen_docs.py``) and commit what
it writes.
"""

from __future__ import annotations

import difflib
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from agentfsm.diagrams import diagram, markdown_table
from agentfsm.states import LOOP_TABLE, RUN_TABLE

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_docs"] = module  # its dataclass looks its module up while being defined
    spec.loader.exec_module(module)
    return module


gen_docs = _load_script()


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A fresh copy of the generated docs, to tamper with.

    Fresh even if the repository's are not, so each test sees only its own tampering.
    """
    (tmp_path / "docs").mkdir()
    shutil.copytree(DOCS / "images", tmp_path / "docs" / "images")
    shutil.copy(DOCS / "lifecycle.md", tmp_path / "docs" / "lifecycle.md")
    if any(p.endswith(".dot is stale") for p in gen_docs.stale(tmp_path)) and not shutil.which(
        "dot"
    ):
        pytest.skip("the diagrams changed and Graphviz 'dot' is missing to render them")
    gen_docs.write(tmp_path)
    return tmp_path


def _differences(limit: int = 40) -> str:
    """The first lines of a diff between each stale text file and what is generated now."""
    lines: list[str] = []
    for item in gen_docs.text_files(ROOT):
        old = item.path.read_text() if item.path.is_file() else ""
        new = item.make(old)
        name = str(item.path.relative_to(ROOT))
        lines += difflib.unified_diff(
            old.splitlines(), new.splitlines(), name, f"{name} (generated)", lineterm=""
        )
    return "\n".join(lines[:limit])


def test_generated_docs_are_fresh() -> None:
    problems = gen_docs.stale(ROOT)

    assert problems == [], (
        "run 'make docs' and commit the result: " + "; ".join(problems) + "\n" + _differences()
    )


@pytest.mark.parametrize("view", ["run", "loop", "combined"])
def test_committed_dot_is_the_diagram_of_the_code(view: str) -> None:
    assert (DOCS / "images" / f"{view}.dot").read_text() == diagram(view)  # type: ignore[arg-type]


def test_lifecycle_page_shows_the_tables_and_the_rendered_diagrams() -> None:
    page = (DOCS / "lifecycle.md").read_text()

    assert markdown_table(RUN_TABLE) in page
    assert markdown_table(LOOP_TABLE) in page
    for view in ("combined", "run", "loop"):
        assert f"](images/{view}.svg)" in page
        assert (DOCS / "images" / f"{view}.svg").is_file()


def test_a_changed_dot_file_is_stale(copy: Path) -> None:
    dot = copy / "docs" / "images" / "loop.dot"
    dot.write_text(dot.read_text().replace("thinking", "pondering"))

    problems = gen_docs.stale(copy)

    assert "docs/images/loop.dot is stale" in problems
    # The SVG was rendered from the true DOT, which still matches the code: it stays fresh.
    assert not [p for p in problems if p.startswith("docs/images/loop.svg")]


def test_an_edited_table_in_the_lifecycle_page_is_stale(copy: Path) -> None:
    page = copy / "docs" / "lifecycle.md"
    page.write_text(page.read_text().replace("| `start` | created | — | ready |", "", 1))

    assert gen_docs.stale(copy) == ["docs/lifecycle.md is stale"]


def test_text_outside_the_generated_part_of_the_lifecycle_page_is_kept(copy: Path) -> None:
    page = copy / "docs" / "lifecycle.md"
    page.write_text(page.read_text() + "\nA note added by hand.\n")

    assert gen_docs.stale(copy) == []


def test_svg_problems_are_named(copy: Path) -> None:
    images = copy / "docs" / "images"
    run_svg = images / "run.svg"
    run_svg.write_text(re.sub(r"sha256=[0-9a-f]+", "sha256=0000", run_svg.read_text()))
    loop_svg = images / "loop.svg"
    loop_svg.write_text(loop_svg.read_text().replace(">awaiting_input<", ">waiting<"))
    (images / "combined.svg").write_text("<svg><g></svg>")

    problems = gen_docs.stale(copy)

    assert problems == [
        "docs/images/run.svg was not rendered from the current run.dot",
        "docs/images/loop.svg does not name the states awaiting_input",
        problems[2],
    ]
    assert problems[2].startswith("docs/images/combined.svg is not well-formed XML")


def test_a_missing_svg_is_reported(copy: Path) -> None:
    (copy / "docs" / "images" / "run.svg").unlink()

    assert gen_docs.stale(copy) == ["docs/images/run.svg is missing"]


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' missing")
def test_write_regenerates_what_is_stale_and_only_that(copy: Path) -> None:
    images = copy / "docs" / "images"
    (images / "loop.dot").write_text("digraph {}")
    (images / "run.svg").unlink()
    combined = (images / "combined.svg").read_text()

    written = gen_docs.write(copy)

    assert sorted(p.name for p in written) == ["loop.dot", "run.svg"]
    assert gen_docs.stale(copy) == []
    assert (images / "combined.svg").read_text() == combined
    assert "<!-- rendered from run.dot sha256=" in (images / "run.svg").read_text()


def test_write_adds_the_reference_to_a_page_without_one(copy: Path) -> None:
    page = copy / "docs" / "lifecycle.md"
    page.write_text("# The lifecycle machines\n")

    gen_docs.write(copy)

    text = page.read_text()
    assert text.startswith("# The lifecycle machines\n\n" + gen_docs.BEGIN)
    assert text.endswith(gen_docs.END + "\n")
    assert gen_docs.stale(copy) == []


def test_the_script_checks_and_writes_from_the_command_line(copy: Path) -> None:
    script = [sys.executable, str(ROOT / "scripts" / "gen_docs.py"), "--root", str(copy)]
    (copy / "docs" / "images" / "run.dot").write_text("digraph {}\n")

    check = subprocess.run([*script, "--check"], capture_output=True, text=True, check=False)
    write = subprocess.run(script, capture_output=True, text=True, check=False)
    again = subprocess.run([*script, "--check"], capture_output=True, text=True, check=False)

    assert (check.returncode, check.stderr) == (
        1,
        "docs/images/run.dot is stale; run 'make docs'\n",
    )
    assert (write.returncode, write.stdout) == (0, "wrote docs/images/run.dot\n")
    assert (again.returncode, again.stderr) == (0, "")
