"""An approval made while PostgreSQL is down is not lost (I12, on a real server).

The run waits for an approval; the server is stopped (``pg_ctl stop -m immediate``, as a
crash of the database would); `resolve_action` raises `StoreError` and the Agent still waits,
exactly as stored; the server comes back and the same `resolve_action` runs the tool once and
completes the run. The server is the test's own, so that stopping it touches no other test.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from agentfsm import ScriptedModel
from agentfsm.agent import Agent
from agentfsm.errors import StoreError
from agentfsm.stores import PostgresStore
from agentfsm.testing.postgres_server import TemporaryPostgres
from agentfsm.tools import tool
from tests.agent.agent_support import answer, calls

RAN: list[float] = []


@tool(policy="require_approval")
def refund(amount: float) -> str:
    """Refund an amount (approved by a human)."""
    RAN.append(amount)
    return "refunded"


@pytest.fixture
def server() -> Iterator[TemporaryPostgres]:
    with TemporaryPostgres() as started:
        yield started
        if not (started.data / "postmaster.pid").exists():  # (a test failed while it was down)
            restart(started)


def crash(server: TemporaryPostgres) -> None:
    """Stop the server at once, as a crash would (no checkpoint; recovery at the next start)."""
    pg_ctl = str(server.bin / "pg_ctl")
    server._run(pg_ctl, "-D", str(server.data), "-m", "immediate", "-w", "stop")


def restart(server: TemporaryPostgres) -> None:
    settings = f"-k {server.socket_dir} -c listen_addresses='' -c fsync=off"
    server._run(
        str(server.bin / "pg_ctl"), "-D", str(server.data), "-l", str(server.directory / "log"),
        "-o", settings, "-w", "-t", "60", "start",
    )  # fmt: skip


def answering(store: PostgresStore) -> None:
    """Wait (at most 30 s) until the store's pool has reconnected to the restarted server."""
    deadline = time.monotonic() + 30
    while True:
        try:
            store.load("r")
        except StoreError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
        else:
            return


def test_an_approval_made_while_the_server_is_down_is_made_once_it_is_back(
    server: TemporaryPostgres,
) -> None:
    RAN.clear()
    with PostgresStore(server.new_database(), timeout=0.5) as store:
        model = ScriptedModel([calls(("c1", "refund", {"amount": 5.0})), answer("done")])
        agent = Agent(model, [refund], store=store, run_id="r")
        assert agent.start("refund me").state == "requires_action"
        waiting = store.load("r")
        crash(server)
        with pytest.raises(StoreError):
            agent.resolve_action({"c1": "approve"})
        assert agent.state == "requires_action"  # not busy: what the store holds
        assert agent.snapshot() == waiting
        assert RAN == []
        restart(server)
        answering(store)
        outcome = agent.resolve_action({"c1": "approve"})
        assert (outcome.state, outcome.reply) == ("completed", "done")
        assert RAN == [5.0]
        log = [event.event for event in store.events("r")]
        assert log.count("resolve_action") == 1
        assert log.count("tool_started") == 1
        assert "fail" not in log
        stored = store.load("r")
        assert stored is not None
        assert stored.state == "completed"
