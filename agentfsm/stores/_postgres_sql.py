"""The SQL of `PostgresStore`, and the pure steps around it, apart from any connection.

Everything here is data or a pure function, so the synchronous store (psycopg's
``Connection``) and an asynchronous twin (``AsyncConnection``) run the very same statements
in the same order: each only adds ``await`` where a statement is sent.

Schema version 1 (the ``agentfsm_schema`` table holds the version):

- ``agentfsm_runs``: one row per run: its latest snapshot as JSON but for its messages and
  trace, ``schema_version``, ``version``, ``seq``, ``state``, ``turn`` for listing, and
  ``stamp``, a random token written with each version so a store knows a row it wrote.
- ``agentfsm_items``: the snapshot's messages (kind ``m``) and trace entries (kind ``t``).
- ``agentfsm_events``: the append-only event log, keyed by ``(run_id, seq)``; a trigger
  refuses any ``UPDATE`` of it.

A save sends ``pg_notify('agentfsm_events', '<run key>:<seq>')`` in its transaction, so
watchers hear of it when (and only if) it commits.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from agentfsm.states.events import Event
from agentfsm.stores._items import NewItems, core_json
from agentfsm.stores.snapshot import Snapshot

SCHEMA_VERSION = 1
"""The version of the tables this agentfsm writes."""

CHANNEL = "agentfsm_events"
"""The LISTEN/NOTIFY channel on which saves announce new events."""

TABLES = frozenset({"agentfsm_schema", "agentfsm_runs", "agentfsm_items", "agentfsm_events"})
"""agentfsm's tables; any other table in the schema is another application's."""

MIGRATION_LOCK = 0x61676E74_66736D  # pg_advisory_xact_lock key: "agntfsm"
"""Serialises concurrent first openings of one database (only one migrates)."""

MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        """CREATE TABLE agentfsm_schema (
            version integer NOT NULL
        )""",
        """CREATE TABLE agentfsm_runs (
            run_id text PRIMARY KEY,
            schema_version integer NOT NULL,
            version bigint NOT NULL,
            seq bigint NOT NULL,
            state text NOT NULL,
            turn bigint NOT NULL,
            stamp text NOT NULL,
            snapshot text NOT NULL
        )""",
        """CREATE TABLE agentfsm_items (
            run_id text NOT NULL,
            kind text NOT NULL,
            idx integer NOT NULL,
            item text NOT NULL,
            PRIMARY KEY (run_id, kind, idx)
        )""",
        """CREATE TABLE agentfsm_events (
            run_id text NOT NULL,
            seq bigint NOT NULL,
            event text NOT NULL,
            PRIMARY KEY (run_id, seq)
        )""",
        """CREATE FUNCTION agentfsm_events_append_only() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'the event log is append-only'; END $$""",
        """CREATE TRIGGER agentfsm_events_append_only BEFORE UPDATE ON agentfsm_events
        FOR EACH ROW EXECUTE FUNCTION agentfsm_events_append_only()""",
    ),
}
"""Each schema version's statements, applied in order from the database's version + 1."""

LOCK = "SELECT pg_advisory_xact_lock(%s)"
TABLES_IN_SCHEMA = (
    "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f')"
)
CURRENT_SCHEMA = "SELECT current_schema()"
READ_VERSION = "SELECT version FROM agentfsm_schema"
SET_VERSION = "UPDATE agentfsm_schema SET version = %s"
FIRST_VERSION = "INSERT INTO agentfsm_schema (version) VALUES (%s)"

SELECT_FOR_SAVE = "SELECT version, seq, stamp FROM agentfsm_runs WHERE run_id = %s FOR UPDATE"
SELECT_VERSION = "SELECT version FROM agentfsm_runs WHERE run_id = %s"
INSERT_RUN = (
    "INSERT INTO agentfsm_runs (run_id, schema_version, version, seq, state, turn, stamp, "
    "snapshot) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (run_id) DO NOTHING"
)
UPDATE_RUN = (
    "UPDATE agentfsm_runs SET schema_version = %s, version = %s, seq = %s, "
    "state = %s, turn = %s, stamp = %s, snapshot = %s WHERE run_id = %s"
)
INSERT_EVENT = "INSERT INTO agentfsm_events (run_id, seq, event) VALUES (%s, %s, %s)"
DELETE_ITEMS = "DELETE FROM agentfsm_items WHERE run_id = %s AND kind = %s"
INSERT_ITEM = "INSERT INTO agentfsm_items (run_id, kind, idx, item) VALUES (%s, %s, %s, %s)"
NOTIFY = "SELECT pg_notify(%s, %s)"

LOAD = (
    "SELECT schema_version, snapshot, stamp, "
    "ARRAY(SELECT item FROM agentfsm_items i WHERE i.run_id = r.run_id AND i.kind = 'm' "
    "ORDER BY idx), "
    "ARRAY(SELECT item FROM agentfsm_items i WHERE i.run_id = r.run_id AND i.kind = 't' "
    "ORDER BY idx) "
    "FROM agentfsm_runs r WHERE r.run_id = %s"
)
EVENTS = "SELECT event FROM agentfsm_events WHERE run_id = %s AND seq > %s ORDER BY seq"
LIST_RUNS = "SELECT run_id, state, turn, seq, version FROM agentfsm_runs ORDER BY run_id"
DELETE_RUN = (
    "DELETE FROM agentfsm_events WHERE run_id = %s",
    "DELETE FROM agentfsm_items WHERE run_id = %s",
    "DELETE FROM agentfsm_runs WHERE run_id = %s",
)
LISTEN = f"LISTEN {CHANNEL}"

Row = tuple[object, ...]


def run_row(snapshot: Snapshot, stamp: str) -> Row:
    """The ``agentfsm_runs`` values of ``snapshot``, as INSERT_RUN takes them."""
    return (
        snapshot.run_id,
        snapshot.schema_version,
        snapshot.version,
        snapshot.seq,
        snapshot.state,
        snapshot.turn,
        stamp,
        core_json(snapshot),
    )


def write_steps(
    snapshot: Snapshot, events: Sequence[Event], changes: Sequence[NewItems], stamp: str, *,
    new: bool,
) -> list[tuple[str, list[Row]]]:  # fmt: skip
    """The statements of a save once its version is checked, each with its rows.

    For a new run the first step is INSERT_RUN, whose row count says whether another writer
    created the run first (0: a conflict).
    """
    run_id = snapshot.run_id
    row = run_row(snapshot, stamp)
    steps: list[tuple[str, list[Row]]] = [
        (INSERT_RUN, [row]) if new else (UPDATE_RUN, [(*row[1:], run_id)])
    ]
    if events:
        steps.append((INSERT_EVENT, [(run_id, e.seq, e.model_dump_json()) for e in events]))
    for change in changes:
        if change.rewrite:
            steps.append((DELETE_ITEMS, [(run_id, change.kind)]))
        if change.rows:
            steps.append(
                (
                    INSERT_ITEM,
                    [
                        (run_id, change.kind, n, item)
                        for n, item in enumerate(change.rows, change.start)
                    ],
                )
            )
    if events:
        steps.append((NOTIFY, [(CHANNEL, notice(run_id, events[-1].seq))]))
    return steps


def run_key(run_id: str) -> str:
    """A short, fixed-length key of ``run_id`` for notifications (whose payload is bounded)."""
    return hashlib.sha256(run_id.encode()).hexdigest()[:32]


def notice(run_id: str, seq: int) -> str:
    """The payload announcing that ``run_id``'s events up to ``seq`` are stored."""
    return f"{run_key(run_id)}:{seq}"


def parse_notice(payload: str) -> tuple[str, int]:
    """The run key and seq of a notification's payload (seq 0 if it is not one of ours)."""
    key, _, seq = payload.partition(":")
    return key, int(seq) if seq.isdigit() else 0
