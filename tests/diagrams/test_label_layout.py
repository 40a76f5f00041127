"""No two edge labels of a diagram overlap, nor the ``now`` mark.

Measured in the SVG that Graphviz's ``dot`` renders, by the browser that draws it (headless
Chromium): every label's box is the one a reader sees.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from playwright.sync_api import Browser, Page

from agentfsm import MemoryStore
from agentfsm.diagrams import View, diagram, render
from agentfsm.states import Event
from tests.browser import LABEL_BOXES, chromium
from tests.serve.travel import travel_agent

GAP = 2.0
"""The room (SVG units, 1/72 inch) required between two labels: they must not even touch,
whatever small differences of font metrics between machines."""

WHERE: list[tuple[str, str | None]] = [
    ("ready", None),
    ("busy", "thinking"),
    ("busy", "acting"),
    ("requires_action", "awaiting_action"),
    ("input_required", "awaiting_input"),
    ("paused", "awaiting_action"),
    ("completed", "answered"),
    ("failed", "aborted"),
    ("shutdown", "exhausted"),
]
"""Where a run may be: the highlight (and its ``now`` mark) at each kind of place."""


class _At:
    def __init__(self, state: str, loop_state: str | None) -> None:
        self.state, self.loop_state = state, loop_state


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def _run_everywhere() -> list[Event]:
    store = MemoryStore()
    agent = travel_agent("trip", store)
    agent.start()
    agent.submit("What's the weather in Paris and Rome?")
    agent.submit("Book a hotel in Rome")
    agent.pause()
    agent.resume()
    agent.provide_input("2")
    agent.resolve_action({call.id: "approve" for call in agent.pending})
    agent.submit("Book a taxi in Rome")
    agent.cancel()
    agent.shutdown()
    agent.close()
    return store.events("trip")


@pytest.fixture(scope="module")
def long_log() -> list[Event]:
    """A run through every run state: tool rounds, a question, an approval, a pause, a cancel."""
    # In a thread of its own: Playwright's synchronous API runs an event loop in this one.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(_run_everywhere).result()


def _touching(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] + GAP and b[0] < a[2] + GAP and a[1] < b[3] + GAP and b[1] < a[3] + GAP


@pytest.fixture(scope="module")
def page(browser: Browser) -> Iterator[Page]:
    page = browser.new_page()
    yield page
    page.close()


def _overlaps(page: Page, svg: bytes) -> list[tuple[str, str]]:
    page.evaluate("svg => { document.body.innerHTML = svg; }", svg.decode("utf-8"))
    labels = page.evaluate(LABEL_BOXES)
    assert labels, "no labels found: the SVG's structure changed"
    return [
        (a["text"], b["text"])
        for a, b in itertools.combinations(labels, 2)
        if _touching(a["box"], b["box"])
    ]


@pytest.mark.parametrize("view", ["run", "loop", "combined"])
def test_no_two_labels_of_a_diagram_overlap(page: Page, long_log: list[Event], view: View) -> None:
    drawings = {"the machine": diagram(view)}
    for state, loop_state in WHERE:
        drawings[f"a run in {state}/{loop_state}"] = diagram(
            view, _At(state, loop_state), long_log
        )
    found = {name: _overlaps(page, render(dot, "svg")) for name, dot in drawings.items()}
    assert {name: pairs for name, pairs in found.items() if pairs} == {}


CROWDED = b"""<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100">
<g class="graph">
<g class="edge"><title>a->b</title><text x="50" y="50" font-size="10">first label</text></g>
<g class="edge"><title>a->c</title><text x="80" y="52" font-size="10">second label</text></g>
<g class="edge"><title>a->d</title><text x="150" y="90" font-size="10">apart</text></g>
<g class="node"><title>b</title><text x="150" y="20" font-size="10">b</text></g>
</g></svg>"""


@pytest.mark.parametrize("view", ["run", "loop", "combined"])
def test_no_two_labels_of_a_flat_diagram_overlap(page: Page, view: View) -> None:
    assert _overlaps(page, render(diagram(view, flat=True), "svg")) == []


def test_the_check_sees_labels_that_overlap(page: Page) -> None:
    assert _overlaps(page, CROWDED) == [("first label", "second label")]
