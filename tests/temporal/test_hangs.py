"""A Temporal test that would wait forever fails within its time instead (one CI run hung)."""

from __future__ import annotations

import asyncio
import socket

import pytest
from temporalio.client import Client

from agentfsm.stores.memory import MemoryStore
from agentfsm.temporal import TemporalRuns
from tests.temporal.support import connect, on_temporal


def test_an_update_no_worker_answers_fails_the_body_in_its_time(temporal_target: str) -> None:
    async def body(runs: TemporalRuns, client: Client) -> None:
        # a queue no worker polls: the run never starts, and an update on it waits forever
        nobody = TemporalRuns(client, task_queue=f"{runs.task_queue}-nobody")
        run = await nobody.start("never-served")
        await run.submit("hello")

    with pytest.raises(AssertionError, match=r"the test body on q-\w+ did not finish in 1s"):
        on_temporal(temporal_target, MemoryStore(), body, seconds=1.0)


def test_a_client_that_cannot_connect_fails_in_its_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tests.temporal.support.CONNECT_SECONDS", 0.5)
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        target = f"127.0.0.1:{silent.getsockname()[1]}"
        failure = r"a client connecting to 127.0.0.1:\d+ did not finish in 0.5s"
        with pytest.raises(AssertionError, match=failure):
            asyncio.run(connect(target))
