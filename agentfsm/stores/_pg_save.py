"""A `PostgresStore` save in one prepared statement: the path every successful save takes.

A save is one of `SAVES`, one SQL statement (data-modifying CTEs), sent prepared
(`agentfsm.stores._pg_exec`), in one round trip and one transaction (the connection is in
autocommit): it updates the run's row only if the stored version is ``expected``, its seq
is the one the events follow, its stamp the one the save's new items continue (if any), and
no other owner's lease is live; or, for a new run (``expected`` NULL), inserts it unless
another writer did (``ON CONFLICT DO NOTHING``). Only then does it append the events and
item rows and send the notification. It returns the run's new lease as one row, or no row
when it wrote nothing: the store then calls the ``agentfsm_save`` function
(`agentfsm.stores._postgres_sql.SAVE`), which says why under the row's lock (or saves, if
the run moved on to a state this save now continues).

Why not the function every time: it costs the server about 2.5x the statement (PL/pgSQL
runs each of its statements through the executor anew), and its arguments are arrays, which
psycopg dumps element by element in Python; this statement's events and items are one JSON
text each (`agentfsm.stores._items` already made each element's JSON), split by the server.
Under ``READ COMMITTED`` a concurrent writer of the same row is waited for and the version
checked again on the row it left, so of two saves expecting one version one is refused.
"""

from __future__ import annotations

import itertools
import os
import secrets
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentfsm.errors import RunBusyError, SnapshotConflictError
from agentfsm.states.events import Event
from agentfsm.stores._items import NewItems, core_json, event_json
from agentfsm.stores._pg_exec import BOOL, FLOAT8, INT4, INT8, Statement, boolean, double, integer
from agentfsm.stores._postgres_sql import WATCHED_ALL, WATCHED_RUN, notice, watch_key
from agentfsm.stores.base import check_save
from agentfsm.stores.leases import Hold
from agentfsm.stores.snapshot import Snapshot

if TYPE_CHECKING:
    from psycopg.pq.abc import PGresult

_UPDATE = """WITH saved AS (
    UPDATE agentfsm_runs r SET schema_version = %(schema_version)s, version = %(version)s,
        seq = %(seq)s, state = %(state)s::text, turn = %(turn)s, stamp = %(stamp)s::text,
        snapshot = %(snapshot)s::text,
        lease_owner = CASE WHEN %(state)s::text <> 'busy' THEN NULL
            WHEN %(holder)s::text IS NULL THEN r.lease_owner ELSE %(holder)s::text END,
        lease_expires = CASE WHEN %(state)s::text <> 'busy' THEN NULL
            WHEN %(holder)s::text IS NULL THEN r.lease_expires ELSE %(until)s END
    WHERE r.run_id = %(run)s::text AND r.version = %(expected)s::bigint
        AND r.seq = %(known_seq)s AND (%(known_stamp)s::text IS NULL OR r.stamp = %(known_stamp)s)
        AND NOT (r.lease_owner IS NOT NULL AND r.lease_expires > %(now)s
            AND r.lease_owner IS DISTINCT FROM %(holder)s::text)
    RETURNING r.lease_owner, r.lease_expires
)"""
"""An existing run's row, if the save continues it (no row otherwise)."""

_CREATE = """WITH saved AS (
    INSERT INTO agentfsm_runs (run_id, schema_version, version, seq, state, turn, stamp,
        snapshot, lease_owner, lease_expires)
    SELECT %(run)s::text, %(schema_version)s, %(version)s, %(seq)s, %(state)s::text,
        %(turn)s, %(stamp)s::text, %(snapshot)s::text,
        CASE WHEN %(state)s::text = 'busy' THEN %(holder)s::text END,
        CASE WHEN %(state)s::text = 'busy' AND %(holder)s::text IS NOT NULL THEN %(until)s END
    WHERE %(known_seq)s = 0
    ON CONFLICT (run_id) DO NOTHING
    RETURNING lease_owner, lease_expires
)"""
"""A new run's row, unless another writer created the run first (no row then)."""

_EVENTS = """, appended AS (
    INSERT INTO agentfsm_events (run_id, seq, event)
    SELECT %(run)s::text, %(known_seq)s + e.n, e.v::text
    FROM json_array_elements(%(events)s::json) WITH ORDINALITY AS e(v, n)
    WHERE EXISTS (SELECT FROM saved)
)"""
"""The events, if the run's row was written."""

