"""Operator actions through the view's API.

Each is the Agent's own guarded transition, or a refusal that names what was wrong and
changes nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from agentfsm import Agent, AgentFSMError, MemoryStore, RunStore, Snapshot, SQLiteStore
from agentfsm.serve import AgentFactory, create_app
from agentfsm.serve.actions import _NoModel
from agentfsm.states import Event
from tests.serve.travel import travel_agent


def _to_requires_action(store: RunStore, run_id: str = "trip") -> None:
    agent = travel_agent(run_id, store)
    agent.start()
    agent.submit("Book a hotel in Rome")
    agent.provide_input("2")
    assert agent.state == "requires_action"
    agent.close()


def _stored(path: Path, run_id: str = "trip") -> tuple[Snapshot | None, list[Event]]:
    with SQLiteStore(path) as store:
        return store.load(run_id), store.events(run_id)


@pytest.fixture
def waiting(store_path: Path) -> Path:
    with SQLiteStore(store_path) as store:
        _to_requires_action(store)
    return store_path


def _client(path: Path, agent: AgentFactory | None = travel_agent) -> Iterator[TestClient]:
    with TestClient(create_app(path, agent=agent)) as client:
        yield client


@pytest.fixture
def client(waiting: Path) -> Iterator[TestClient]:
    yield from _client(waiting)


@pytest.fixture
def viewer(waiting: Path) -> Iterator[TestClient]:
    """A view started without an agent factory."""
    yield from _client(waiting, agent=None)


def _act(client: TestClient, **body: object) -> tuple[int, dict[str, object]]:
    answer = client.post("/api/runs/trip/actions", json=body)
    data: dict[str, object] = answer.json()
    return answer.status_code, data


def test_approving_runs_the_tool_and_the_model_to_completed(
    client: TestClient, waiting: Path
) -> None:
    status, data = _act(client, action="resolve", decisions={"t1-book_hotel-1": "approve"})
    assert (status, data["state"]) == (200, "completed")
    assert data["reply"] == "Done: hotel booked in Rome for 2 guests, confirmation H-8."
    snapshot, _ = _stored(waiting)
    assert snapshot is not None
    assert snapshot.state == "completed"


def test_denying_is_the_same_transition_with_a_denied_call(
    client: TestClient, waiting: Path
) -> None:
    status, _data = _act(client, action="resolve", decisions={"t1-book_hotel-1": "deny"})
    assert status == 200
    _, events = _stored(waiting)
    resolved = [e for e in events if e.event == "resolve_action"]
    assert resolved[-1].data["decisions"] == {
        "t1-book_hotel-1": {"kind": "deny", "reason": None, "value": None}
    }


def test_pause_and_resume_work_without_an_agent_factory(viewer: TestClient, waiting: Path) -> None:
    version = viewer.get("/api/runs/trip").json()["run"]["version"]
    assert _act(viewer, action="pause", version=version) == (
        200,
        {"state": "paused", "reason": None, "reply": None},
    )
    assert _act(viewer, action="resume")[1]["state"] == "requires_action"
    snapshot, events = _stored(waiting)
    assert snapshot is not None
    assert snapshot.state == "requires_action"
    assert [e.event for e in events[-2:]] == ["pause", "resume"]


def test_cancel_closes_the_waiting_turn(viewer: TestClient, waiting: Path) -> None:
    assert _act(viewer, action="cancel")[1]["state"] == "failed"
    snapshot, _ = _stored(waiting)
    assert snapshot is not None
    assert snapshot.pending == ()


@pytest.mark.parametrize(
    ("body", "kind", "words"),
    [
        pytest.param({"action": "resume"}, "IllegalTransitionError", "resume", id="illegal"),
        pytest.param(
            {"action": "answer", "text": "x"},
            "IllegalTransitionError",
            "provide_input",
            id="answer-while-requires-action",
        ),
        pytest.param(
            {"action": "resolve", "decisions": {"nope": "approve"}},
            "GuardFailedError",
            "decides_every_pending_call",
            id="guard",
        ),
        pytest.param({"action": "pause", "version": 1}, "StaleView", "version 1", id="stale"),
    ],
)
def test_a_refused_action_says_why_and_changes_nothing(
    client: TestClient, waiting: Path, body: dict[str, object], kind: str, words: str
) -> None:
    before = _stored(waiting)
    status, data = _act(client, **body)
    assert (status, data["error"]) == (409, kind)
    assert words in str(data["message"])
    assert _stored(waiting) == before


def test_without_a_factory_approving_is_refused_and_says_how(
    viewer: TestClient, waiting: Path
) -> None:
    before = _stored(waiting)
    status, data = _act(viewer, action="resolve", decisions={"t1-book_hotel-1": "approve"})
    assert (status, data["error"]) == (409, "NoAgent")
    assert "--agent MODULE:FUNCTION" in str(data["message"])
    assert _stored(waiting) == before


@pytest.mark.parametrize(
    ("body", "words"),
    [
        pytest.param([1], "must be a JSON object", id="not-object"),
        pytest.param({"action": "explode"}, "'explode'; allowed: 'resolve'", id="action"),
        pytest.param({"action": "pause", "version": "7"}, "version must be", id="version"),
        pytest.param({"action": "resolve", "decisions": {}}, "decisions must be", id="empty"),
        pytest.param(
            {"action": "resolve", "decisions": {"c": "maybe"}}, "'maybe'; allowed", id="decision"
        ),
        pytest.param({"action": "answer"}, "text must be", id="text"),
    ],
)
def test_a_bad_request_names_the_field(
    client: TestClient, waiting: Path, body: object, words: str
) -> None:
    before = _stored(waiting)
    answer = client.post("/api/runs/trip/actions", json=body)
    assert answer.status_code == 400
    assert words in answer.json()["message"]
    assert _stored(waiting) == before


def test_a_body_that_is_not_json_is_a_bad_request(client: TestClient) -> None:
    headers = {"content-type": "application/json"}
    answer = client.post("/api/runs/trip/actions", content=b"{nope", headers=headers)
    assert (answer.status_code, answer.json()["error"]) == (400, "BadRequest")
    untyped = client.post("/api/runs/trip/actions", content=b'{"action": "pause"}')
    assert (untyped.status_code, untyped.json()["error"]) == (415, "NotJSON")


def test_an_unknown_run_is_not_found(client: TestClient) -> None:
    answer = client.post("/api/runs/ghost/actions", json={"action": "pause"})
    assert (answer.status_code, answer.json()["error"]) == (404, "NoSuchRun")
    assert client.get("/api/runs/ghost").status_code == 404


def test_a_factory_that_does_not_restore_the_run_is_reported(waiting: Path) -> None:
    def fresh(run_id: str, store: RunStore) -> Agent:
        return Agent("scripted:demo", run_id="another", store=store)

    for client in _client(waiting, agent=fresh):
        status, data = _act(client, action="resolve", decisions={"t1-book_hotel-1": "approve"})
        assert (status, data["error"]) == (500, "AgentFactoryError")
        assert "'another'" in str(data["message"])


def test_losing_the_race_to_another_process_is_a_conflict_and_keeps_its_save(
    waiting: Path,
) -> None:
    def pause_elsewhere(run_id: str) -> None:
        with SQLiteStore(waiting) as elsewhere:
            other = travel_agent(run_id, elsewhere)
            other.pause()
            other.close()

    def racing(run_id: str, store: RunStore) -> Agent:
        agent = travel_agent(run_id, store)
        # Another process saves first: here a thread, as the view's loop runs this one.
        with ThreadPoolExecutor(1) as pool:
            pool.submit(pause_elsewhere, run_id).result()
        return agent

    for client in _client(waiting, agent=racing):
        status, data = _act(client, action="resolve", decisions={"t1-book_hotel-1": "approve"})
        assert (status, data["error"]) == (409, "SnapshotConflictError")
        assert "another process changed the run" in str(data["message"])
    snapshot, events = _stored(waiting)
    assert snapshot is not None
    assert snapshot.state == "paused"
    assert events[-1].event == "pause"


def test_a_run_another_process_starts_driving_meanwhile_is_a_conflict(waiting: Path) -> None:
    from agentfsm.stores.leases import Hold

    def drive_elsewhere(run_id: str) -> None:  # its turn began: busy, under its lease
        with SQLiteStore(waiting) as elsewhere:
            stored = elsewhere.load(run_id)
            assert stored is not None
            hold = Hold("worker-7", 60.0, 20.0, time.time)
            elsewhere.hold(run_id, hold)
            busy = stored.model_copy(update={"state": "busy", "version": stored.version + 1})
            elsewhere.save(busy, [], expected_version=stored.version)
            elsewhere.unhold(run_id, hold)

    def racing(run_id: str, store: RunStore) -> Agent:
        agent = travel_agent(run_id, store)
        with ThreadPoolExecutor(1) as pool:
            pool.submit(drive_elsewhere, run_id).result()
        return agent

    for client in _client(waiting, agent=racing):
        status, data = _act(client, action="resolve", decisions={"t1-book_hotel-1": "approve"})
        assert (status, data["error"]) == (409, "RunBusyError")
        assert "'worker-7' drives it" in str(data["message"])
    snapshot, _ = _stored(waiting)
    assert snapshot is not None
    assert snapshot.state == "busy"  # the other process's, untouched


def test_a_busy_run_is_left_to_the_process_driving_it() -> None:
    source, busy = MemoryStore(), MemoryStore()

    def copy_while_busy(item: object) -> None:
        if isinstance(item, Event) and item.target == "busy" and busy.load("trip") is None:
            snapshot = source.load("trip")
            assert snapshot is not None
            first = snapshot.model_copy(update={"version": 1})  # its first save here
            busy.save(first, source.events("trip"), expected_version=None)

    agent = Agent("scripted:demo", run_id="trip", store=source, listeners=[copy_while_busy])
    agent.start()
    agent.submit("hello")
    with TestClient(create_app(busy, agent=travel_agent)) as client:
        status, data = _act(client, action="cancel")
    assert (status, data["error"]) == (409, "RunBusy")


def test_the_model_of_a_view_without_a_factory_refuses_to_be_called() -> None:
    with pytest.raises(AgentFSMError, match="no agent factory"):
        asyncio.run(_NoModel().complete([], []))


@pytest.mark.parametrize(
    ("arguments", "error", "words"),
    [
        (
            {"store": 5},
            TypeError,
            "store must be a store URL, a SQLite file's path, or a RunStore",
        ),
        ({"agent": "travel_agent"}, TypeError, "agent must be a callable or None"),
        ({"runs": object()}, TypeError, "runs must be a run driver such as TemporalRuns"),
        ({"feed": [1, 2]}, TypeError, "feed must be a ChangeFeed"),
        ({"poll_interval": 0}, ValueError, "poll_interval must be a number of seconds > 0"),
        ({"poll_interval": "1s"}, TypeError, "poll_interval must be a number of seconds > 0"),
    ],
)
def test_a_view_built_with_a_bad_argument_is_refused_naming_it(
    tmp_path: Path, arguments: dict[str, object], error: type[Exception], words: str
) -> None:
    """Refused before any store is opened: a path given beside it is not created."""
    path = tmp_path / "runs.db"
    with pytest.raises(error) as raised:
        create_app(**{"store": path, **arguments})  # type: ignore[arg-type]
    assert str(raised.value).startswith(words)
    assert not path.exists()
