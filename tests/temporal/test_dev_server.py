"""The dev server helper hands out a server whose frontend already serves, and is its own."""

from __future__ import annotations

import asyncio
import socket

from temporalio.client import Client

from agentfsm.testing.temporal_server import TemporalDevServer


def test_a_started_server_takes_a_client_at_once_and_a_stopped_one_does_not_serve() -> None:
    with socket.socket() as squatter:  # the port picked is taken (by anything) before the bind
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        server = TemporalDevServer()
        server.port, server.target = taken, f"127.0.0.1:{taken}"
        server.start()  # gives the taken port up for a new one
    try:
        assert server.port != taken
        # The port accepts a moment before the frontend is healthy; `start` waits for both,
        # so a client may connect at once ("Frontend is not healthy yet" otherwise).
        assert server._serving()
        client = asyncio.run(Client.connect(server.target))
        assert client.namespace == "default"
    finally:
        server.stop()
    assert not server._serving()


def _namespaces(target: str) -> set[str]:
    async def listed() -> set[str]:
        client = await Client.connect(target)
        from temporalio.api.workflowservice.v1 import ListNamespacesRequest

        answer = await client.workflow_service.list_namespaces(ListNamespacesRequest())
        return {n.namespace_info.name for n in answer.namespaces}

    return asyncio.run(listed())


def test_a_port_taken_by_another_server_is_not_mistaken_for_ours(temporal_target: str) -> None:
    # The race free_port leaves open: the port picked is another server's by the time this
    # one binds it. The other answers the health check; only the marker tells them apart.
    taken = int(temporal_target.rsplit(":", 1)[1])
    server = TemporalDevServer()
    server.port, server.target = taken, temporal_target
    with server:
        assert server.port != taken
        assert server.marker in _namespaces(server.target)
        assert server.marker not in _namespaces(temporal_target)
