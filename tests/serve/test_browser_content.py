"""End to end in a real browser: a tool's content for the user, shown in the run's page.

A run on a SQLite file calls a tool that returns a `ToolContent` for the user (a PNG, a
text, an SVG carrying a script, a PDF): the page shows the PNG and the text, names the SVG
and the PDF without rendering them, and nothing the parts hold runs, with the view's
Content-Security-Policy in force and nothing of the page itself violating it.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from agentfsm import Agent, ScriptedModel, SQLiteStore
from agentfsm.serve import create_app
from agentfsm.states.content import ContentPart
from agentfsm.tools import tool
from agentfsm.tools.content import ToolContent
from tests.browser import chromium, watch_policy
from tests.images import png
from tests.serve.conftest import serving


def _png(width: int, height: int) -> bytes:
    """A real PNG: ``width`` x ``height`` pixels of violet."""
    return png(width, height, b"".join(b"\x00" + b"\x8b\x5c\xf6" * width for _ in range(height)))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


EVIL_SVG = (
    b'<svg xmlns="http://www.w3.org/2000/svg" onload="window.__pwned = 1; alert(1)">'
    b"<script>window.__pwned = 2; alert(2)</script></svg>"
)
PARTS = (
    ContentPart.media("image", "image/png", _b64(_png(600, 400))),
    ContentPart.of_text("Your chart of the north: <b>up 12%</b>"),
    ContentPart.media("image", "image/svg+xml", _b64(EVIL_SVG)),
    ContentPart.media("file", "application/pdf", _b64(b"%PDF-1.4\n" + b"0" * 2000)),
)


@tool
def chart(region: str) -> ToolContent:
    """A chart of a region's sales, for the user."""
    return ToolContent({"region": region, "up": 12}, for_user=PARTS)


