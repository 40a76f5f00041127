"""Stores named by URL (open_store, the CLI's --store); no password is ever shown."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

from agentfsm import Agent, MemoryStore, ScriptedModel, SQLiteStore, open_store
from agentfsm._runs_cli import runs_command
from agentfsm.errors import StoreError, StoreURLError
from agentfsm.stores import parse_store_url, redact
from agentfsm.stores._credentials import scrub
from agentfsm.stores.postgres import PostgresStore
from agentfsm.testing.postgres_server import TemporaryPostgres
from agentfsm.testing.store_conformance import make_events, make_snapshot

SECRET = "s3cr#t pa55"  # a space and a '#': it must be percent-encoded in a URL
ENCODED = "s3cr%23t%20pa55"
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("url", "kind", "target", "synchronous"),
    [
        ("memory:", "memory", "", "FULL"),
        ("sqlite:///runs.db", "sqlite", "runs.db", "FULL"),
        ("sqlite:////var/lib/agentfsm/runs.db", "sqlite", "/var/lib/agentfsm/runs.db", "FULL"),
        ("sqlite:///runs.db?synchronous=normal", "sqlite", "runs.db", "NORMAL"),
        ("sqlite:///my%20runs.db", "sqlite", "my runs.db", "FULL"),
        ("runs.db", "sqlite", "runs.db", "FULL"),
        ("C:/runs.db", "sqlite", "C:/runs.db", "FULL"),
        ("postgresql://u:pw@db/runs", "postgresql", "postgresql://u:pw@db/runs", "FULL"),
        ("postgres://db/runs", "postgresql", "postgres://db/runs", "FULL"),
    ],
)  # fmt: skip
def test_a_url_names_its_store(url: str, kind: str, target: str, synchronous: str) -> None:
    where = parse_store_url(url)
    assert (where.kind, where.target, where.synchronous) == (kind, target, synchronous)
    assert "pw" not in repr(where)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("", "it is empty"),
        ("memory:x", "takes nothing after the colon"),
        ("sqlite://runs.db", "sqlite:/// followed by the file's path"),
        ("sqlite:///", "names no file"),
        ("sqlite:///runs.db?synchronous=OFF", "synchronous='OFF'; expected FULL or NORMAL"),
        ("sqlite:///runs.db?journal=wal", r"unknown option\(s\) \['journal'\]"),
        (f"mysql://root:{ENCODED}@localhost/runs", "the scheme 'mysql' is not a store"),
    ],
)
def test_a_url_naming_no_store_is_refused_naming_what_is_allowed(url: str, problem: str) -> None:
    with pytest.raises(StoreURLError, match=problem) as caught:
        open_store(url)
    assert "memory:, sqlite:///, postgresql://" in str(caught.value)
    assert ENCODED not in str(caught.value)
    assert caught.value.url == redact(url)


def test_open_store_opens_each_kind(tmp_path: Path, postgres_url: str) -> None:
    with open_store("memory:") as memory:
        assert isinstance(memory, MemoryStore)
    with open_store(f"sqlite:///{tmp_path / 'a.db'}?synchronous=NORMAL") as sqlite:
        assert isinstance(sqlite, SQLiteStore)
        assert sqlite.path == tmp_path / "a.db"
    with open_store(tmp_path / "b.db") as plain:
        assert isinstance(plain, SQLiteStore)
    with open_store(postgres_url) as postgres:
        assert isinstance(postgres, PostgresStore)
        postgres.save(make_snapshot("r1", 1, 1), make_events("r1", 1, 1), expected_version=None)
    with open_store(postgres_url.replace("postgresql:", "postgres:"), create=False) as again:
        assert again.load("r1") == make_snapshot("r1", 1, 1)


def test_without_create_a_missing_sqlite_store_is_refused_and_not_made(tmp_path: Path) -> None:
    for path in (tmp_path / "none.db", tmp_path / "empty.db"):
        if path.name == "empty.db":
            path.touch()
        with pytest.raises(StoreURLError, match="there is no store there"):
            open_store(f"sqlite:///{path}", create=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]
    assert (tmp_path / "empty.db").stat().st_size == 0


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://ada:hunter2@db/runs", "postgresql://ada:***@db/runs"),
        ("postgresql://ada@db/runs?password=hunter2&sslmode=require",
         "postgresql://ada@db/runs?password=***&sslmode=require"),
        ("host=db user=ada password='hunter 2' dbname=runs",
         "host=db user=ada password=*** dbname=runs"),
        ("postgresql://ada@db/runs", "postgresql://ada@db/runs"),
        ("postgresql://db/runs", "postgresql://db/runs"),
    ],
)  # fmt: skip
def test_redact_masks_every_way_of_writing_a_password(url: str, shown: str) -> None:
    assert redact(url) == shown
    password = "hunter 2" if "'" in url else "hunter2"
    scrubbed = scrub(f"failed: {url} ({password})", url)
    assert ("hunter" in scrubbed) is ("hunter" not in url)


@pytest.fixture(scope="module")
def secretive(postgres_server: TemporaryPostgres) -> str:
    """A database whose role needs SECRET; its URL without the password."""
    return postgres_server.password_role("secretive", SECRET)


def with_password(url: str, password: str) -> str:
    return url.replace("secretive@", f"secretive:{password}@", 1)


def test_a_password_is_never_in_a_repr_an_error_a_log_line_or_an_event(
    secretive: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    url = with_password(secretive, ENCODED)
    shown: list[str] = []
    with PostgresStore(url) as store:
        shown += [repr(store), str(store), store.url]
        agent = Agent(ScriptedModel().text("Hi."), store=store, run_id="r1")
        agent.start()
        agent.submit("Hello")
        shown += [event.model_dump_json() for event in store.events("r1")]
        shown += [event.model_dump_json() for event in store.watch("r1", timeout=0)]
        shown.append(repr(store.load("r1")))
    assert store.url == redact(url)
    assert "secretive:***@" in store.url
    failures = [
        with_password(secretive, "wrong" + ENCODED),  # refused by the server
        with_password(secretive, ENCODED) + "&bogus=1",  # refused by the driver
        with_password(secretive, ENCODED).replace("?host=", "?host=/nowhere"),  # no server
        f"host=/nowhere user=secretive password='{SECRET}'",
    ]
    for failing in failures:
        with pytest.raises(StoreError) as caught:
            PostgresStore(failing)
        shown += [str(caught.value), "".join(traceback.format_exception(caught.value))]
    shown += [record.getMessage() for record in caplog.records]
    for text in shown:
        assert SECRET not in text
        assert ENCODED not in text
        assert "s3cr" not in text


def test_the_cli_reads_a_postgres_store_and_never_shows_its_password(
    secretive: str, tmp_path: Path
) -> None:
    url = with_password(secretive, ENCODED)
    with PostgresStore(url) as store:
        agent = Agent(ScriptedModel().text("Hi."), store=store, run_id="cli-run")
        agent.start()
        agent.submit("Hello")

    def agentfsm(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agentfsm.cli", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=False,
        )

    listed = agentfsm("runs", "--store", url)
    inspected = agentfsm("inspect", "cli-run", "--store", url)
    missing = agentfsm("inspect", "nope", "--store", url)
    wrong = agentfsm("runs", "--store", with_password(secretive, "wrong"))
    assert listed.returncode == 0, listed.stderr
    assert "cli-run  completed" in listed.stdout
    assert inspected.returncode == 0, inspected.stderr
    assert "state        completed" in inspected.stdout
    assert missing.returncode == 1
    assert "no run 'nope' in 'postgresql://secretive:***@/" in missing.stderr
    assert wrong.returncode == 1
    assert "password authentication failed" in wrong.stderr
    for done in (listed, inspected, missing, wrong):
        assert ENCODED not in done.stdout + done.stderr
        assert "s3cr" not in done.stdout + done.stderr


def test_the_cli_never_creates_a_postgres_store(postgres_url: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentfsm.cli", "runs", "--store", postgres_url],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 1
    assert "there is no run store in" in done.stderr
    with pytest.raises(StoreError, match="the database is empty"):
        PostgresStore(postgres_url, create=False)


def test_the_cli_commands_read_any_store_url_in_process(postgres_url: str) -> None:
    with PostgresStore(postgres_url) as store:
        store.save(make_snapshot("r1", 1, 1), make_events("r1", 1, 1), expected_version=None)
    out = io.StringIO()
    assert runs_command(postgres_url, out) == 0
    assert out.getvalue().splitlines()[1].split() == ["r1", "busy", "1", "1", "1", "—"]
    out = io.StringIO()
    assert runs_command("memory:", out) == 0
    assert out.getvalue() == "no runs in 'memory:'\n"


def test_postgres_store_is_imported_only_when_asked_for() -> None:
    code = (
        "import sys, agentfsm, agentfsm.stores\n"
        "assert 'psycopg' not in sys.modules\n"
        "from agentfsm.stores import PostgresStore\n"
        "assert 'psycopg' in sys.modules and PostgresStore.__name__ == 'PostgresStore'\n"
        "try:\n"
        "    agentfsm.stores.NoSuchStore\n"
        "except AttributeError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert "has no attribute 'NoSuchStore'" in done.stdout
