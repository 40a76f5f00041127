"""``agentfsm serve-a2a``: serve an agent factory and a run store over A2A (uvicorn).

``--store`` is any store URL or a SQLite file's path (`agentfsm.serve.stores`), created if
missing; its password is never printed.
"""

from __future__ import annotations

import importlib
import os
import socket
import sys
from typing import TextIO

import uvicorn

from agentfsm.errors import AgentFSMError
from agentfsm.serve.a2a import AgentFactory, a2a_app
from agentfsm.serve.stores import open_to_serve, shown

__all__ = ["load_factory", "serve_command"]


def load_factory(spec: str) -> AgentFactory:
    """The agent factory named ``module:attribute``, the current directory importable.

    Raises:
        ValueError: ``spec`` is not ``module:attribute``, or names nothing callable.
    """
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"--agent is {spec!r}; expected module:factory, e.g. myagent:make_agent")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"--agent {spec!r}: cannot import {module_name!r} ({error})") from error
    found = getattr(module, attribute, None)
    if not callable(found):
        raise ValueError(
            f"--agent {spec!r}: module {module_name!r} has no callable {attribute!r}; "
            "expected a function (run_id, store) -> Agent"
        )
    factory: AgentFactory = found
    return factory


def serve_command(
    agent: str, store: str, host: str, port: int, name: str, out: TextIO, err: TextIO
) -> int:
    """Serve until interrupted; print the URL first. Returns the exit code."""
    try:
        factory = load_factory(agent)
        runs = open_to_serve(store)
    except (ValueError, AgentFSMError) as error:
        print(f"agentfsm serve-a2a: error: {error}", file=err)
        return 2
    with runs, socket.socket() as sock:
        try:
            sock.bind((host, port))
            sock.listen(128)  # connections wait in the backlog until uvicorn serves them
        except OSError as error:
            print(f"agentfsm serve-a2a: error: cannot listen on {host}:{port} ({error})", file=err)
            return 1
        url = f"http://{host}:{sock.getsockname()[1]}"
        app = a2a_app(factory, runs, url, name=name)
        print(f"serving {name!r} over A2A at {url} (runs in {shown(store)})", file=out, flush=True)
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    return 0
