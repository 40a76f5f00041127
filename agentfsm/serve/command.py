"""``agentfsm ui``: serve the live web view of a run store with uvicorn.

``--store`` is any store URL or a SQLite file's path (`agentfsm.serve.stores`); it is never
created, and its password is never printed.

The socket is bound before anything is printed, so the URL printed is one that answers
(``--port 0`` picks a free port and prints it). With ``--temporal HOST:PORT --task-queue Q``
the store's runs are runs on Temporal, and the view's actions are their workflows' updates.

Every request needs the token printed in the URL (`agentfsm.serve.guard`): one generated
at start, or ``--token`` / ``AGENTFSM_UI_TOKEN``; ``--no-token`` only on a loopback address,
with a warning. SIGTERM and SIGINT stop it cleanly (`agentfsm.serve.serving`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import secrets
import socket
import sys
from collections.abc import Sequence
from typing import TextIO, cast

from agentfsm.errors import StoreError
from agentfsm.serve.actions import AgentFactory, RunDriver
from agentfsm.serve.app import create_app
from agentfsm.serve.guard import LOOPBACK_HOSTS, host_name
from agentfsm.serve.serving import (
    DEFAULT_GRACE,
    CommandError,
    bind,
    import_factory,
    serve,
    where,
)
from agentfsm.serve.stores import shown

UICommandError = CommandError
"""An expected failure of ``agentfsm ui``: printed as one line, exit code 1."""


def load_factory(spec: str) -> AgentFactory:
    """The agent factory ``MODULE:FUNCTION`` names, the current directory importable.

    As ``agentfsm serve-a2a`` and ``agentfsm worker`` import theirs.

    Raises:
        UICommandError: The spec is not ``MODULE:FUNCTION``, the module cannot be
            imported, or it has no such callable.
    """
    loaded = cast(AgentFactory, import_factory(spec))
    return loaded


_bind = bind


def access(host: str, bound: str, token: str | None, allow: Sequence[str]) -> list[str] | None:
    """The names the ``Host`` header may give: the bound address's, and those allowed.

    A loopback address answers to ``localhost``, ``127.0.0.1`` and ``::1``; a wildcard one
    (``0.0.0.0``, ``::``) to this machine's names as well; ``--allow-host '*'`` to any.

    Raises:
        UICommandError: ``--no-token`` on an address other than a loopback one.
    """
    loopback = _is_loopback(bound)
    if token is None and not loopback:
        raise UICommandError(
            f"--no-token serves the view to anyone who can reach {host}; it is only allowed "
            "on a loopback address (--host 127.0.0.1, localhost or ::1)"
        )
    if "*" in allow:
        return None
    hosts = {host, bound, *allow}
    if loopback or bound in ("0.0.0.0", "::"):
        hosts |= LOOPBACK_HOSTS
    if bound in ("0.0.0.0", "::"):
        hosts |= {socket.gethostname(), socket.getfqdn()}
    return sorted(host_name(name) for name in hosts)


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


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
    token: str | None = "",
    allow_hosts: Sequence[str] = (),
    grace: float = DEFAULT_GRACE,
    err: TextIO | None = None,
) -> int:
    """Serve the view of ``store`` (a URL or path) on ``host:port`` until SIGTERM or SIGINT.

    ``temporal`` (``HOST:PORT``) and ``task_queue``: the store's runs run on Temporal; the
    view's actions are sent to their workflows (`agentfsm.temporal.TemporalRuns`).
    ``token``: the secret every request must carry (``""``: a new one; None: none, only on a
    loopback address). ``allow_hosts``: more names the ``Host`` header may give. ``grace``:
    seconds the requests in flight get to finish at shutdown.

    Returns:
        The exit code: 0 once stopped, 1 if it could not start (the reason on stderr).
    """
    err = err if err is not None else sys.stderr
    secret = token if token is None or token else secrets.token_hex(24)
    try:
        factory = load_factory(agent) if agent is not None else None
        driver = temporal_driver(temporal, task_queue) if temporal is not None else None
        sock = bind(host, port)
    except UICommandError as error:
        print(f"agentfsm ui: error: {error}", file=err)
        return 1
    try:
        hosts = access(host, sock.getsockname()[0], secret, allow_hosts)
        app = create_app(store, agent=factory, runs=driver, token=secret, allowed_hosts=hosts)
    except (StoreError, UICommandError) as error:
        sock.close()
        print(f"agentfsm ui: error: {error}", file=err)
        return 1
    url = where(sock) + "/" + (f"?token={secret}" if secret is not None else "")
    print(f"agentfsm ui: serving {shown(store)} at {url}", file=out, flush=True)
    if secret is None:
        print(
            "agentfsm ui: WARNING: --no-token: every program and every web page this "
            "machine's browser opens can read these runs and act on them",
            file=err,
            flush=True,
        )
    _say_what_acts(out, temporal if driver is not None else None, factory is not None)
    with sock:
        serve(app, sock, grace, out, "agentfsm ui")
    return 0


def _say_what_acts(out: TextIO, temporal: str | None, agent: bool) -> None:
    if temporal is not None:
        print(f"  (runs on Temporal at {temporal}: actions are their updates)", file=out)
    elif not agent:
        print(
            "  (no --agent MODULE:FUNCTION: approving, denying and answering are off; "
            "pause, resume and cancel work)",
            file=out,
        )
    print("  (Ctrl-C or SIGTERM stops it)", file=out, flush=True)