_ITEMS = """, items AS (
    SELECT 'm'::text AS kind, %(m_start)s::integer - 1 + i.n AS idx, i.v::text AS item
    FROM json_array_elements(%(messages)s::json) WITH ORDINALITY AS i(v, n)
    UNION ALL
    SELECT 't', %(t_start)s::integer - 1 + i.n, i.v::text
    FROM json_array_elements(%(trace)s::json) WITH ORDINALITY AS i(v, n)
), added AS (
    INSERT INTO agentfsm_items (run_id, kind, idx, item)
    SELECT %(run)s::text, kind, idx, item FROM items WHERE EXISTS (SELECT FROM saved)"""
"""The new item rows, if the run's row was written (a save with none leaves it out)."""

_REWRITE = """
    ON CONFLICT (run_id, kind, idx) DO UPDATE SET item = excluded.item
), trimmed_m AS (
    DELETE FROM agentfsm_items d
    WHERE %(m_rewrite)s AND EXISTS (SELECT FROM saved) AND d.run_id = %(run)s::text
        AND d.kind = 'm' AND d.idx >= %(m_start)s::integer + json_array_length(%(messages)s::json)
), trimmed_t AS (
    DELETE FROM agentfsm_items d
    WHERE %(t_rewrite)s AND EXISTS (SELECT FROM saved) AND d.run_id = %(run)s::text
        AND d.kind = 't' AND d.idx >= %(t_start)s::integer + json_array_length(%(trace)s::json)"""
"""For a save that rewrites a kind's items: its rows are upserted and those beyond its new
length deleted (rather than all deleted and inserted again: two sub-statements of one
statement must not touch one row); a kind not rewritten is not scanned (its flag, a
parameter, is a one-time filter of the plan)."""

_RESULT = f"""
SELECT s.lease_owner, s.lease_expires,
    CASE WHEN %(notice)s::text IS NOT NULL
        AND NOT (pg_try_advisory_xact_lock({WATCHED_RUN}, %(watch_key)s)
            AND pg_try_advisory_xact_lock_shared({WATCHED_ALL}, 0))
    THEN pg_notify('agentfsm_events', %(notice)s) END
FROM saved s"""
"""The stored lease, and the notification if someone watches the run (if the save could not
take the locks `agentfsm.stores._postgres_sql.WATCHED_RUN` and ``WATCHED_ALL`` say; when it
could, it holds them until its commit, so a watch starting meanwhile waits for it)."""

_TYPES = {
    **dict.fromkeys(
        (
            "expected",
            "known_seq",
            "schema_version",
            "version",
            "seq",
            "turn",
            "m_start",
            "t_start",
        ),
        INT8,
    ),
    **dict.fromkeys(("m_rewrite", "t_rewrite"), BOOL),
    **dict.fromkeys(("now", "until"), FLOAT8),
    "watch_key": INT4,
}
"""The parameters' types (the rest are text): integers are ``bigint`` whatever their size."""

SHAPES = ("events", "items", "rewrite")
"""What a save writes beside the run's row and events: no item rows, new ones, or a kind's
items rewritten (upserted, and those past its new length deleted)."""

SAVES = {
    (create, shape): Statement(
        f"agentfsm_save_{'create' if create else 'update'}_{shape}",
        (_CREATE if create else _UPDATE)
        + _EVENTS
        + ("" if shape == "events" else _ITEMS + (_REWRITE if shape == "rewrite" else "") + "\n)")
        + _RESULT,
        _TYPES,
    )
    for create in (False, True)
    for shape in SHAPES
}
"""The save, by (whether it creates the run, its `SHAPES`): one row (the stored lease's
owner and expiry) if it wrote, none if it did not. Six statements, so that each plan holds
only what its saves do (a plan's every node is set up at each execution: the items'
sub-statements cost a save with no new item about 4% of its time)."""


def statement(expected_version: int | None, changes: Sequence[NewItems]) -> Statement:
    """The one of `SAVES` a save expecting ``expected_version`` and writing ``changes`` is."""
    if any(change.rewrite for change in changes):
        shape = "rewrite"
    else:
        shape = "items" if any(change.rows for change in changes) else "events"
    return SAVES[expected_version is None, shape]


