"""End to end in a real browser: the live view of a run driven by another process.

The view is served on 127.0.0.1 by uvicorn; headless Chromium (Debian's) opens it; the run
is started by a separate Python process on the same store: a SQLite file (the view polls
it) or a PostgreSQL database (the view is woken by its notifications).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from agentfsm import open_store
from agentfsm.serve import create_app
from agentfsm.stores.postgres import PostgresStore
from tests.browser import chromium, watch_policy
from tests.serve.conftest import serving
from tests.serve.travel import travel_agent

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "<script>window.pwned = 1</script><img src=x onerror='window.pwned = 2'>"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    violations = watch_policy(page)  # the pages work under the view's CSP
    yield page
    page.close()
    assert (errors, violations) == ([], [])


@pytest.fixture(params=["sqlite", "postgres"])
def runs_url(request: pytest.FixtureRequest, store_path: Path) -> str:
    """A run store (made, with no run), named as ``agentfsm ui --store`` takes it."""
    if request.param == "sqlite":
        return str(store_path)
    url: str = request.getfixturevalue("postgres_url")
    PostgresStore(url).close()
    return url


def _current(page: Page) -> list[str]:
    titles = page.locator("#diagram g.node.current > title")
    found: list[str] = titles.evaluate_all("nodes => nodes.map(node => node.textContent)")
    return found


def _drive(store: str, run_id: str, text: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.serve.travel", store, run_id, text],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_an_operator_watches_a_run_of_another_process_and_approves_it(
    page: Page, runs_url: str, tmp_path: Path
) -> None:
    app = create_app(runs_url, agent=travel_agent, poll_interval=0.05)
    with serving(app) as url:
        page.goto(url)
        expect(page.locator("#empty")).to_be_visible()
        driver = _drive(runs_url, "trip", "Book a hotel in Rome")
        try:
            # The runs page shows the run as soon as the other process saves it.
            row = page.locator('#runs tr[data-run="trip"]')
            expect(row).to_have_attribute("data-state", "input_required")
            row.get_by_role("link").click()
            expect(page.locator("#state")).to_have_text("input_required")
            assert _current(page) == ["run.input_required", "loop.awaiting_input"]
            expect(page.locator("#question")).to_have_text("For how many guests?")

            # A refused action: the guard's message is shown and nothing is stored.
            with open_store(runs_url) as store:
                before = store.load("trip")
            page.locator("#send-answer").click()
            expect(page.locator("#error")).to_contain_text("GuardFailedError")
            expect(page.locator("#error")).to_contain_text("provide_input")
            with open_store(runs_url) as store:
                assert store.load("trip") == before

            # The other process answers; the page's highlight moves to requires_action.
            assert driver.stdin is not None
            driver.stdin.write(f"3 guests {SCRIPT}\n")
            driver.stdin.flush()
            expect(page.locator("#state")).to_have_text("requires_action")
            output, _ = driver.communicate(timeout=30)
            assert output.split() == ["input_required", "requires_action"]
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.communicate()
        assert _current(page) == ["run.requires_action", "loop.awaiting_action"]
        expect(page.locator("#pending")).to_contain_text(
            'book_hotel({"city": "Rome", "guests": 3})'
        )

        # Approve in the page: the view's Agent runs the tool and the model; completed.
        page.locator("#send-decisions").click()
        expect(page.locator("#state")).to_have_text("completed")
        expect(page.locator("#error")).to_be_hidden()
        assert _current(page) == ["run.completed", "loop.answered"]
        expect(page.locator("#conversation")).to_contain_text("Done: hotel booked in Rome")
        expect(page.locator("#events tbody tr").last).to_contain_text("complete")

        # Stored text is shown as text, never run.
        expect(page.locator("#conversation")).to_contain_text(SCRIPT)
        assert page.locator("#conversation script, #conversation img").count() == 0
        assert page.evaluate("window.pwned") is None
        page.screenshot(path=tmp_path / "run-completed.png", full_page=True)
        page.goto(url)
        expect(page.locator('#runs tr[data-run="trip"]')).to_have_attribute(
            "data-state", "completed"
        )
        expect(page.locator('#runs tr[data-run="trip"] td').nth(2)).to_have_text("answered")
        page.select_option("#state-filter", "paused")  # the filter hides what does not match
        expect(page.locator("#runs tbody tr")).to_have_count(0)
        assert page.url.endswith("?state=paused")
        page.select_option("#state-filter", "completed")
        expect(page.locator("#runs tbody tr")).to_have_count(1)
        page.goto("about:blank")  # closes the page's event stream before the server stops
    with open_store(runs_url) as store:
        stored = store.load("trip")
    assert stored is not None
    assert stored.state == "completed"
