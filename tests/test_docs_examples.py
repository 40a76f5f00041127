"""Every ```python block in README.md and docs/**/*.md runs, so the examples cannot rot.

The blocks of one file run in order in one namespace (a page reads as one session). A block
whose first line is ``# not run`` is skipped: use it only for code that needs a real service.
A page that reads ``DATABASE_URL`` gets a fresh database of the tests' own PostgreSQL server.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def python_blocks(page: Path) -> list[str]:
    return [b for b in BLOCK.findall(page.read_text()) if not b.startswith("# not run")]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_examples_in_page_run(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    monkeypatch.chdir(tmp_path)
    if "DATABASE_URL" in page.read_text():
        monkeypatch.setenv("DATABASE_URL", request.getfixturevalue("postgres_url"))
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    for number, block in enumerate(python_blocks(page), start=1):
        code = compile(block, f"{page.name} block {number}", "exec", dont_inherit=True)
        exec(code, namespace)
