"""A child process for the crash tests: runs or resumes the durable test agent on a store.

``python -m tests.stores.crash_child run STORE LOG RUN_ID POINT`` runs one turn and SIGKILLs
itself at ``POINT``; ``... first STORE LOG RUN_ID POINT`` starts the run with its input in one
call (``start(text)``) and SIGKILLs itself at one of `FIRST_POINTS`; ``... resume STORE LOG
RUN_ID`` restores the run, takes it up with
``start()`` and prints the final conversation as JSON. ``STORE`` is a store URL
(``sqlite:///…``, ``postgresql://…``).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from agentfsm import Event
from agentfsm.errors import RunBusyError, SnapshotConflictError
from agentfsm.llm.base import ModelResponse, RetryListener
from agentfsm.states import Message
from agentfsm.states.json import JSONObject
from agentfsm.stores import RunStore, Snapshot
from agentfsm.stores.base import DelegatingStore
from agentfsm.stores.urls import open_store
from tests.stores.durable_support import agent, respond

POINTS = (
    "before_model",
    "after_reply",
    "between_tools",
    "inside_tool",
    "inside_book",
    "before_final_save",
    "before_book_start_save",
    "after_book_start_save",
    "after_book_result",
)
"""Where a run can be killed: before the model call, after the reply is stored (a listener
hears of it), between two tools (a listener hears of the first answer), inside an idempotent
tool's body, inside a non-idempotent one's, before the save of the turn's last transition,
in the save holding book's start (before it commits, and right after), and after book's
answer is stored (a listener hears of it)."""

BOOK_NEVER_RAN = ("between_tools", "after_book_start_save")
"""The points at which book's ``tool_started`` is stored and its body has not run: writing
behind, it is saved in one transaction with what came before it (the first call's answer)
and told with it, so a listener hears of that answer only then (N+1 commits a round). A
resumed run answers book "outcome unknown" and never runs it (I11). (At ``after_reply`` it
may be too: the reply's save behind is told at the first point after it committed, which
may be book's start.)"""


FIRST_POINTS = ("before_first_save", "after_first_save")
"""Where ``start(text)`` can be killed: in the save of its start and input (before it commits),
and right after it, before the model call."""


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class KillingStore(DelegatingStore):
    """Any store, dying instead of saving the turn's ``complete``."""

    def __init__(self, inner: RunStore, point: str) -> None:
        super().__init__(inner)
        self.point = point

    def save(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        if self.point == "before_final_save" and any(e.event == "complete" for e in events):
            die()
        first = any(e.event == "start" for e in events)
        if self.point == "before_first_save" and first:
            die()
        booking = any(e.event == "tool_started" and e.data["name"] == "book" for e in events)
        if self.point == "before_book_start_save" and booking:
            die()
        super().save(snapshot, events, expected_version=expected_version)
        if self.point == "after_first_save" and first:
            die()
        if self.point == "after_book_start_save" and booking:
            die()


class KillingModel:
    """The test model, dying when it is first called if asked to."""

    name = "scripted"

    def __init__(self, point: str) -> None:
        self.point = point

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[JSONObject],
        *,
        on_retry: RetryListener | None = None,
    ) -> ModelResponse:
        if self.point == "before_model":
            die()
        return respond(messages, tools)


def run(store: str, log: Path, run_id: str, point: str) -> None:
    def on_run(line: str) -> None:
        if (point, line) in (("inside_tool", "weather:Nice"), ("inside_book", "book:Rome")):
            die()  # the side effect happened; its result will never be stored

    # (no lease: the kill leaves none to wait for; test_lease_processes.py kills one with one)
    the_agent = agent(KillingStore(open_store(store), point), run_id, log, on_run, lease=None)
    the_agent.model = KillingModel(point)

    def listener(item: object) -> None:
        if not isinstance(item, Event):
            return
        if point == "after_reply" and item.event == "model_replied":
            die()
        if point == "between_tools" and item.event == "tool_result":
            die()
        booked = item.event == "tool_result" and item.data["result"]["tool_name"] == "book"
        if point == "after_book_result" and booked:
            die()

    the_agent.add_listener(listener)
    the_agent.start()
    the_agent.submit("Plan my trip")
    print("not killed", file=sys.stderr)
    sys.exit(3)


def first(store: str, log: Path, run_id: str, point: str) -> None:
    """Start the run with its input in one call, dying at ``point``."""
    the_agent = agent(KillingStore(open_store(store), point), run_id, log, lease=None)
    the_agent.start("Plan my trip")
    print("not killed", file=sys.stderr)
    sys.exit(3)


def resume(url: str, log: Path, run_id: str) -> None:
    with open_store(url) as store:
        the_agent = agent(store, run_id, log)
        the_agent.start()
        print(json.dumps([m.model_dump(mode="json") for m in the_agent.messages]))


def race(url: str, log: Path, run_id: str, go: Path) -> None:
    """Restore the run, say so, wait for ``go`` to exist, then try to take it up."""
    with open_store(url) as store:
        the_agent = agent(store, run_id, log)
        print(f"restored {the_agent.state}", flush=True)
        while not go.exists():
            time.sleep(0.001)
        try:
            the_agent.start()
            the_agent.resume()
            the_agent.submit("Plan my trip")
        except (SnapshotConflictError, RunBusyError):  # (busy: the winner drives it now)
            print("conflict", flush=True)
            return
        print(f"won {the_agent.state}", flush=True)


if __name__ == "__main__":
    command, url, log, run_id, *rest = sys.argv[1:]
    if command == "run":
        run(url, Path(log), run_id, rest[0])
    elif command == "first":
        first(url, Path(log), run_id, rest[0])
    elif command == "race":
        race(url, Path(log), run_id, Path(rest[0]))
    else:
        resume(url, Path(log), run_id)
