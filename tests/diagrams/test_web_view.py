"""The web view draws the grouped diagram readably at laptop and phone width.

A real run page (uvicorn on 127.0.0.1, headless Chromium): at 1280 px and at 390 px (a
phone) every label of the diagram is at least 9 px high; at the phone's width the diagram
is wider than the screen and its box scrolls sideways instead of shrinking it.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from agentfsm.serve import create_app
from agentfsm.stores import SQLiteStore
from tests.browser import chromium
from tests.serve.conftest import serving
from tests.serve.travel import travel_agent

_SMALLEST = """() => Math.min(...Array.from(document.querySelectorAll('#diagram svg text'))
  .map(t => parseFloat(t.getAttribute('font-size')) * t.getScreenCTM().a))"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def _run(path: Path) -> None:
    agent = travel_agent("trip", SQLiteStore(path))
    agent.start()
    agent.submit("What's the weather in Paris and Rome?")
    agent.close()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A SQLite store with one run (made in a thread: Playwright runs a loop in this one)."""
    path = tmp_path / "runs.db"
    with ThreadPoolExecutor(1) as pool:
        pool.submit(_run, path).result()
    return path


@pytest.mark.parametrize("width", [1280, 390])
def test_every_label_of_the_run_pages_diagram_is_at_least_9px(
    browser: Browser, store: Path, width: int
) -> None:
    page = browser.new_page(viewport={"width": width, "height": 800})
    try:
        with serving(create_app(str(store), poll_interval=0.05)) as url:
            page.goto(f"{url}runs/trip")
            page.locator("#diagram svg g.node").first.wait_for()
            assert page.evaluate(_SMALLEST) >= 9.0
            box = page.locator("#diagram")
            scroll, client = box.evaluate("b => [b.scrollWidth, b.clientWidth]")
            assert (scroll > client) == (width < 1000)
            page.goto("about:blank")
    finally:
        page.close()
