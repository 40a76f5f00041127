"""Headless Chromium for the tests: Debian's /usr/bin/chromium driven by Playwright.

No browser is downloaded: `make test` installs the distribution's chromium when it is missing
(scripts/ensure-chromium.sh), and Playwright launches it through ``executable_path``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

from playwright.sync_api import Browser, Page, sync_playwright

CHROMIUM = os.environ.get("AGENTFSM_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",  # the tests run as root in CI containers
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-gpu",
    "--disable-quic",
]

LABEL_BOXES = """() => Array.from(document.querySelectorAll('g.edge, g.node'))
  .map(g => {
    const texts = Array.from(g.querySelectorAll(':scope > text'));
    if (g.classList.contains('node')) {
      // a node's own label sits inside its shape; only its xlabel ("now") is placed beside it
      return texts.filter(t => t.textContent === 'now');
    }
    return texts;
  })
  .filter(texts => texts.length)
  .map(texts => {
    const boxes = texts.map(t => t.getBBox());
    return {
      text: texts.map(t => t.textContent).join(' / '),
      box: [Math.min(...boxes.map(b => b.x)),
            Math.min(...boxes.map(b => b.y)),
            Math.max(...boxes.map(b => b.x + b.width)),
            Math.max(...boxes.map(b => b.y + b.height))],
    };
  })"""
"""Every edge label (all its lines) and every ``now`` mark of an SVG, as boxes measured by
the browser that draws them: [x0, y0, x1, y1] in the SVG's units."""


@contextmanager
def chromium(*extra: str) -> Iterator[Browser]:
    """A headless Chromium, closed afterwards; ``extra``: more command-line switches."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=[*ARGS, *extra]
        )
        try:
            yield browser
        finally:
            browser.close()


def watch_policy(page: Page) -> list[str]:
    """The Content-Security-Policy violations ``page`` meets, on every page it loads.

    Each is ``"DIRECTIVE BLOCKED_URI"``; a page of the view should cause none.
    """
    violations: list[str] = []

    def violated(report: str) -> None:
        violations.append(report)

    page.expose_function("__agentfsmViolation", violated)
    page.add_init_script(
        """document.addEventListener("securitypolicyviolation", (event) =>
          window.__agentfsmViolation(event.violatedDirective + " " + event.blockedURI));"""
    )
    return violations
