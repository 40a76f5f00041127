"""The SQL of `PostgresStore`, and the pure steps around it, apart from any connection.

Everything here is data or a pure function, so the synchronous store (psycopg's
``Connection``) and an asynchronous twin (``AsyncConnection``) run the very same statements
in the same order: each only adds ``await`` where a statement is sent.

Schema version 2 (the ``agentfsm_schema`` table holds the version):

- ``agentfsm_runs``: one row per run: its latest snapshot as JSON but for its messages and
  trace, ``schema_version``, ``version``, ``seq``, ``state``, ``turn`` for listing,
  ``stamp``, a random token written with each version so a store knows a row it wrote, and a
  busy run's lease (``lease_owner``, ``lease_expires``; version 2 added them).
- ``agentfsm_items``: the snapshot's messages (kind ``m``) and trace entries (kind ``t``).
- ``agentfsm_events``: the append-only event log, keyed by ``(run_id, seq)``; a trigger
  refuses any ``UPDATE`` of it.
- ``agentfsm_save(…)``: a whole save as one function call; the store calls it for a save
  the one-statement save (`agentfsm.stores._pg_save`) refused, to learn why.

A save of a watched run sends ``pg_notify('agentfsm_events', '<run key>:<seq>')`` in its
transaction, so watchers hear of it when (and only if) it commits; a save nobody watches
sends none (see `WATCHED_RUN`): a transaction that notifies holds a lock of the whole
server from its commit until its WAL is flushed, so notifying saves commit one at a time.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence

from agentfsm.states.events import Event
from agentfsm.stores._items import NewItems, core_json, event_json
from agentfsm.stores.snapshot import Snapshot

SCHEMA_VERSION = 2
"""The version of the tables this agentfsm writes."""

CHANNEL = "agentfsm_events"
"""The LISTEN/NOTIFY channel on which saves announce new events."""

TABLES = frozenset({"agentfsm_schema", "agentfsm_runs", "agentfsm_items", "agentfsm_events"})
"""agentfsm's tables; any other table in the schema is another application's."""

MIGRATION_LOCK = 0x61676E74_66736D  # pg_advisory_xact_lock key: "agntfsm"

WATCHED_RUN = 0x61667731  # "afw1"
"""The class (first key) of the advisory lock a watch of one run holds, shared, for as long
as it watches; the second key is the run's `watch_key`. A save of a run with events tries
that lock, exclusive, for its own transaction: it gets it only if nobody watches the run,
and then sends no notification. A watch that starts while such a save is in flight waits
for its commit (its lock), and reads after that: so no save it should hear of goes
unheard. Two runs whose keys collide only make one's saves notify when the other is
watched (a watch ignores notifications of other runs)."""

WATCHED_ALL = 0x61667732  # "afw2"
"""The class of the advisory lock (second key 0) held, exclusive, by a `PostgresStore.listen`
connection: a save takes it shared (saves never wait for one another on it), and a save
that cannot notifies. A second listener queues for the lock on a connection of its own; a
queued request makes the saves' attempts fail too, so saves notify until the last listener
is gone."""
"""Serialises concurrent first openings of one database (only one migrates)."""

SAVE_FUNCTION_1 = """CREATE FUNCTION agentfsm_save(
    p_run_id text, p_expected bigint, p_known_seq bigint, p_known_stamp text,
    p_schema_version integer, p_version bigint, p_seq bigint, p_state text, p_turn bigint,
    p_stamp text, p_snapshot text, p_event_seqs bigint[], p_events text[], p_rewrite text[],
    p_item_kinds text[], p_item_idx integer[], p_items text[], p_notice text
) RETURNS TABLE (outcome text, stored_version bigint, stored_seq bigint)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    SELECT a.version, a.seq, a.stamp INTO r FROM agentfsm_runs a
        WHERE a.run_id = p_run_id FOR UPDATE;
    IF FOUND THEN
        IF p_expected IS NULL OR r.version <> p_expected THEN
            RETURN QUERY SELECT 'conflict'::text, r.version, r.seq; RETURN;
        ELSIF r.seq <> p_known_seq THEN
            RETURN QUERY SELECT 'invalid'::text, r.version, r.seq; RETURN;
        ELSIF p_known_stamp IS NOT NULL AND p_known_stamp <> r.stamp THEN
            RETURN QUERY SELECT 'stale'::text, r.version, r.seq; RETURN;
        END IF;
        UPDATE agentfsm_runs SET schema_version = p_schema_version, version = p_version,
            seq = p_seq, state = p_state, turn = p_turn, stamp = p_stamp,
            snapshot = p_snapshot
            WHERE run_id = p_run_id;
    ELSIF p_expected IS NOT NULL THEN
        RETURN QUERY SELECT 'conflict'::text, NULL::bigint, 0::bigint; RETURN;
    ELSIF p_known_seq <> 0 THEN
        RETURN QUERY SELECT 'invalid'::text, NULL::bigint, 0::bigint; RETURN;
    ELSE
        INSERT INTO agentfsm_runs (run_id, schema_version, version, seq, state, turn, stamp,
            snapshot) VALUES (p_run_id, p_schema_version, p_version, p_seq, p_state, p_turn,
            p_stamp, p_snapshot) ON CONFLICT (run_id) DO NOTHING;
        IF NOT FOUND THEN  -- another writer created the run since we looked
            SELECT a.version, a.seq INTO r FROM agentfsm_runs a WHERE a.run_id = p_run_id;
            RETURN QUERY SELECT 'conflict'::text, r.version, r.seq; RETURN;
        END IF;
    END IF;
    INSERT INTO agentfsm_events (run_id, seq, event)
        SELECT p_run_id, t.s, t.e FROM unnest(p_event_seqs, p_events) AS t(s, e);
    IF cardinality(p_rewrite) > 0 THEN
        DELETE FROM agentfsm_items WHERE run_id = p_run_id AND kind = ANY(p_rewrite);
    END IF;
    INSERT INTO agentfsm_items (run_id, kind, idx, item)
        SELECT p_run_id, t.k, t.i, t.v FROM unnest(p_item_kinds, p_item_idx, p_items)
        AS t(k, i, v);
    IF p_notice IS NOT NULL THEN
        PERFORM pg_notify('agentfsm_events', p_notice);
    END IF;
    RETURN QUERY SELECT 'saved'::text, p_version, p_seq;
