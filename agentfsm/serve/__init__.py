"""Serving runs to people and programs: the live web view (``agentfsm ui``).

`create_app` is an ASGI app (Starlette) over one run store: a page listing every run,
a page per run with its combined diagram (current states highlighted, the path taken
weighted), its event log and conversation, all pushed live over Server-Sent Events, and
the operator's actions (approve, deny, answer, pause, resume, cancel), each the Agent's own
guarded transition. It needs the ``ui`` extra (``pip install 'agentfsm[ui]'``); nothing
else in agentfsm imports this package.
"""

from __future__ import annotations

from agentfsm.errors import ActionError
from agentfsm.serve.actions import ACTIONS, AgentFactory
from agentfsm.serve.app import create_app, open_read_only
from agentfsm.serve.feed import ChangeFeed, Marks, PollingFeed

__all__ = [
    "ACTIONS",
    "ActionError",
    "AgentFactory",
    "ChangeFeed",
    "Marks",
    "PollingFeed",
    "create_app",
    "open_read_only",
]
