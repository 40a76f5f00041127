"""What ``agentfsm ui`` and ``agentfsm serve-a2a`` share.

A factory named on the command line, a bound socket, and a uvicorn server that shuts down
cleanly on SIGTERM and SIGINT.

Shutting down: the first SIGTERM or SIGINT (Ctrl-C) stops taking connections, lets the
requests in flight finish for up to the grace period (then cancels them), runs the app's
shutdown (stores closed) and returns, so the command exits 0 with no traceback. A second
Ctrl-C forces the exit at once.
"""

from __future__ import annotations

import importlib
import math
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import TextIO

import uvicorn

__all__ = ["DEFAULT_GRACE", "CommandError", "bind", "import_factory", "serve", "where"]

DEFAULT_GRACE = 10.0
"""Seconds the requests in flight get to finish once a shutdown is asked for."""


class CommandError(Exception):
    """An expected failure of a serving command: printed as one line, exit code 1."""


def import_factory(spec: str, option: str = "--agent") -> Callable[..., object]:
    """The callable ``MODULE:FUNCTION`` names, the current directory importable.

    Imported as Python would import it (the current directory first, as ``python -m``).

    Raises:
        CommandError: ``spec`` is not ``MODULE:FUNCTION``, the module cannot be imported,
            or it has no such callable.
    """
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise CommandError(
            f"{option} is {spec!r}; expected MODULE:FUNCTION, e.g. myapp.agents:make_agent"
        )
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise CommandError(
            f"{option} {spec!r}: cannot import {module_name!r} ({error})"
        ) from error
    found = getattr(module, attribute, None)
    if not callable(found):
        raise CommandError(
            f"{option} {spec!r}: {module_name!r} has no callable {attribute!r}; it should be "
            "a function (run_id, store) -> Agent"
        )
    loaded: Callable[..., object] = found
    return loaded


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` and listening, so the URL printed already answers.

    Raises:
        CommandError: The address cannot be listened on.
    """
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except OSError as error:
        raise CommandError(f"cannot listen on {host}:{port} ({error})") from error
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)  # connections wait in the backlog until uvicorn serves them
    except OSError as error:
        sock.close()
        raise CommandError(f"cannot listen on {host}:{port} ({error})") from error
    return sock


def where(sock: socket.socket) -> str:
    """The base URL of a bound socket (``http://127.0.0.1:8765``, ``http://[::1]:8765``)."""
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


class _Server(uvicorn.Server):
    """uvicorn's server, minus its re-raising of the signal that stopped it.

    uvicorn shuts down gracefully on SIGINT and SIGTERM, then raises the same signal again
    once it has (for the process to die of it): a ``KeyboardInterrupt`` traceback and exit
    130, or death by SIGTERM. A command that was asked to stop and did has succeeded.
    """

    @contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        originals = {
            sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            yield
        finally:
            for sig, handler in originals.items():
                signal.signal(sig, handler)


def serve(app: object, sock: socket.socket, grace: float, out: TextIO, command: str) -> None:
    """Serve ``app`` on ``sock`` until SIGTERM or SIGINT; then shut down within ``grace``."""
    config = uvicorn.Config(
        app,  # type: ignore[arg-type]  # (any ASGI app; uvicorn's type is narrower)
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=math.ceil(grace),  # (whole seconds, as uvicorn types it)
    )
    server = _Server(config)
    server.run(sockets=[sock])
    print(f"{command}: stopped", file=out, flush=True)
