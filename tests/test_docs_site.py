"""The docs site builds with ``mkdocs build --strict``, with every page and public name.

The site is built once, into a temporary directory, exactly as ``make docs`` builds it
(``make docs`` also regenerates the diagrams and tables first; tests/test_docs_generated.py
checks those are fresh).
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import agentfsm

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert build.returncode == 0, build.stderr
    assert "WARNING" not in build.stderr, build.stderr
    return out


def nav_pages(nav: object) -> list[str]:
    """Every page file named in an mkdocs ``nav`` (nested lists and titled entries)."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [page for item in nav for page in nav_pages(item)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in nav_pages(value)]
    return []


def html(site: Path, page: str) -> str:
    return (site / page / "index.html").read_text(encoding="utf-8")


def test_every_page_of_docs_is_in_the_nav_and_nothing_else() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))

    assert sorted(nav_pages(config["nav"])) == pages


def test_nav_pages_finds_nested_and_titled_entries() -> None:
    nav = ["index.md", {"Guide": ["a.md", {"B": "b.md"}]}, {"API": [{"x": "api/x.md"}]}]

    assert nav_pages(nav) == ["index.md", "a.md", "b.md", "api/x.md"]


@pytest.mark.parametrize("page", ["", "quickstart", "contract", "lifecycle", "api", "api/agent"])
def test_the_site_has_the_page(site: Path, page: str) -> None:
    assert (site / page / "index.html").is_file()


def test_the_site_has_the_api_reference_of_agent(site: Path) -> None:
    page = html(site, "api/agent")

    for member in ("Agent", "Agent.asubmit", "Agent.submit", "Agent.resolve_action"):
        assert f'id="agentfsm.agent.{member}"' in page
    assert "An agent loop whose every step is a transition of RunLifecycle or TurnLoop" in page


def test_the_contract_and_the_generated_diagrams_are_in_the_site(site: Path) -> None:
    assert 'id="5-invariants"' in html(site, "contract")
    assert (site / "images" / "combined.svg").is_file()
    assert 'href="../contract/"' in html(site, "lifecycle")


def _subpackages() -> list[str]:
    return sorted(
        module.name.removeprefix("agentfsm.")
        for module in pkgutil.iter_modules(agentfsm.__path__, "agentfsm.")
        if module.ispkg or module.name == "agentfsm.errors"
    )


@pytest.mark.parametrize("module", _subpackages())
def test_every_public_name_of_a_subpackage_is_in_the_api_reference(
    site: Path, module: str
) -> None:
    assert (site / "api" / module / "index.html").is_file(), f"write docs/api/{module}.md"
    page = html(site, f"api/{module}")
    names = importlib.import_module(f"agentfsm.{module}").__all__

    missing = [name for name in names if f'id="agentfsm.{module}.{name}"' not in page]
    assert missing == [], f"add them to docs/api/{module}.md"


def test_the_api_index_links_every_top_level_name_and_only_those(site: Path) -> None:
    page = (DOCS / "api" / "index.md").read_text(encoding="utf-8")
    built = html(site, "api")

    listed = [line.split("`")[1] for line in page.splitlines() if line.startswith("- [`")]
    assert sorted(listed) == agentfsm.__all__
    for name in agentfsm.__all__:
        assert f"#agentfsm.{_home(name)}.{name}" in built


def _home(name: str) -> str:
    return next(
        m for m in _subpackages() if name in importlib.import_module(f"agentfsm.{m}").__all__
    )


def test_the_errors_page_puts_the_roots_first(site: Path) -> None:
    page = html(site, "api/errors")
    order = [page.index(f'id="agentfsm.errors.{name}"') for name in agentfsm.errors.__all__]
    roots = [
        page.index(f'id="agentfsm.errors.{n}"') for n in agentfsm.__all__ if n.endswith("Error")
    ]

    assert sorted(order)[: len(roots)] == sorted(roots)
    assert page.index('id="agentfsm.errors.AgentFSMError"') == min(order)


_MARKERS = ("<<<<<<< ", "=======", ">>>>>>> ")


def _marker_lines(text: str) -> list[int]:
    """The (1-based) numbers of the lines of ``text`` that are merge-conflict markers."""
    return [
        number
        for number, line in enumerate(text.splitlines(), 1)
        if line.startswith(_MARKERS[::2]) or line.rstrip() == _MARKERS[1]
    ]


def test_no_page_or_readme_holds_a_merge_conflict_marker() -> None:
    pages = [*sorted(DOCS.rglob("*.md")), ROOT / "README.md", ROOT / "benchmarks" / "RESULTS.md"]
    found = {
        str(page.relative_to(ROOT)): lines
        for page in pages
        if (lines := _marker_lines(page.read_text(encoding="utf-8")))
    }
    assert not found, f"merge-conflict markers left at these lines: {found}"


def test_the_marker_check_finds_each_kind_of_marker_and_nothing_else() -> None:
    text = "a\n<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> memory\n======= table rule? no\n== x\n"
    assert _marker_lines(text) == [2, 4, 6]
