"""The store commands of the CLI: ``agentfsm runs``, ``inspect``, ``diagram --run``, ``fork``.

They read a store named by ``--store`` (a SQLite file's path, or a store URL such as
``postgresql://…``: `agentfsm.stores.urls`) and never create one: a path with no file (or an
empty one), or an empty PostgreSQL database, is an error, so a typo in ``--store`` cannot
leave an empty database behind. Only ``fork`` writes (the new run; never the origin). Every
expected
failure (no store, no such run, a damaged file) is one line on stderr and exit code 1.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TextIO

from agentfsm._terminal import terminal_safe
from agentfsm.diagrams import View, diagram, save_diagram
from agentfsm.diagrams.dot import TRANSITION_MACHINES
from agentfsm.errors import (
    DiagramRenderError,
    ForkError,
    ReplayError,
    StoreError,
    StoreURLError,
)
from agentfsm.states.events import Event
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import ToolCall
from agentfsm.stores._credentials import redact
from agentfsm.stores.base import RunStore
from agentfsm.stores.forking import AddMessage, Edit, EditCall, ReplaceUserMessage, fork
from agentfsm.stores.snapshot import Snapshot
from agentfsm.stores.sqlite import DEFAULT_PATH, SQLiteStore
from agentfsm.stores.urls import open_store as open_url
from agentfsm.stores.urls import parse_store_url

DEFAULT_EVENTS = 10
"""How many of a run's last events ``agentfsm inspect`` shows by default."""

_DATA_WIDTH = 100


class CommandError(Exception):
    """An expected failure of a command: its message is printed as one line, exit 1."""


