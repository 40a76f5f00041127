"""Live updates: the feed polled by seq, and the Server-Sent Events the pages listen to."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentfsm import MemoryStore, SQLiteStore, StoreError
from agentfsm.errors import StoreWriteError
from agentfsm.serve import PollingFeed, create_app, open_read_only
from agentfsm.serve.feed import store_marks
from tests.serve.conftest import serving
from tests.serve.travel import travel_agent


def _events(lines: Iterator[str]) -> Iterator[tuple[str, Any]]:
    """The server-sent events of a stream, as (name, data) pairs; pings are skipped."""
    name, data = "message", ""
    for line in lines:
        if line.startswith("event:"):
            name = line.partition(":")[2].strip()
        elif line.startswith("data:"):
            data += line.partition(":")[2].strip()
        elif not line and data:
            yield name, json.loads(data)
            name, data = "message", ""


def test_the_feed_waits_until_a_run_moves() -> None:
    store = MemoryStore()
    agent = travel_agent("trip", store)
    naps: list[float] = []

    async def nap(seconds: float) -> None:
        naps.append(seconds)
        if len(naps) == 2:  # another writer saves while the feed waits
            await agent.astart()

    feed = PollingFeed(store, 0.5, sleep=nap)
    marks = asyncio.run(feed.changed(feed.marks()))
    assert naps == [0.5, 0.5]
    assert marks == {"trip": (1, 1)} == store_marks(store)
    assert asyncio.run(feed.changed({})) == marks  # already different: no wait
    assert naps == [0.5, 0.5]


@pytest.mark.parametrize("interval", [0, -1, True, "1"])
def test_the_feed_refuses_an_interval_that_is_not_positive(interval: object) -> None:
    with pytest.raises(ValueError, match=f"interval must be a positive number.*{interval!r}"):
        PollingFeed(MemoryStore(), interval)  # type: ignore[arg-type]


def test_the_view_reads_through_a_connection_that_cannot_write(store_path: Path) -> None:
    with SQLiteStore(store_path) as store:
        travel_agent("trip", store).start()
        snapshot = store.load("trip")
    assert snapshot is not None
    with open_read_only(store_path) as reader:
        assert reader.load("trip") == snapshot
        moved = snapshot.model_copy(update={"version": 2})
        with pytest.raises(StoreWriteError, match="read_only=True"):
            reader.save(moved, (), expected_version=1)


@pytest.mark.parametrize("content", [None, b""], ids=["missing", "empty"])
def test_the_view_never_makes_a_store(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "runs.db"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(StoreError, match="no run store at"):
        create_app(path)
    assert path.exists() == (content is not None)
    assert not path.exists() or path.read_bytes() == content


def test_the_runs_api_lists_state_reason_turn_and_last_event_time(store_path: Path) -> None:
    with SQLiteStore(store_path) as store:
        agent = travel_agent("trip", store)
        agent.start()
        agent.submit("What is the weather in Paris?")
        last = store.events("trip")[-1]
        stored = store.load("trip")
        assert stored is not None
    with serving(create_app(store_path)) as url:
        data = httpx.get(url + "api/runs").json()
    assert data["runs"] == [
        {
            "run_id": "trip",
            "state": "completed",
            "reason": "answered",
            "turn": 1,
            "seq": last.seq,
            "version": stored.version,  # one per save (a batch of events: group commit)
            "last_event_at": last.at,
        }
    ]
    assert data["states"][0] == "created"
    assert "requires_action" in data["states"]


def test_the_runs_stream_pushes_a_run_started_by_another_writer(store_path: Path) -> None:
    app = create_app(store_path, poll_interval=0.02)
    with serving(app) as url, httpx.stream("GET", url + "api/stream/runs", timeout=10) as stream:
        events = _events(stream.iter_lines())
        assert next(events) == ("runs", [])
        with SQLiteStore(store_path) as store:
            travel_agent("trip", store).start()
        name, rows = next(events)
    assert name == "runs"
    assert [(row["run_id"], row["state"]) for row in rows] == [("trip", "ready")]


def test_the_run_stream_sends_everything_then_only_what_is_new(store_path: Path) -> None:
    with SQLiteStore(store_path) as store:
        agent = travel_agent("trip", store)
        agent.start()
        app = create_app(store_path, poll_interval=0.02)
        with (
            serving(app) as url,
            httpx.stream("GET", url + "api/stream/runs/trip", timeout=10) as stream,
        ):
            events = _events(stream.iter_lines())
            name, first = next(events)
            assert name == "run"
            assert first["reset"] is True
            assert [e["event"] for e in first["events"]] == ["start"]
            assert 'class="node state current"' in first["svg"]
            agent.submit("Book a hotel in Rome")
            # Each transition is saved on its own: a poll may see the run between two.
            updates = [next(events)[1]]
            while updates[-1]["run"]["state"] != "input_required":
                updates.append(next(events)[1])
            agent.close()
    assert {update["reset"] for update in updates} == {False}
    seqs = [event["seq"] for update in updates for event in update["events"]]
    assert seqs == list(range(2, updates[-1]["run"]["seq"] + 1))  # each event once, in order
    last = updates[-1]
    assert last["run"]["question"] == "For how many guests?"
    assert last["run"]["allowed"] == ["cancel", "expire", "pause", "provide_input", "shutdown"]
    current = re.findall(r'class="node [a-z]+ current">\s*<title>([^<]+)</title>', last["svg"])
    assert current == ["run.input_required", "loop.awaiting_input"]


def test_the_run_stream_says_when_there_is_no_such_run(store_path: Path) -> None:
    with (
        serving(create_app(store_path, poll_interval=0.02)) as url,
        httpx.stream("GET", url + "api/stream/runs/ghost", timeout=10) as stream,
    ):
        name, data = next(_events(stream.iter_lines()))
    assert (name, data) == (
        "missing",
        {"error": "NoSuchRun", "message": "no run 'ghost' in the store"},
    )


def test_the_pages_and_their_assets_are_served_from_the_package(store_path: Path) -> None:
    with serving(create_app(store_path)) as url:
        for path, words in [
            ("", "agentfsm runs"),
            ("run?id=trip", 'id="diagram"'),
            ("static/run.js", '"api/stream/run"'),
            ("static/app.css", "#diagram"),
        ]:
            answer = httpx.get(url + path)
            assert answer.status_code == 200
            assert words in answer.text
            assert "http" not in answer.text.replace(url, "")  # nothing from elsewhere (no CDN)