@pytest.fixture(scope="module")
def shown_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A completed run whose log holds a ``user_content`` record with PARTS.

    Made before the browser starts (Playwright's sync API runs an event loop, where a
    synchronous Agent refuses to run).
    """
    store_path = tmp_path_factory.mktemp("shown") / "runs.db"
    with SQLiteStore(store_path) as store:
        model = ScriptedModel().tool_call("chart", region="north").text("North is up 12%.")
        agent = Agent(model, [chart], store=store, run_id="shown")
        agent.start()
        assert agent.submit("How is the north?").state == "completed"
        agent.shutdown()
    return store_path


@pytest.fixture(scope="module")
def browser(shown_run: Path) -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    dialogs: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    def dismiss(dialog: object) -> None:
        dialogs.append(dialog.message)  # type: ignore[attr-defined]
        dialog.dismiss()  # type: ignore[attr-defined]

    page.on("dialog", dismiss)
    yield page
    page.close()
    assert (errors, dialogs) == ([], [])


@pytest.fixture
def violations(page: Page) -> list[str]:
    """The CSP violations of ``page`` (watched before the test opens anything)."""
    return watch_policy(page)


def test_the_run_page_shows_the_content_for_the_user_and_runs_none_of_it(
    page: Page, violations: list[str], shown_run: Path, tmp_path: Path
) -> None:
    with serving(create_app(shown_run, poll_interval=0.05)) as url:
        page.goto(url + "run?id=shown")
        row = page.locator('#events tr[data-event="user_content"]')
        expect(row).to_have_count(1)
        expect(row).to_contain_text("shown to the user by chart")

        image = row.locator("img.part")
        expect(image).to_have_count(1)  # the PNG only
        assert image.get_attribute("src", timeout=5000).startswith("data:image/png;base64,")
        page.wait_for_function("document.querySelector('#events img.part').complete", timeout=5000)
        assert image.evaluate("img => [img.naturalWidth, img.naturalHeight]") == [600, 400]
        box = image.bounding_box()
        assert box is not None  # the CSS keeps it small: at most 24rem wide, 16rem high
        assert 0 < box["width"] <= 24 * 16 + 2
        assert 0 < box["height"] <= 16 * 16 + 2

        # Text is text (its markup shown as characters).
        text = row.locator("pre.part")
        expect(text).to_have_text("Your chart of the north: <b>up 12%</b>")
        assert text.locator("*").count() == 0

        # The SVG and the PDF are named, with their size, never rendered.
        placeholders = row.locator(".placeholder")
        expect(placeholders).to_have_count(2)
        expect(placeholders.nth(0)).to_contain_text("[image] image/svg+xml")
        expect(placeholders.nth(0)).to_contain_text(f"{len(EVIL_SVG)} bytes")
        expect(placeholders.nth(1)).to_contain_text("[file] application/pdf")
        expect(placeholders.nth(1)).to_contain_text("2.0 KB")
        assert row.locator("svg, object, embed, iframe, script, a").count() == 0

        page.screenshot(path=tmp_path / "user-content.png", full_page=True)
        assert page.evaluate("window.__pwned") is None
        assert violations == []  # the page itself keeps the CSP

        # The policy is in force: a script put in the page inline would not run.
        injected = """() => {
          const script = document.createElement("script");
          script.textContent = "window.__pwned = 3";
          document.body.append(script);
          return window.__pwned;
        }"""
        assert page.evaluate(injected) is None
        for _ in range(250):  # the report is an event: at most 5 s for it to land
            if violations:
                break
            page.wait_for_timeout(20)
        assert [v.split()[0] for v in violations] == ["script-src-elem"]
        page.goto("about:blank")


# Parts another writer could have stored (the store does not check what it is given).
HOSTILE = [
    ({"type": "image", "mime_type": "image/png", "data": '"><script>alert(1)</script>'}, None),
    ({"type": "image", "mime_type": "image/svg+xml", "data": _b64(EVIL_SVG)}, None),
    ({"type": "file", "mime_type": "text/html", "data": _b64(b"<script>alert(1)</script>")}, None),
    ({"type": "image", "mime_type": "image/png;charset=utf-8", "data": "iVBORw0KGgo="}, "png"),
    ({"type": "image", "mime_type": "IMAGE/JPEG", "data": "/9j/4AAQ"}, "jpeg"),
    ({"type": "image", "mime_type": "constructor", "data": "AAAA"}, None),
    (
        {"type": "image", "mime_type": "image/png", "data": "iVBORw0KGgo=", "uri": "javascript:"},
        "png",
    ),
    ({"type": "image", "mime_type": "image/gif", "data": "R0lG=D0="}, None),
    ({"type": "audio", "mime_type": "image/png", "data": "iVBORw0KGgo="}, None),
    ({"type": "image", "mime_type": "image/webp", "data": "A" * (8 * 1024 * 1024 + 4)}, None),
    ({"type": "text", "text": "<img src=x onerror=alert(1)>"}, None),
    ({"type": "image", "mime_type": 7, "data": ["x"]}, None),
    ("<script>alert(1)</script>", None),
]


def test_parts_another_writer_stored_never_become_markup_or_a_bad_image(
    page: Page, shown_run: Path
) -> None:
    with serving(create_app(shown_run, poll_interval=0.05)) as url:
        page.goto(url + "run?id=shown")
        expect(page.locator('#events tr[data-event="user_content"]')).to_have_count(1)
        for part, raster in HOSTILE:
            node = page.evaluate(
                """part => {
                  const node = contentPart(part);
                  document.body.append(node);
                  return {tag: node.tagName, src: node.getAttribute("src"),
                          children: node.querySelectorAll("*").length,
                          html: node.outerHTML.length < 5000 ? node.outerHTML : ""};
                }""",
                part,
            )
            if raster is None:
                assert node["tag"] != "IMG", part
                assert node["src"] is None
                assert "<script" not in node["html"], part
                assert "<img" not in node["html"], part
            else:
                assert node["tag"] == "IMG"
                assert node["src"].startswith(f"data:image/{raster};base64,"), part
        assert page.evaluate("window.__pwned") is None
        page.goto("about:blank")
