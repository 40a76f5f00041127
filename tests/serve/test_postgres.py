"""The live view and the A2A server over PostgreSQL: store URLs, and LISTEN/NOTIFY updates.

Every test runs against the session's throwaway PostgreSQL server (tests/conftest.py); the
runs are driven by other processes, as in production.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
import pytest
from a2a.helpers.proto_helpers import get_text_parts
from a2a.types import TaskState
from starlette.testclient import TestClient

from agentfsm import MemoryStore, SQLiteStore, StoreError, open_store
from agentfsm.cli import main
from agentfsm.serve import PollingFeed, create_app, default_feed
from agentfsm.serve.feed import store_marks
from agentfsm.serve.notify_feed import NotifyFeed
from agentfsm.serve.stores import open_to_read, shown
from agentfsm.stores._postgres_sql import LISTEN
from agentfsm.stores.postgres import PostgresStore
from tests.serve.a2a_support import client, collect, run, text_message
from tests.serve.conftest import serving
from tests.serve.test_stream import _events
from tests.serve.travel import travel_agent

ROOT = Path(__file__).resolve().parents[2]
SECRET = "s3cret-Pw"


def _with_password(url: str) -> str:
    """``url`` with a password (the test server trusts its socket, so any password works)."""
    scheme, _, rest = url.partition("://")
    user, _, where = rest.partition("@")
    return f"{scheme}://{user}:{SECRET}@{where}"


@pytest.fixture
def pg_url(postgres_url: str) -> str:
    """A PostgreSQL run store (agentfsm's tables made), named by a URL with a password."""
    url = _with_password(postgres_url)
    PostgresStore(url).close()
    return url


def _drive(url: str, run_id: str, text: str) -> subprocess.Popen[str]:
    """Another process that starts ``run_id``, submits ``text``, then answers from stdin."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.serve.travel", url, run_id, text],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_the_default_feed_listens_to_postgres_and_polls_the_others(
    pg_url: str, tmp_path: Path
) -> None:
    with PostgresStore(pg_url) as store:
        assert isinstance(default_feed(store), NotifyFeed)
    with SQLiteStore(tmp_path / "runs.db") as sqlite:
        assert isinstance(default_feed(sqlite, 0.5), PollingFeed)
    assert isinstance(default_feed(MemoryStore()), PollingFeed)


@pytest.mark.parametrize("recheck", [0, -1.0, True, "5"])
def test_the_notify_feed_refuses_a_recheck_that_is_not_positive(
    pg_url: str, recheck: object
) -> None:
    with (
        PostgresStore(pg_url) as store,
        pytest.raises(ValueError, match=f"recheck must be a positive number.*{recheck!r}"),
    ):
        NotifyFeed(store, recheck=recheck)  # type: ignore[arg-type]


def test_a_save_just_after_the_feed_read_the_marks_is_not_missed(pg_url: str) -> None:
    # The feed never rechecks on its own here: only the save's notification can wake it.
    with PostgresStore(pg_url) as store:
        feed = NotifyFeed(store, recheck=3600)
        seen = feed.marks()
        read = feed.marks
        reads: list[dict[str, tuple[int, int]]] = []

        def read_then_another_process_saves() -> dict[str, tuple[int, int]]:
            now = read()
            if not reads:  # the save commits after this read, before the feed waits
                with PostgresStore(pg_url) as other:
                    travel_agent("trip", other).start()
            reads.append(now)
            return now

        feed.marks = read_then_another_process_saves  # type: ignore[method-assign]

        async def wait() -> dict[str, tuple[int, int]]:
            try:
                return await asyncio.wait_for(feed.changed(seen), 30)
            finally:
                await feed.aclose()

        marks = asyncio.run(wait())
        assert reads[0] == seen == {}
        assert marks == {"trip": (1, 1)} == store_marks(store)


def _drop_listeners(url: str) -> int:
    """Terminate the server side of every connection LISTENing for saves; how many."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE query = %s AND pid <> pg_backend_pid()",
            (LISTEN,),
        ).fetchall()
    return len(rows)