def lease_row(result: PGresult) -> tuple[str | None, float | None] | None:
    """The stored lease's owner and expiry a save's ``result`` gives; None: it wrote nothing."""
    if result.ntuples == 0:
        return None
    owner, expires = result.get_value(0, 0), result.get_value(0, 1)
    return (
        None if owner is None else bytes(owner).decode(),
        None if expires is None else float(bytes(expires)),
    )


def json_list(texts: Sequence[str]) -> str:
    """A JSON array of the JSON texts ``texts`` (each element's own text kept as it is)."""
    return f"[{','.join(texts)}]"


def arguments(
    snapshot: Snapshot,
    events: Sequence[Event],
    changes: Sequence[NewItems],
    *,
    expected_version: int | None,
    known_seq: int,
    known_stamp: str | None,
    stamp: str,
    lease: tuple[str | None, float, float],
) -> dict[str, str | None]:
    """The parameters of `SAVES`, each as its text (`agentfsm.stores._pg_exec`), by name.

    They are `agentfsm.stores._postgres_sql.save_arguments`' (the save function's).
    """
    run_id = snapshot.run_id
    by_kind = {change.kind: change for change in changes}
    messages, trace = by_kind.get("m"), by_kind.get("t")
    holder, now, until = lease
    return {
        "run": run_id,
        "expected": None if expected_version is None else integer(expected_version),
        "known_seq": integer(known_seq),
        "known_stamp": known_stamp,
        "schema_version": integer(snapshot.schema_version),
        "version": integer(snapshot.version),
        "seq": integer(snapshot.seq),
        "state": snapshot.state,
        "turn": integer(snapshot.turn),
        "stamp": stamp,
        "snapshot": core_json(snapshot),
        "events": json_list([event_json(event) for event in events]),
        "messages": json_list(messages.rows if messages else ()),
        "m_start": integer(messages.start if messages else 0),
        "m_rewrite": boolean(bool(messages and messages.rewrite)),
        "trace": json_list(trace.rows if trace else ()),
        "t_start": integer(trace.start if trace else 0),
        "t_rewrite": boolean(bool(trace and trace.rewrite)),
        "notice": notice(run_id, events[-1].seq) if events else None,
        "watch_key": integer(watch_key(run_id)),
        "holder": holder,
        "now": double(now),
        "until": double(until),
    }


def refusal(
    outcome: str,
    snapshot: Snapshot,
    events: Sequence[Event],
    expected_version: int | None,
    stored: tuple[int | None, int],
    leased: tuple[str | None, float | None],
) -> None:
    """Raise what the save function's ``outcome`` other than ``saved`` stands for."""
    owner, expires_at = leased
    if outcome == "busy" and owner is not None and expires_at is not None:
        raise RunBusyError(snapshot.run_id, owner, expires_at)
    if outcome == "conflict":
        raise SnapshotConflictError(snapshot.run_id, expected_version, stored[0])
    check_save(snapshot, events, expected_version, stored[1])  # ("invalid": it raises)


class _Stamps:
    """Each save's stamp: this process's random prefix and a count (see `new_stamp`)."""

    prefix = secrets.token_hex(8)
    count = itertools.count()

    @classmethod
    def reseed(cls) -> None:
        """A forked child's own prefix (else parent and child would stamp alike)."""
        cls.prefix, cls.count = secrets.token_hex(8), itertools.count()


if hasattr(os, "register_at_fork"):  # (not on Windows, which has no fork)
    os.register_at_fork(after_in_child=_Stamps.reseed)


def new_stamp() -> str:
    """A text no other save of any process writes: how a save recognises its own commit.

    64 random bits per process (drawn again in a forked child) and a count: a ``uuid4``
    per save drew 128 bits from the kernel each time, for the same purpose.
    """
    return f"{_Stamps.prefix}-{next(_Stamps.count):x}"


def lease_arguments(hold: Hold | None) -> tuple[str | None, float, float]:
    """The save function's lease arguments: the holder (or None), now, and a new expiry."""
    if hold is None:
        return None, time.time(), 0.0
    now = hold.clock()
    return hold.owner, now, now + hold.duration


def follows(snapshot: Snapshot, events: Sequence[Event]) -> int:
    """The seq the stored run must have for this save to continue it."""
    return events[0].seq - 1 if events else snapshot.seq
