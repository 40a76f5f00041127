"""``agentfsm ui``: serve the live web view of a run store with uvicorn.

``--store`` is any store URL or a SQLite file's path (`agentfsm.serve.stores`); it is never
created, and its password is never printed.

The socket is bound before anything is printed, so the URL printed is one that answers
(``--port 0`` picks a free port and prints it). With ``--temporal HOST:PORT --task-queue Q``
the store's runs are runs on Temporal, and the view's actions are their workflows' updates.
"""

from __future__ import annotations

import asyncio
import importlib
import socket
import sys
from typing import TextIO

import uvicorn

from agentfsm.errors import StoreError
from agentfsm.serve.actions import AgentFactory, RunDriver
from agentfsm.serve.app import create_app
from agentfsm.serve.stores import shown


class UICommandError(Exception):
    """An expected failure of ``agentfsm ui``: printed as one line, exit code 1."""


def load_factory(spec: str) -> AgentFactory:
    """The agent factory ``MODULE:FUNCTION`` names (imported as Python would import it).

    Raises:
        UICommandError: The spec is not ``MODULE:FUNCTION``, the module cannot be
            imported, or it has no such callable.
    """
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise UICommandError(
            f"--agent is {spec!r}; expected MODULE:FUNCTION, e.g. myapp.agents:make_agent"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise UICommandError(
            f"--agent {spec!r}: cannot import {module_name!r} ({error})"
        ) from error
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise UICommandError(
            f"--agent {spec!r}: {module_name!r} has no callable {attribute!r}; it should be "
            "a function (run_id, store) -> Agent"
        )
    loaded: AgentFactory = factory
    return loaded


def _bind(host: str, port: int) -> socket.socket:
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except OSError as error:
        raise UICommandError(f"cannot listen on {host}:{port} ({error})") from error
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)  # connections wait in the backlog until uvicorn serves them
    except OSError as error:
        sock.close()
        raise UICommandError(f"cannot listen on {host}:{port} ({error})") from error
    return sock


def temporal_driver(target: str, task_queue: str | None) -> RunDriver:
    """The runs on the Temporal server at ``target`` (``HOST:PORT``), on ``task_queue``.

    Raises:
        UICommandError: No ``task_queue``, the temporal extra is missing, or the server
            cannot be reached.
    """
    if not task_queue:
        raise UICommandError("--temporal needs --task-queue QUEUE (the runs' task queue)")
    try:
        from temporalio.client import Client

        from agentfsm.temporal.client import TemporalRuns
    except ImportError as error:  # pragma: no cover - without the temporal extra
        raise UICommandError(
            f"--temporal needs the temporal extra ({error}): pip install 'agentfsm[temporal]'"
        ) from error
    try:
        client = asyncio.run(Client.connect(target))
    except Exception as error:  # (the SDK's own: a bad target, a server not answering)
        raise UICommandError(f"cannot reach the Temporal server at {target} ({error})") from error
    return TemporalRuns(client, task_queue=task_queue)


def ui_command(
    store: str,
    host: str,
    port: int,
    agent: str | None,
    out: TextIO,
    *,
    temporal: str | None = None,
    task_queue: str | None = None,
) -> int:
    """Serve the view of ``store`` (a URL or path) on ``host:port`` until interrupted.

    ``temporal`` (``HOST:PORT``) and ``task_queue``: the store's runs run on Temporal; the
    view's actions are sent to their workflows (`agentfsm.temporal.TemporalRuns`).

    Returns:
        The exit code: 0 once stopped, 1 if it could not start (the reason on stderr).
    """
    try:
        factory = load_factory(agent) if agent is not None else None
        driver = temporal_driver(temporal, task_queue) if temporal is not None else None
        sock = _bind(host, port)
    except UICommandError as error:
        print(f"agentfsm ui: error: {error}", file=sys.stderr)
        return 1
    try:
        app = create_app(store, agent=factory, runs=driver)
    except StoreError as error:
        sock.close()
        print(f"agentfsm ui: error: {error}", file=sys.stderr)
        return 1
    bound_host, bound_port = sock.getsockname()[:2]
    host_shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    where = f"http://{host_shown}:{bound_port}/"
    print(f"agentfsm ui: serving {shown(store)} at {where}", file=out, flush=True)
    if driver is not None:
        print(
            f"  (runs on Temporal at {temporal}: actions are their updates)", file=out, flush=True
        )
    elif factory is None:
        print(
            "  (no --agent MODULE:FUNCTION: approving, denying and answering are off; "
            "pause, resume and cancel work)",
            file=out,
            flush=True,
        )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    server.run(sockets=[sock])
    return 0
