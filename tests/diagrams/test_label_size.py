"""At 1280 px width every label of the default drawings is at least 9 px high.

Measured by the browser that draws it (headless Chromium), the SVG sized as the web view
sizes it (``max-width: 100%``, never larger than drawn): a label's height is its font size
in CSS pixels, its ``font-size`` times the scale the page draws the SVG at.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page

from agentfsm.diagrams import View, diagram, render
from tests.browser import chromium

WIDTH = 1280
SMALLEST = 9.0

_SIZES = """() => Array.from(document.querySelectorAll('svg text')).map(t => ({
  text: t.textContent,
  px: parseFloat(t.getAttribute('font-size')) * t.getScreenCTM().a,
}))"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def page(browser: Browser) -> Iterator[Page]:
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})
    yield page
    page.close()


def smallest_label(page: Page, svg: bytes, width: int = WIDTH) -> tuple[float, str]:
    """The smallest label's height in px when ``svg`` is shown ``width`` px wide at most."""
    page.set_content(
        f'<body style="margin:0"><div style="width:{width}px">'
        "<style>svg { max-width: 100%; height: auto; }</style>"
        f"{svg.decode('utf-8')[svg.find(b'<svg') :]}</div></body>"
    )
    sizes = page.evaluate(_SIZES)
    assert sizes, "no labels found"
    least = min(sizes, key=lambda item: item["px"])
    return round(least["px"], 2), least["text"]


@pytest.mark.parametrize("view", ["run", "loop", "combined"])
def test_every_label_is_at_least_9px_at_1280px(page: Page, view: View) -> None:
    px, text = smallest_label(page, render(diagram(view), "svg"))
    assert px >= SMALLEST, f"{text!r} is {px} px high"


def test_the_check_sees_labels_too_small(page: Page) -> None:
    """The flat combined drawing, the default before statecharts, fails it."""
    px, _ = smallest_label(page, render(diagram("combined", flat=True), "svg"))
    assert px < SMALLEST
