"""Fixtures of the live view's tests: a store, and the view served on 127.0.0.1."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn
from starlette.applications import Starlette

from agentfsm import SQLiteStore


@contextmanager
def serving(app: Starlette) -> Iterator[str]:
    """Serve ``app`` with uvicorn on an ephemeral port of 127.0.0.1; yield its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    started = threading.Event()
    while not started.wait(0.01):
        if server.started or not thread.is_alive():
            break
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """An empty SQLite run store (the file exists, as an agent would have made it)."""
    path = tmp_path / "runs.db"
    SQLiteStore(path).close()
    return path
