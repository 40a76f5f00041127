"""The dev server helper hands out a server whose frontend already serves."""

from __future__ import annotations

import asyncio

from temporalio.client import Client

from agentfsm.testing.temporal_server import TemporalDevServer


def test_a_started_server_takes_a_client_at_once_and_a_stopped_one_does_not_serve() -> None:
    server = TemporalDevServer().start()
    try:
        # The port accepts a moment before the frontend is healthy; `start` waits for both,
        # so a client may connect at once ("Frontend is not healthy yet" otherwise).
        assert server._serving()
        client = asyncio.run(Client.connect(server.target))
        assert client.namespace == "default"
    finally:
        server.stop()
    assert not server._serving()