END $$"""
"""Schema version 1's save (replaced by `SAVE_FUNCTION` in version 2)."""

SAVE_FUNCTION = """CREATE FUNCTION agentfsm_save(
    p_run_id text, p_expected bigint, p_known_seq bigint, p_known_stamp text,
    p_schema_version integer, p_version bigint, p_seq bigint, p_state text, p_turn bigint,
    p_stamp text, p_snapshot text, p_event_seqs bigint[], p_events text[], p_rewrite text[],
    p_item_kinds text[], p_item_idx integer[], p_items text[], p_notice text,
    p_holder text, p_now double precision, p_until double precision
) RETURNS TABLE (outcome text, stored_version bigint, stored_seq bigint, lease_owner text,
    lease_expires double precision)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    v_owner text;
    v_expires double precision;
BEGIN
    SELECT a.version, a.seq, a.stamp, a.lease_owner, a.lease_expires INTO r
        FROM agentfsm_runs a WHERE a.run_id = p_run_id FOR UPDATE;
    IF FOUND THEN
        IF r.lease_owner IS NOT NULL AND r.lease_expires > p_now
                AND r.lease_owner IS DISTINCT FROM p_holder THEN
            RETURN QUERY SELECT 'busy'::text, r.version, r.seq, r.lease_owner, r.lease_expires;
            RETURN;
        ELSIF p_expected IS NULL OR r.version <> p_expected THEN
            RETURN QUERY SELECT 'conflict'::text, r.version, r.seq, NULL::text,
                NULL::double precision; RETURN;
        ELSIF r.seq <> p_known_seq THEN
            RETURN QUERY SELECT 'invalid'::text, r.version, r.seq, NULL::text,
                NULL::double precision; RETURN;
        ELSIF p_known_stamp IS NOT NULL AND p_known_stamp <> r.stamp THEN
            RETURN QUERY SELECT 'stale'::text, r.version, r.seq, NULL::text,
                NULL::double precision; RETURN;
        END IF;
        IF p_state <> 'busy' THEN
            v_owner := NULL; v_expires := NULL;
        ELSIF p_holder IS NULL THEN
            v_owner := r.lease_owner; v_expires := r.lease_expires;
        ELSE
            v_owner := p_holder; v_expires := p_until;
        END IF;
        UPDATE agentfsm_runs SET schema_version = p_schema_version, version = p_version,
            seq = p_seq, state = p_state, turn = p_turn, stamp = p_stamp,
            snapshot = p_snapshot, lease_owner = v_owner, lease_expires = v_expires
            WHERE run_id = p_run_id;
    ELSIF p_expected IS NOT NULL THEN
        RETURN QUERY SELECT 'conflict'::text, NULL::bigint, 0::bigint, NULL::text,
            NULL::double precision; RETURN;
    ELSIF p_known_seq <> 0 THEN
        RETURN QUERY SELECT 'invalid'::text, NULL::bigint, 0::bigint, NULL::text,
            NULL::double precision; RETURN;
    ELSE
        IF p_state = 'busy' AND p_holder IS NOT NULL THEN
            v_owner := p_holder; v_expires := p_until;
        END IF;
        INSERT INTO agentfsm_runs (run_id, schema_version, version, seq, state, turn, stamp,
            snapshot, lease_owner, lease_expires) VALUES (p_run_id, p_schema_version,
            p_version, p_seq, p_state, p_turn, p_stamp, p_snapshot, v_owner, v_expires)
            ON CONFLICT (run_id) DO NOTHING;
        IF NOT FOUND THEN  -- another writer created the run since we looked
            SELECT a.version, a.seq INTO r FROM agentfsm_runs a WHERE a.run_id = p_run_id;
            RETURN QUERY SELECT 'conflict'::text, r.version, r.seq, NULL::text,
                NULL::double precision; RETURN;
        END IF;
    END IF;
    INSERT INTO agentfsm_events (run_id, seq, event)
        SELECT p_run_id, t.s, t.e FROM unnest(p_event_seqs, p_events) AS t(s, e);
    IF cardinality(p_rewrite) > 0 THEN
        DELETE FROM agentfsm_items WHERE run_id = p_run_id AND kind = ANY(p_rewrite);
    END IF;
    INSERT INTO agentfsm_items (run_id, kind, idx, item)
        SELECT p_run_id, t.k, t.i, t.v FROM unnest(p_item_kinds, p_item_idx, p_items)
        AS t(k, i, v);
    IF p_notice IS NOT NULL THEN
        PERFORM pg_notify('agentfsm_events', p_notice);
    END IF;
    RETURN QUERY SELECT 'saved'::text, p_version, p_seq, v_owner, v_expires;
END $$"""
"""A whole save in one statement (one round trip): lock the run's row, refuse it while
another owner's lease is live (``p_holder`` is the save's hold's owner, or NULL), check the
version, the seq the events follow and (for a save of only the new items) that the stored
items are the ones the store wrote (``stamp``); then write, the lease with the rest (taken or
renewed for the holder of a busy run, cleared at rest: see `agentfsm.stores.leases`). Any
other outcome writes nothing."""

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
        SAVE_FUNCTION_1,
    ),
    2: (
        "ALTER TABLE agentfsm_runs ADD COLUMN lease_owner text, "
        "ADD COLUMN lease_expires double precision",
        "DROP FUNCTION agentfsm_save(text, bigint, bigint, text, integer, bigint, bigint, text, "
        "bigint, text, text, bigint[], text[], text[], text[], integer[], text[], text)",
        SAVE_FUNCTION,
    ),
}
"""Each schema version's statements, applied in order from the database's version + 1."""

