"""Who may use the view: the token, the Host, and where an action comes from.

Each refusal is a request a page of another site (or a rebound name) could make; the
browser tests (test_browser.py) make the same ones from a real second origin.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from agentfsm import SQLiteStore
from agentfsm.serve import create_app
from agentfsm.serve.guard import cookie_name, host_name
from tests.serve.travel import travel_agent

TOKEN = "s3cret-token"


@pytest.fixture
def ready(store_path: Path) -> Path:
    with SQLiteStore(store_path) as store:
        travel_agent("trip", store).start()
    return store_path


@pytest.fixture
def client(ready: Path) -> Iterator[TestClient]:
    app = create_app(ready, token=TOKEN, allowed_hosts=["testserver", "localhost"])
    with TestClient(app, follow_redirects=False) as client:
        yield client


def _state(path: Path) -> str:
    with SQLiteStore(path) as store:
        snapshot = store.load("trip")
    assert snapshot is not None
    return snapshot.state


@pytest.mark.parametrize("path", ["/", "/run?id=trip", "/api/runs", "/api/runs/trip"])
def test_every_route_needs_the_token(client: TestClient, path: str) -> None:
    answer = client.get(path)
    assert answer.status_code == 403
    assert answer.json()["error"] == "NoToken"
    wrong = client.get(path, headers={"Authorization": "token not-it"})
    assert wrong.status_code == 403


def test_the_token_in_the_url_sets_a_cookie_and_is_dropped_from_the_url(
    client: TestClient,
) -> None:
    answer = client.get("/run?id=trip&token=" + TOKEN)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/run?id=trip"
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"{cookie_name(TOKEN)}={TOKEN}; Path=/; HttpOnly; SameSite=Strict")
    assert client.get("/api/runs").json()["runs"][0]["run_id"] == "trip"  # the cookie now


@pytest.mark.parametrize("scheme", ["token", "Bearer"])
def test_a_program_sends_the_token_as_a_header(client: TestClient, scheme: str) -> None:
    answer = client.get("/api/runs", headers={"Authorization": f"{scheme} {TOKEN}"})
    assert answer.status_code == 200


def test_a_foreign_host_is_refused_even_with_the_token(client: TestClient) -> None:
    headers = {"Authorization": f"token {TOKEN}", "Host": "evil.example"}
    answer = client.get("/api/runs/trip", headers=headers)
    assert answer.status_code == 403
    assert answer.json()["error"] == "ForeignHost"
    assert "trip" not in answer.text
    headers["Host"] = "localhost:8765"
    assert client.get("/api/runs/trip", headers=headers).status_code == 200


@pytest.mark.parametrize(
    ("headers", "status", "kind"),
    [
        pytest.param({"content-type": "text/plain"}, 415, "NotJSON", id="no-cors-text-plain"),
        pytest.param(
            {"content-type": "application/x-www-form-urlencoded"}, 415, "NotJSON", id="form"
        ),
        pytest.param(
            {"content-type": "application/json", "origin": "http://evil.example"},
            403,
            "ForeignOrigin",
            id="other-origin",
        ),
        pytest.param(
            {"content-type": "application/json", "sec-fetch-site": "cross-site"},
            403,
            "ForeignOrigin",
            id="cross-site",
        ),
    ],
)
def test_an_action_from_elsewhere_is_refused_and_changes_nothing(
    client: TestClient, ready: Path, headers: dict[str, str], status: int, kind: str
) -> None:
    headers = {"Authorization": f"token {TOKEN}", **headers}
    answer = client.post("/api/runs/trip/actions", content='{"action": "pause"}', headers=headers)
    assert (answer.status_code, answer.json()["error"]) == (status, kind)
    assert _state(ready) == "ready"


def test_an_action_of_the_views_own_page_is_taken(client: TestClient, ready: Path) -> None:
    headers = {"Authorization": f"token {TOKEN}", "Origin": "http://testserver"}
    answer = client.post("/api/run/actions?id=trip", json={"action": "pause"}, headers=headers)
    assert answer.json()["state"] == "paused"
    assert _state(ready) == "paused"


def test_without_a_token_actions_still_need_json_and_the_own_origin(ready: Path) -> None:
    with TestClient(create_app(ready)) as client:
        text = client.post(
            "/api/runs/trip/actions",
            content='{"action": "pause"}',
            headers={"content-type": "text/plain"},
        )
        assert text.status_code == 415
        assert _state(ready) == "ready"


@pytest.mark.parametrize(
    "run_id", ["a/b", "..", ".", "../x", "50% off?#", "runs/trip", " spaced ", "x/actions"]
)
def test_every_run_id_the_store_accepts_is_reachable(store_path: Path, run_id: str) -> None:
    with SQLiteStore(store_path) as store:
        travel_agent(run_id, store).start()
    with TestClient(create_app(store_path)) as client:
        assert [run["run_id"] for run in client.get("/api/runs").json()["runs"]] == [run_id]
        assert client.get("/api/run", params={"id": run_id}).json()["run"]["run_id"] == run_id
        answer = client.post("/api/run/actions", params={"id": run_id}, json={"action": "pause"})
        assert answer.json()["state"] == "paused"


def test_a_link_of_the_old_form_leads_to_the_run(store_path: Path) -> None:
    with TestClient(create_app(store_path), follow_redirects=False) as client:
        answer = client.get("/runs/a%2Fb")
        assert answer.status_code == 308
        assert answer.headers["location"] == "../run?id=a%2Fb"


@pytest.mark.parametrize(
    ("header", "name"),
    [("127.0.0.1:8765", "127.0.0.1"), ("[::1]:8765", "::1"), ("LocalHost", "localhost")],
)
def test_host_name_drops_the_port(header: str, name: str) -> None:
    assert host_name(header) == name


def test_a_browser_is_told_why_in_a_page_a_program_in_json(client: TestClient) -> None:
    page = client.get("/", headers={"Accept": "text/html,application/xhtml+xml"})
    assert page.status_code == 403
    assert page.headers["content-type"].startswith("text/html")
    assert "open the URL &#x27;agentfsm ui&#x27; printed" in page.text
    assert client.get("/api/runs").json()["error"] == "NoToken"
