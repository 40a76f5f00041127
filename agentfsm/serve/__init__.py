"""Serving runs to people and programs: the live web view, A2A, and OpenTelemetry spans.

- The live web view (``agentfsm ui``, the ``ui`` extra): `create_app` is an ASGI app
  (Starlette) over one run store: a page listing every run, a page per run with its combined
  diagram (current states highlighted, the path taken weighted), its event log and
  conversation, all pushed live over Server-Sent Events, and the operator's actions
  (approve, deny, answer, pause, resume, cancel), each the Agent's own guarded transition.
- `agentfsm.serve.a2a` serves an agent to other agents over the A2A protocol (the ``a2a``
  extra; ``agentfsm serve-a2a``).
- `agentfsm.serve.otel` traces runs as OpenTelemetry GenAI spans (the ``otel`` extra).

Each part needs only its own extra: the web view's names below are imported when first
used, so ``import agentfsm.serve.otel`` does not need Starlette. Nothing else in agentfsm
imports this package, and ``import agentfsm`` never needs an extra.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentfsm.errors import ActionError
    from agentfsm.serve.actions import ACTIONS, AgentFactory
    from agentfsm.serve.app import create_app, default_feed
    from agentfsm.serve.feed import ChangeFeed, Marks, PollingFeed
    from agentfsm.serve.stores import open_read_only

_HOMES = {
    "ACTIONS": "agentfsm.serve.actions",
    "ActionError": "agentfsm.errors",
    "AgentFactory": "agentfsm.serve.actions",
    "ChangeFeed": "agentfsm.serve.feed",
    "Marks": "agentfsm.serve.feed",
    "PollingFeed": "agentfsm.serve.feed",
    "create_app": "agentfsm.serve.app",
    "default_feed": "agentfsm.serve.app",
    "open_read_only": "agentfsm.serve.stores",
}

__all__ = [
    "ACTIONS",
    "ActionError",
    "AgentFactory",
    "ChangeFeed",
    "Marks",
    "PollingFeed",
    "create_app",
    "default_feed",
    "open_read_only",
]


def __getattr__(name: str) -> object:
    """The web view's names, imported from their modules when first asked for."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'agentfsm.serve' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