def test_the_notify_feed_listens_again_when_its_connection_drops(pg_url: str) -> None:
    with PostgresStore(pg_url) as store:
        feed = NotifyFeed(store, recheck=3600)  # only a notification can wake it

        def drop_then_save() -> None:
            while not _drop_listeners(pg_url):  # until the feed is listening
                time.sleep(0.01)
            with PostgresStore(pg_url) as other:
                travel_agent("trip", other).start()

        async def wait() -> dict[str, tuple[int, int]]:
            try:
                saving = asyncio.create_task(asyncio.to_thread(drop_then_save))
                marks = await asyncio.wait_for(feed.changed({}), 30)
                await saving
                return marks
            finally:
                await feed.aclose()

        assert asyncio.run(wait()) == {"trip": (1, 1)}


def test_the_notify_feed_says_when_the_database_is_gone(
    postgres_server: object, pg_url: str
) -> None:
    store = PostgresStore(pg_url)
    feed = NotifyFeed(store, recheck=3600)
    store._conninfo = pg_url.replace("/db_", "/gone_db_")  # the database dropped, say

    async def wait() -> None:
        await feed.changed({})

    with pytest.raises(StoreError) as caught:
        asyncio.run(wait())
    store.close()
    assert "gone_db_" in str(caught.value)
    assert SECRET not in str(caught.value)


def test_the_view_follows_a_run_another_process_drives_over_notify(pg_url: str) -> None:
    app = create_app(pg_url)
    feed = app.state.view.feed
    assert isinstance(feed, NotifyFeed)
    feed.recheck = 3600.0  # no polling at all: every update below comes from a NOTIFY
    with (
        serving(app) as url,
        httpx.stream("GET", url + "api/stream/runs", timeout=30) as runs_stream,
    ):
        runs = _events(runs_stream.iter_lines())
        assert next(runs) == ("runs", [])
        driver = _drive(pg_url, "trip", "Book a hotel in Rome")
        try:
            rows: list[dict[str, object]] = []
            while not rows or rows[0]["state"] != "input_required":
                rows = next(runs)[1]
            assert [row["run_id"] for row in rows] == ["trip"]
            with httpx.stream("GET", url + "api/stream/runs/trip", timeout=30) as run_stream:
                updates = _events(run_stream.iter_lines())
                name, first = next(updates)
                assert (name, first["reset"], first["run"]["state"]) == (
                    "run",
                    True,
                    "input_required",
                )
                assert driver.stdin is not None
                driver.stdin.write("3\n")
                driver.stdin.flush()
                last = first
                while last["run"]["state"] != "requires_action":
                    last = next(updates)[1]
                    assert last["reset"] is False
            assert driver.communicate(timeout=30)[0].split() == [
                "input_required",
                "requires_action",
            ]
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.communicate()
        data = httpx.get(url + "api/runs/trip", timeout=10).json()
    assert data["run"]["state"] == "requires_action"
    assert data["run"]["pending"][0]["name"] == "book_hotel"
    assert [e["seq"] for e in data["events"]] == list(range(1, data["run"]["seq"] + 1))


def test_an_operator_approves_a_postgres_run_through_the_view(pg_url: str) -> None:
    with open_store(pg_url) as store:
        agent = travel_agent("trip", store)
        agent.start()
        agent.submit("Book a hotel in Rome")
        agent.provide_input("2")
        agent.close()
    with TestClient(create_app(pg_url, agent=travel_agent)) as client:
        refused = client.post("/api/runs/trip/actions", json={"action": "provide_input"})
        answer = client.post(
            "/api/runs/trip/actions",
            json={"action": "resolve", "decisions": {"t1-book_hotel-1": "approve"}},
        )
    assert refused.status_code == 400
    assert answer.status_code == 200
    assert answer.json()["state"] == "completed"
    with open_store(pg_url) as store:
        snapshot = store.load("trip")
        assert snapshot is not None
        assert snapshot.state == "completed"
        assert store.events("trip")[-1].event == "complete"


def test_the_view_never_makes_the_tables_of_an_empty_database(postgres_url: str) -> None:
    url = _with_password(postgres_url)
    with pytest.raises(StoreError, match="the database is empty") as caught:
        create_app(url)
    assert SECRET not in str(caught.value)
    with pytest.raises(StoreError, match="the database is empty"):
        PostgresStore(url, create=False)  # still empty