def one_line(text: str) -> str:
    """``text`` with its lines joined, so an error stays one line on stderr."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


@contextmanager
def open_store(spec: str | None, *, writable: bool = False) -> Iterator[RunStore]:
    """Open the run store ``spec`` names (default ``.agentfsm/runs.db``) without creating it.

    ``spec`` is a SQLite file's path or a store URL (``sqlite:///…``, ``postgresql://…``).
    A SQLite file is opened read-only unless ``writable``.

    Raises:
        CommandError: ``spec`` names no store, there is no file at its path, or it cannot
            be opened as a run store.
    """
    try:
        where = parse_store_url(spec if spec is not None else DEFAULT_PATH)
        if spec is not None and where.kind != "sqlite":
            store = open_url(spec, create=False)
        else:
            path = Path(where.target)
            _check_file(path)
            store = SQLiteStore(path, synchronous=where.synchronous, read_only=not writable)
    except (StoreError, StoreURLError) as error:
        raise CommandError(str(error)) from error
    with store:
        yield store


def _check_file(where: Path) -> None:
    if not where.is_file() or where.stat().st_size == 0:
        # An empty file is no store either: SQLite would make one in it, and we only read.
        problem = "it is a directory" if where.is_dir() else "no such file"
        problem = "the file is empty" if where.is_file() else problem
        raise CommandError(
            f"no store at {str(where)!r} ({problem}); pass --store FILE to name the SQLite "
            "file an agent saved its runs in"
        )


def where(store: RunStore) -> str:
    """Where ``store`` keeps its runs, as the commands name it (no password shown)."""
    if isinstance(store, SQLiteStore):
        return str(store.path)
    return str(getattr(store, "url", "memory:"))


def _load(store: RunStore, run_id: str, store_path: str | None) -> Snapshot:
    snapshot = store.load(run_id)
    if snapshot is None:
        option = f" --store {shlex.quote(redact(store_path))}" if store_path is not None else ""
        raise CommandError(
            f"no run {run_id!r} in {where(store)!r}; 'agentfsm runs{option}' lists its runs"
        )
    return snapshot


def _message(value: JSONObject) -> str:
    """A stored message, shortly: its role, its text and the tools it calls."""
    text = str(value.get("role"))
    if isinstance(value.get("content"), str):
        text += " " + json.dumps(value["content"], ensure_ascii=False)
    calls = value.get("tool_calls")
    if isinstance(calls, list) and calls:
        names = [str(c.get("name")) for c in calls if isinstance(c, dict)]
        text += " calling " + ", ".join(names)
    return text


def _short(value: JSONValue) -> str:
    if isinstance(value, dict) and "role" in value:
        return _message(value)
    return json.dumps(value, ensure_ascii=False)


def _data(data: JSONObject) -> str:
    """An event's arguments as ``key=value`` pairs (None left out), cut to a line's width."""
    text = ", ".join(f"{key}={_short(value)}" for key, value in data.items() if value is not None)
    return text if len(text) <= _DATA_WIDTH else text[: _DATA_WIDTH - 1] + "…"


def event_line(event: Event) -> str:
    """One event of a log as a line: seq, machine, event, the transition, its data.

    A transition shows ``source → target`` (``↺`` when it stays); a record of another
    machine (``conversation``: a message, a tool started…) shows only its data.
    """
    data = _data(event.data)
    machine = str(event.machine)
    if machine in TRANSITION_MACHINES:
        arrow = "↺" if event.source == event.target else "→"
        move = f"{event.source} {arrow} {event.target}"
        return f"{event.seq:>5}  {machine:<12} {event.event:<15} {move}  {data}".rstrip()
    return f"{event.seq:>5}  {machine:<12} {event.event:<15} {data}".rstrip()


def _pending_calls(snapshot: Snapshot) -> list[str]:
    calls: dict[str, ToolCall] = {}
    for message in snapshot.messages:
        calls.update((call.id, call) for call in message.tool_calls)
    lines = []
    for call_id in snapshot.pending:
        call = calls.get(call_id)
        if call is None:
            lines.append(f"  {call_id}  (not in the conversation)")
        else:
            lines.append(f"  {call_id}  {call.name}({call.arguments})")
    return lines


def _when(seconds: float) -> str:
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def describe(snapshot: Snapshot, events: Sequence[Event], last: int) -> list[str]:
    """``agentfsm inspect``'s report of a run: its states, counters, waits and last events.

    Args:
        snapshot: The run's latest snapshot.
        events: Its whole event log, in order.
        last: How many of the last events to list (0 for none).
    """
    reason = f" ({snapshot.reason})" if snapshot.reason else ""
    turns = f" of {snapshot.max_turns}" if snapshot.max_turns is not None else ""
    lines = [
        f"run          {snapshot.run_id}",
        f"state        {snapshot.state}{reason}",
        f"loop state   {snapshot.loop_state or '— (no turn yet)'}",
        f"turn         {snapshot.turn}{turns}",
        f"iteration    {snapshot.iteration} of {snapshot.max_iterations}",
        f"version      {snapshot.version} (seq {snapshot.seq}, {len(snapshot.messages)} messages)",
    ]
    if snapshot.origin is not None:
        lines.append(f"forked from  {snapshot.origin.run_id} at seq {snapshot.origin.seq}")
    if snapshot.paused_from is not None:
        lines.append(f"paused from  {snapshot.paused_from}")
    if snapshot.question is not None:
        lines.append(f"question     {snapshot.question}")
    if snapshot.deadline is not None:
        lines.append(f"deadline     {_when(snapshot.deadline)}")
    if snapshot.queued:
        lines.append(f"queued       {len(snapshot.queued)} input(s)")
    count = len(snapshot.pending)
    lines.append(
        f"pending      {count} call{'s' if count > 1 else ''}" if count else "pending      none"
    )
    lines += _pending_calls(snapshot)
    if last > 0:
        shown = events[-last:]
        lines.append(f"last {len(shown)} of {len(events)} events")
        lines += [event_line(event) for event in shown]
    return [terminal_safe(line) for line in lines]  # stored data never drives the terminal


def _origin(store: RunStore, run_id: str) -> str:
    snapshot = store.load(run_id)
    origin = None if snapshot is None else snapshot.origin
    return "—" if origin is None else f"{origin.run_id}@{origin.seq}"


def _runs(store_path: str | None, out: TextIO) -> None:
    with open_store(store_path) as store:
        runs = store.list_runs()
        if not runs:
            print(f"no runs in {terminal_safe(repr(where(store)))}", file=out)
            return
        origins = [terminal_safe(_origin(store, run.run_id)) for run in runs]
    ids = [terminal_safe(run.run_id) for run in runs]
    width = max(len("run id"), *(len(run_id) for run_id in ids))
    print(
        f"{'run id':<{width}}  {'state':<15}  {'turn':>4}  {'seq':>5}  {'version':>7}  origin",
        file=out,
    )
    for run_id, run, origin in zip(ids, runs, origins, strict=True):
        print(
            f"{run_id:<{width}}  {terminal_safe(str(run.state)):<15}  {run.turn:>4}  "
            f"{run.seq:>5}  {run.version:>7}  {origin}",
            file=out,
        )


def _inspect(run_id: str, store_path: str | None, last: int, out: TextIO) -> None:
    with open_store(store_path) as store:
        snapshot = _load(store, run_id, store_path)
        events = store.events(run_id)
    print("\n".join(describe(snapshot, events, last)), file=out)


def _run_diagram(
    run_id: str, store_path: str | None, view: View, output: str | None, out: TextIO, flat: bool
) -> None:
    with open_store(store_path) as store:
        snapshot = _load(store, run_id, store_path)
        events = store.events(run_id)
    if output is None:
        out.write(diagram(view, current=snapshot, events=events, flat=flat))
        return
    try:
        written = save_diagram(output, view, current=snapshot, events=events, flat=flat)
    except (DiagramRenderError, OSError) as error:
        raise CommandError(str(error)) from error
    print(f"wrote {written}", file=out)


def fork_edits(
    replace_user_message: str | None,
    edit_call: Sequence[str] | None,
    add_message: str | None,
) -> list[Edit]:
    """The edits ``agentfsm fork``'s options ask for, in the order they are applied."""
    edits: list[Edit] = []
    if replace_user_message is not None:
        edits.append(ReplaceUserMessage(replace_user_message))
    if edit_call is not None:
        call_id, arguments = edit_call
        edits.append(EditCall(call_id, arguments))
    if add_message is not None:
        edits.append(AddMessage(add_message))
    return edits