LOCK = "SELECT pg_advisory_xact_lock(%s)"
TABLES_IN_SCHEMA = (
    "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f')"
)
READ_VERSION = "SELECT version FROM agentfsm_schema"
SET_VERSION = "UPDATE agentfsm_schema SET version = %s"
FIRST_VERSION = "INSERT INTO agentfsm_schema (version) VALUES (%s)"

SAVE = (
    "SELECT outcome, stored_version, stored_seq, lease_owner, lease_expires FROM "
    "agentfsm_save(%s, %s::bigint, %s::bigint, "
    "%s, %s, %s, %s, %s, %s, %s, %s, %s::bigint[], %s::text[], %s::text[], %s::text[], "
    "%s::integer[], %s::text[], %s, %s, %s::double precision, %s::double precision)"
)
LEASE = "SELECT lease_owner, lease_expires FROM agentfsm_runs WHERE run_id = %s"
RENEW = (
    "WITH renewed AS (UPDATE agentfsm_runs SET lease_expires = %(until)s "
    "WHERE run_id = %(run)s AND lease_owner = %(owner)s RETURNING lease_owner, lease_expires) "
    "SELECT lease_owner, lease_expires FROM renewed UNION ALL "
    "SELECT lease_owner, lease_expires FROM agentfsm_runs WHERE run_id = %(run)s "
    "AND NOT EXISTS (SELECT 1 FROM renewed)"
)
"""Extend the owner's lease (one statement); what is stored afterwards, as one row."""
SELECT_RUN = "SELECT version, seq FROM agentfsm_runs WHERE run_id = %s"
SELECT_STAMP = "SELECT version, stamp FROM agentfsm_runs WHERE run_id = %s"

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
WATCH_RUN = f"SELECT pg_advisory_lock_shared({WATCHED_RUN}, %s)"
"""Taken by a watch (on its listening connection) before it LISTENs: see `WATCHED_RUN`."""
WATCH_ALL = f"SELECT pg_advisory_lock({WATCHED_ALL}, 0)"
"""Requested by a listener's holding connection: granted, or queued (`WATCHED_ALL`)."""
WATCH_ALL_QUEUED = (
    "SELECT EXISTS (SELECT FROM pg_locks WHERE pid = %s AND locktype = 'advisory' "
    f"AND classid = {WATCHED_ALL}::bigint::oid AND objid = 0)"
)
"""Whether the backend ``pid`` holds or waits for the lock of `WATCH_ALL`."""