def test_store_urls_are_shown_without_their_password(tmp_path: Path) -> None:
    assert shown(f"postgresql://me:{SECRET}@db/runs") == "postgresql://me:***@db/runs"
    assert shown(tmp_path / "runs.db") == str(tmp_path / "runs.db")
    path = tmp_path / "runs.db"
    SQLiteStore(path).close()
    with open_to_read(f"sqlite:///{path}") as reader:
        assert reader.list_runs() == []
        assert isinstance(reader, SQLiteStore)


@contextmanager
def _serve(command: list[str], cwd: Path) -> Iterator[str]:
    """Run ``agentfsm COMMAND`` in ``cwd`` and yield its first line; it never prints SECRET."""
    process = subprocess.Popen(
        [sys.executable, "-m", "agentfsm.cli", *command],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    try:
        yield process.stdout.readline()
    finally:
        process.terminate()
        out, err = process.communicate(timeout=10)
        assert SECRET not in out + err


def test_agentfsm_ui_serves_a_postgres_store_without_printing_its_password(
    pg_url: str,
) -> None:
    with open_store(pg_url) as store:
        travel_agent("trip", store).start()
    agent = ["--agent", "tests.serve.travel:travel_agent"]
    command = ["ui", "--store", pg_url, "--port", "0", *agent]
    with _serve(command, ROOT) as first:
        assert first.startswith("agentfsm ui: serving postgresql://agentfsm:***@/db_"), first
        assert SECRET not in first
        url, _, token = first.split(" at ")[1].strip().partition("?token=")
        with httpx.Client(headers={"Authorization": f"token {token}"}, timeout=10) as http:
            assert [r["run_id"] for r in http.get(url + "api/runs").json()["runs"]] == ["trip"]
            answer = http.post(url + "api/runs/trip/actions", json={"action": "pause"})
        assert answer.json()["state"] == "paused"
    with open_store(pg_url) as store:
        snapshot = store.load("trip")
        assert snapshot is not None
        assert snapshot.state == "paused"


FACTORY = """
from agentfsm import Agent, ScriptedModel


def make_agent(run_id, store):
    return Agent(ScriptedModel().text("Hello from PostgreSQL."), run_id=run_id, store=store)
"""


def test_agentfsm_serve_a2a_keeps_its_runs_in_postgres(postgres_url: str, tmp_path: Path) -> None:
    url = _with_password(postgres_url)  # an empty database: serve-a2a makes the tables
    (tmp_path / "myagent.py").write_text(textwrap.dedent(FACTORY))
    command = ["serve-a2a", "--agent", "myagent:make_agent", "--store", url, "--port", "0"]
    with _serve(command, tmp_path) as first:
        assert first.startswith("serving 'agentfsm' over A2A at http://127.0.0.1:"), first
        assert "(runs in postgresql://agentfsm:***@/db_" in first
        base = first.split(" at ")[1].split(" ")[0]

        async def talk() -> list[str]:
            a2a = await client(base)
            (response,) = await collect(a2a, text_message("Hi", context_id="pg-run"))
            assert response.task.status.state == TaskState.TASK_STATE_COMPLETED
            return get_text_parts(response.task.artifacts[0].parts)

        assert run(talk()) == ["Hello from PostgreSQL."]
    with open_store(url) as store:
        snapshot = store.load("pg-run")
        assert snapshot is not None
        assert snapshot.state == "completed"


@pytest.mark.parametrize("command", ["ui", "serve-a2a"])
def test_a_store_that_cannot_be_opened_is_one_line_without_the_password(
    postgres_url: str, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    url = _with_password(postgres_url).replace("/db_", "/no_such_db_")
    extra = ["--agent", "tests.serve.travel:travel_agent"] if command == "serve-a2a" else []
    assert main([command, "--store", url, "--port", "0", *extra]) in (1, 2)
    err = capsys.readouterr().err
    assert err.startswith(f"agentfsm {command}: error: ")
    assert "no_such_db_" in err
    assert SECRET not in err