def fork_command(
    run_id: str,
    store_path: str | None,
    at: int | None,
    new_run_id: str | None,
    edits: Sequence[Edit],
    out: TextIO,
    *,
    nearest: bool = False,
) -> int:
    """``agentfsm fork RUN_ID --at SEQ``: fork a stored run; returns the exit code.

    Its first line says the seq the fork begins at, and why when ``nearest`` moved it.
    """
    try:
        with open_store(store_path, writable=True) as store:
            _load(store, run_id, store_path)
            forked = fork(
                store, run_id, at=at, nearest=nearest, edit=list(edits), new_run_id=new_run_id
            )
    except (CommandError, StoreError, ForkError, ReplayError) as error:
        return _fail("fork", error)
    assert forked.origin is not None
    used = forked.origin.seq
    moved = f" (the nearest rest point before --at {at})" if at is not None and at != used else ""
    pending = f", {len(forked.pending)} pending" if forked.pending else ""
    print(
        f"forked run {run_id} at seq {used}{moved} into run {forked.run_id}: "
        f"{forked.state}{pending}",
        file=out,
    )
    print(f"forked from  {run_id} at seq {forked.origin.seq}", file=out)
    return 0


def _fail(command: str, error: Exception) -> int:
    message = terminal_safe(one_line(str(error)))
    print(f"agentfsm {command}: error: {message}", file=sys.stderr)
    return 1


def runs_command(store_path: str | None, out: TextIO) -> int:
    """``agentfsm runs``: list the stored runs; returns the exit code."""
    try:
        _runs(store_path, out)
    except (CommandError, StoreError) as error:
        return _fail("runs", error)
    return 0


def inspect_command(run_id: str, store_path: str | None, last: int, out: TextIO) -> int:
    """``agentfsm inspect RUN_ID``: print where a stored run is; returns the exit code."""
    try:
        _inspect(run_id, store_path, last, out)
    except (CommandError, StoreError) as error:
        return _fail("inspect", error)
    return 0


def run_diagram_command(
    run_id: str,
    store_path: str | None,
    view: View,
    output: str | None,
    out: TextIO,
    *,
    flat: bool = False,
) -> int:
    """``agentfsm diagram --run RUN_ID``: draw a stored run's path; returns the exit code.

    Without ``output`` the DOT goes to ``out``; with it, ``save_diagram`` writes the file in
    the format its suffix names.
    """
    try:
        _run_diagram(run_id, store_path, view, output, out, flat)
    except (CommandError, StoreError) as error:
        return _fail("diagram", error)
    return 0
