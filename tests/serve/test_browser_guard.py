"""The view in a real browser: another origin, a rebound name, odd run ids, a phone's width.

The view runs as ``agentfsm ui`` serves it (a token, the Host checked); Chromium resolves
``evil.example`` to 127.0.0.1, as DNS rebinding would make it; the other origin is a page
served on another port of 127.0.0.1 (same site, so the view's cookie goes along with its
requests: only the view's own checks stop them).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from agentfsm import SQLiteStore
from agentfsm.serve import create_app
from tests.browser import chromium
from tests.serve.conftest import serving
from tests.serve.travel import travel_agent

TOKEN = "browser-test-token"
ODD = ["a/b", "..", "50% off?#x"]

ATTACK = """<!doctype html><body><script>
window.done = (async () => {
  const view = new URLSearchParams(location.search).get("view");
  const tries = [
    {mode: "no-cors", headers: {"content-type": "text/plain"}},
    {mode: "no-cors", headers: {"content-type": "application/x-www-form-urlencoded"}},
    {mode: "cors", headers: {"content-type": "application/json"}},
  ];
  const seen = [];
  for (const [i, extra] of tries.entries()) {
    try {
      const answer = await fetch(view + "api/runs/trip/actions", {
        method: "POST", credentials: "include", body: JSON.stringify({action: "cancel"}), ...extra,
      });
      seen.push(i + ":" + answer.type + ":" + answer.status);
    } catch (error) { seen.push(i + ":refused"); }
  }
  try { seen.push("read:" + (await (await fetch(view + "api/runs/trip")).text())); }
  catch (error) { seen.push("read:refused"); }
  return seen;
})();
</script></body>"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium("--host-resolver-rules=MAP evil.example 127.0.0.1") as launched:
        yield launched


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    yield context
    context.close()


def _page(context: BrowserContext) -> tuple[Page, list[str]]:
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    return page, errors


def _waiting_runs(path: Path) -> None:
    with SQLiteStore(path) as store:
        for run_id in ["trip", *ODD]:
            agent = travel_agent(run_id, store)
            agent.start()
            agent.submit("Book a hotel in Rome")
            agent.provide_input("2 guests")
            agent.close()


@pytest.fixture
def runs(store_path: Path) -> Path:
    """Runs waiting for approval (made in a thread: Playwright's loop runs in this one)."""
    with ThreadPoolExecutor(1) as pool:
        pool.submit(_waiting_runs, store_path).result()
    return store_path


def _view(store: Path) -> Starlette:
    return create_app(store, agent=travel_agent, token=TOKEN, allowed_hosts=["127.0.0.1"])


def _version(store: Path, run_id: str = "trip") -> tuple[str, int]:
    with SQLiteStore(store) as opened:
        snapshot = opened.load(run_id)
    assert snapshot is not None
    return snapshot.state, snapshot.version


def test_another_origin_can_neither_act_nor_read_and_a_rebound_name_is_refused(
    context: BrowserContext, runs: Path
) -> None:
    attacker = Starlette(routes=[Route("/", lambda request: HTMLResponse(ATTACK))])
    with serving(_view(runs)) as url, serving(attacker) as evil:
        page, errors = _page(context)
        assert page.goto(url).status == 403  # no token: nothing, not even the page
        page.goto(f"{url}?token={TOKEN}")  # the URL the command printed
        assert page.url == url  # the token left the address bar for a cookie
        expect(page.locator('#runs tr[data-run="trip"]')).to_have_count(1)
        before = _version(runs)

        # A page of another origin, in the same browser (the cookie would go along).
        other = context.new_page()
        other.goto(f"{evil}?view={url}")
        seen = other.evaluate("window.done")
        assert seen[:3] == ["0:opaque:0", "1:opaque:0", "2:refused"]
        assert seen[3] == "read:refused"
        assert _version(runs) == before

        # DNS rebinding: evil.example resolves to the view's address; its Host is refused.
        port = url.rsplit(":", 1)[1].rstrip("/")
        rebound = other.goto(f"http://evil.example:{port}/api/runs/trip?token={TOKEN}")
        assert rebound is not None
        assert rebound.status == 403
        assert "requires_action" not in rebound.text()
        assert "ForeignHost" in rebound.text()
        page.goto("about:blank")
        assert errors == []


def test_odd_run_ids_open_and_an_unknown_run_offers_nothing(
    context: BrowserContext, runs: Path, tmp_path: Path
) -> None:
    with serving(_view(runs)) as url:
        page, errors = _page(context)
        page.goto(f"{url}?token={TOKEN}")
        for run_id in ODD:
            page.goto(url)
            page.locator(f'#runs tr[data-run="{run_id}"] a').click()
            expect(page.locator("#run-id")).to_have_text(run_id)
            expect(page.locator("#state")).to_have_text("requires_action")
            expect(page.locator("#error")).to_be_hidden()
            assert _visible_buttons(page) == ["Send decisions", "Pause", "Cancel"]

        page.goto(url + "run?id=no-such-run")
        expect(page.locator("#error")).to_contain_text("no run 'no-such-run'")
        expect(page.locator("#live")).to_have_text("no such run")
        assert _visible_buttons(page) == []
        for part in ("#status", "#diagram", ".columns"):  # nothing of a run is shown
            expect(page.locator(part)).to_be_hidden()
        page.goto("about:blank")
        assert errors == []


def _visible_buttons(page: Page) -> list[str]:
    buttons = page.locator("#actions button:visible")
    texts: list[str] = buttons.evaluate_all("nodes => nodes.map(node => node.textContent)")
    return texts


@pytest.mark.parametrize("width", [390, 1280])
def test_the_run_page_fits_a_phone_and_a_laptop(
    browser: Browser, runs: Path, tmp_path: Path, width: int
) -> None:
    context = browser.new_context(viewport={"width": width, "height": 844})
    try:
        with serving(_view(runs)) as url:
            page = context.new_page()
            page.goto(f"{url}run?id=trip&token={TOKEN}")
            expect(page.locator("#state")).to_have_text("requires_action")
            expect(page.locator("#events tbody tr").first).to_be_visible()
            overflow = page.evaluate("document.documentElement.scrollWidth")
            assert overflow <= width, f"the page is {overflow} px wide in a {width} px window"
            for selector in ("#status", "#actions", "#diagram", "#conversation"):
                box = page.locator(selector).bounding_box()
                assert box is not None
                assert box["x"] >= 0
                assert box["x"] + box["width"] <= width, selector
            page.screenshot(path=tmp_path / f"run-{width}.png", full_page=True)
            page.goto("about:blank")
    finally:
        context.close()
