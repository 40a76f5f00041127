"""``agentfsm serve-a2a``: serve an agent factory and a run store over A2A (uvicorn).

``--store`` is any store URL or a SQLite file's path (`agentfsm.serve.stores`), created if
missing; its password is never printed. ``--agent MODULE:FACTORY`` is imported with the
current directory importable, as ``agentfsm ui`` and ``agentfsm worker`` import theirs.
SIGTERM and SIGINT stop it cleanly (`agentfsm.serve.serving`): exit 0, no traceback.
"""

from __future__ import annotations

from typing import TextIO, cast

from agentfsm.errors import AgentFSMError
from agentfsm.serve.a2a import AgentFactory, a2a_app
from agentfsm.serve.serving import DEFAULT_GRACE, CommandError, bind, import_factory, serve, where
from agentfsm.serve.stores import open_to_serve, shown

__all__ = ["load_factory", "serve_command"]


def load_factory(spec: str) -> AgentFactory:
    """The agent factory named ``module:attribute``, the current directory importable.

    Raises:
        ValueError: ``spec`` is not ``module:attribute``, or names nothing callable.
    """
    try:
        return cast(AgentFactory, import_factory(spec))
    except CommandError as error:
        raise ValueError(str(error)) from error


def serve_command(
    agent: str,
    store: str,
    host: str,
    port: int,
    name: str,
    out: TextIO,
    err: TextIO,
    *,
    grace: float = DEFAULT_GRACE,
) -> int:
    """Serve until SIGTERM or SIGINT; print the URL first. Returns the exit code.

    ``grace``: the seconds the requests in flight (a streamed task included) get to finish
    once a shutdown is asked for; then they are cancelled.
    """
    try:
        factory = load_factory(agent)
        runs = open_to_serve(store)
    except (ValueError, AgentFSMError) as error:
        print(f"agentfsm serve-a2a: error: {error}", file=err)
        return 2
    with runs:
        try:
            sock = bind(host, port)
        except CommandError as error:
            print(f"agentfsm serve-a2a: error: {error}", file=err)
            return 1
        with sock:
            url = where(sock)
            # Open streams get most of the grace, so that they end before uvicorn cuts them.
            app = a2a_app(factory, runs, url, name=name, stream_grace=grace * 0.8)
            print(
                f"serving {name!r} over A2A at {url} (runs in {shown(store)})",
                file=out,
                flush=True,
            )
            print("  (Ctrl-C or SIGTERM stops it)", file=out, flush=True)
            serve(app, sock, grace, out, "agentfsm serve-a2a")
    return 0
