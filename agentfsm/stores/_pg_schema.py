"""Opening a `PostgresStore`'s database: is it agentfsm's (or empty), and of which version.

Run on the store's first connection, in one transaction under an advisory lock, so that of
processes opening an empty database together one migrates it and the others find it done.
A database holding another application's tables, or agentfsm's of a newer schema version,
is refused untouched.
"""

from __future__ import annotations

from typing import Any

import psycopg

from agentfsm.errors import SchemaVersionError, StoreCorruptError, StoreError
from agentfsm.stores import _postgres_sql as sql

Connection = psycopg.Connection[tuple[Any, ...]]


def prepare(conn: Connection, url: str, *, create: bool) -> None:
    """Check the database is agentfsm's (or empty), and migrate it to SCHEMA_VERSION.

    Args:
        conn: An autocommit connection to it.
        url: The database's URL, its password masked (for errors).
        create: Migrate an empty database (else it is an error, and stays empty).

    Raises:
        StoreCorruptError: Another application's tables, or agentfsm's incomplete.
        SchemaVersionError: agentfsm's tables of a version this agentfsm does not know.
        StoreError: The database is empty and ``create`` is False.
    """
    with conn.transaction():
        conn.execute(sql.LOCK, (sql.MIGRATION_LOCK,))
        names = {row[0] for row in conn.execute(sql.TABLES_IN_SCHEMA)}
        if "agentfsm_schema" in names:
            _check_version(conn, url, names)
            return
        if names:
            raise StoreCorruptError(
                url,
                "the database holds another application's tables "
                f"({sorted(names)!r}) and no agentfsm store; give agentfsm a database of "
                "its own, or a schema of its own (?options=-csearch_path%3Dagentfsm)",
            )
        if not create:
            raise StoreError(
                f"there is no run store in {url!r}: the database is empty (it was "
                "left so; open it with create=True to make one)"
            )
        _migrate(conn, 0)
        conn.execute(sql.FIRST_VERSION, (sql.SCHEMA_VERSION,))


def _check_version(conn: Connection, url: str, names: set[str]) -> None:
    rows = conn.execute(sql.READ_VERSION).fetchall()
    if len(rows) != 1:
        raise StoreCorruptError(url, f"agentfsm_schema has {len(rows)} rows, expected 1")
    version = int(rows[0][0])
    if not 1 <= version <= sql.SCHEMA_VERSION:
        raise SchemaVersionError(url, None, version, (sql.SCHEMA_VERSION,))
    if version == sql.SCHEMA_VERSION and sql.TABLES - names:
        raise StoreCorruptError(
            url, f"agentfsm's tables {sorted(sql.TABLES - names)!r} are missing"
        )
    if version < sql.SCHEMA_VERSION:
        _migrate(conn, version)
        conn.execute(sql.SET_VERSION, (sql.SCHEMA_VERSION,))


def _migrate(conn: Connection, version: int) -> None:
    for step in range(version + 1, sql.SCHEMA_VERSION + 1):
        for statement in sql.MIGRATIONS[step]:
            conn.execute(statement)  # our own literal SQL