Row = tuple[object, ...]


def save_arguments(
    snapshot: Snapshot,
    events: Sequence[Event],
    changes: Sequence[NewItems],
    *,
    expected_version: int | None,
    known_seq: int,
    known_stamp: str | None,
    stamp: str,
    lease: tuple[str | None, float, float] = (None, 0.0, 0.0),
) -> Row:
    """SAVE's arguments: the run's new row, its events and item rows, and what is expected.

    ``known_seq`` is the seq the stored run must have. ``known_stamp`` is the stamp of the
    stored items ``changes`` continue (None when they rewrite every kind): the save is
    refused as stale if another store wrote since. ``lease`` is the save's hold's owner (None
    for a save without a hold), the time now and the expiry a busy run's lease gets.
    """
    run_id = snapshot.run_id
    kinds, indexes, items = [], [], []
    for change in changes:
        for n, item in enumerate(change.rows, change.start):
            kinds.append(change.kind)
            indexes.append(n)
            items.append(item)
    return (
        run_id,
        expected_version,
        known_seq,
        known_stamp,
        snapshot.schema_version,
        snapshot.version,
        snapshot.seq,
        snapshot.state,
        snapshot.turn,
        stamp,
        core_json(snapshot),
        [e.seq for e in events],
        [event_json(e) for e in events],
        [change.kind for change in changes if change.rewrite],
        kinds,
        indexes,
        items,
        notice(run_id, events[-1].seq) if events else None,
        *lease,
    )


@functools.lru_cache(maxsize=1024)  # (each save of a run notifies under its key)
def run_key(run_id: str) -> str:
    """A short, fixed-length key of ``run_id`` for notifications (whose payload is bounded)."""
    return hashlib.sha256(run_id.encode()).hexdigest()[:32]


def watch_key(run_id: str) -> int:
    """The second key (a signed 32-bit integer) of the advisory lock watching ``run_id``."""
    return int(run_key(run_id)[:8], 16) - 2**31


def notice(run_id: str, seq: int) -> str:
    """The payload announcing that ``run_id``'s events up to ``seq`` are stored."""
    return f"{run_key(run_id)}:{seq}"


def parse_notice(payload: str) -> tuple[str, int]:
    """The run key and seq of a notification's payload (seq 0 if it is not one of ours)."""
    key, _, seq = payload.partition(":")
    return key, int(seq) if seq.isdigit() else 0
