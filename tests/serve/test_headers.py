"""Every response of the view carries its security headers: pages, JSON, streams, refusals."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from agentfsm import SQLiteStore
from agentfsm.serve import create_app
from agentfsm.serve.headers import SECURITY_HEADERS
from tests.serve.conftest import serving
from tests.serve.travel import travel_agent

TOKEN = "s3cret-token"
AUTH = {"Authorization": "token " + TOKEN}
POLICY = (
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)


@pytest.fixture
def client(store_path: Path) -> Iterator[TestClient]:
    with SQLiteStore(store_path) as store:
        travel_agent("trip", store).start()
    app = create_app(store_path, token=TOKEN, allowed_hosts=["testserver"])
    with TestClient(app, follow_redirects=False) as client:
        yield client


def _assert_hardened(answer: httpx.Response) -> None:
    assert answer.headers["content-security-policy"] == POLICY
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["referrer-policy"] == "no-referrer"
    assert answer.headers["x-frame-options"] == "DENY"
    for name, _ in SECURITY_HEADERS:  # added once, not twice
        assert len(answer.headers.get_list(name)) == 1


@pytest.mark.parametrize(
    ("request_", "status"),
    [
        (("GET", "/", AUTH), 200),
        (("GET", "/run?id=trip", AUTH), 200),
        (("GET", "/static/run.js", AUTH), 200),
        (("GET", "/api/runs/trip", AUTH), 200),
        (("GET", "/api/runs/nobody", AUTH), 404),
        (("GET", "/api/runs", {}), 403),  # no token: the Guard's refusal
        (("GET", "/?token=" + TOKEN, {}), 303),  # the Guard's welcome
        (("POST", "/api/runs/trip/actions", AUTH), 415),  # not JSON
    ],
    ids=["runs-page", "run-page", "script", "api", "api-404", "403", "welcome", "415"],
)
def test_every_answer_carries_the_security_headers(
    client: TestClient, request_: tuple[str, str, dict[str, str]], status: int
) -> None:
    method, path, headers = request_
    answer = client.request(method, path, headers=headers)
    assert answer.status_code == status
    _assert_hardened(answer)


def test_an_event_stream_carries_them_too(store_path: Path) -> None:
    with SQLiteStore(store_path) as store:
        travel_agent("trip", store).start()
    with (
        serving(create_app(store_path, poll_interval=0.05)) as url,
        httpx.stream("GET", url + "api/stream/run?id=trip", timeout=10) as answer,
    ):
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        _assert_hardened(answer)
        first = next(answer.iter_lines())
        assert first == "event: run"


def test_a_server_error_page_carries_them_too(store_path: Path) -> None:
    # Starlette's own 500 page comes from outside any user middleware: the view's headers
    # wrap the whole stack, that page included.
    app = create_app(store_path, token=TOKEN, allowed_hosts=["testserver"])

    async def broken(request: object) -> None:
        raise RuntimeError("a bug in a handler")

    app.router.routes = [  # a bug in the runs API, say
        type(route)(route.path, broken) if getattr(route, "path", "") == "/api/runs" else route
        for route in app.router.routes
    ]
    with TestClient(app, raise_server_exceptions=False) as client:
        answer = client.get("/api/runs", headers=AUTH)
    assert answer.status_code == 500
    _assert_hardened(answer)
