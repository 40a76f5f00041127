"""The store's hot statements, prepared once per connection and sent through libpq directly.

A `Statement` is written with psycopg's named placeholders (``%(name)s``) and declares the
type of each parameter that is not text. On a connection's first use of it, it is prepared
with those types; after that, each call is one ``Bind``/``Execute`` round trip. Its caller
gives each parameter in PostgreSQL's text form (`integer`, `double`, `boolean` make them),
which is what goes on the wire.

Why not a psycopg cursor's ``execute(..., prepare=True)``, which does the same on the wire:
for each call it converts the query, picks a dumper for each of the ~20 parameters through
its transformer and wraps the result, about a tenth of a `PostgresStore` save's client time
for work whose every type is known in advance. The store's connections are made with
``client_encoding=utf8`` (`agentfsm.stores._pg_pool`), so text is UTF-8 here.

A statement that the server no longer knows on a connection (a pooler or an administrator
ran ``DEALLOCATE``) is prepared again, once, and the call made: nothing of it had run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import psycopg
from psycopg import errors
from psycopg.generators import execute
from psycopg.pq import ExecStatus

Connection = psycopg.Connection[tuple[Any, ...]]

TEXT, INT4, INT8, FLOAT8, BOOL = 25, 23, 20, 701, 16
"""The PostgreSQL type OIDs a statement's parameters may have (text unless declared)."""


def integer(value: int) -> str:
    """An ``int4`` or ``int8`` parameter's text."""
    return str(value)


def double(value: float) -> str:
    """A ``float8`` parameter's text: the shortest that reads back exactly."""
    return float.__repr__(value)  # ('inf', '-inf' and 'nan' are read too)


def boolean(value: bool) -> str:
    """A ``bool`` parameter's text."""
    return "t" if value else "f"


_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


class Statement:
    """One SQL statement, sent prepared under ``name`` with its parameters as text.

    Args:
        name: Its name on each connection (unique among the store's statements).
        sql: The statement, with psycopg's named placeholders (``%(name)s``; one name may
            appear several times).
        types: The type OID of each parameter that is not text (`INT4`, `INT8`, `FLOAT8`,
            `BOOL`).
    """

    def __init__(self, name: str, sql: str, types: Mapping[str, int]) -> None:
        names: list[str] = []

        def number(match: re.Match[str]) -> str:
            if match.group(1) not in names:
                names.append(match.group(1))
            return f"${names.index(match.group(1)) + 1}"

        self.name = name.encode()
        self.query = _PLACEHOLDER.sub(number, sql).encode()
        self.names = tuple(names)
        self.types = [types.get(name, TEXT) for name in names]

    def parameters(self, arguments: Mapping[str, str | None]) -> list[bytes | None]:
        """The statement's parameters, in order, as UTF-8 (None for NULL).

        Raises:
            KeyError: ``arguments`` has no value for one of them.
            psycopg.DataError: One holds a NUL character, which no PostgreSQL text can
                (libpq would end the value there: a run id with a NUL would lose its end).
        """
        values = [arguments[name] for name in self.names]
        for value in values:
            if value is not None and "\x00" in value:
                raise psycopg.DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes")
        return [None if value is None else value.encode() for value in values]

    def __repr__(self) -> str:
        return f"Statement({self.name.decode()!r})"


def run(
    conn: Connection,
    statement: Statement,
    arguments: Mapping[str, str | None],
    prepared: set[bytes],
) -> psycopg.pq.abc.PGresult:
    """Execute ``statement`` on ``conn`` (preparing it first if it is not in ``prepared``).

    Args:
        conn: An idle autocommit connection, used by this call alone.
        statement: The statement.
        arguments: Each of its parameters' text (or None for NULL), by name.
        prepared: The names of the statements prepared on ``conn`` (updated here).

    Returns:
        The statement's result (``TUPLES_OK`` or ``COMMAND_OK``).

    Raises:
        psycopg.Error: The server refused it, or the connection failed (as a cursor would).
    """
    parameters = statement.parameters(arguments)
    try:
        return _run(conn, statement, parameters, prepared)
    except errors.InvalidSqlStatementName:
        prepared.discard(statement.name)  # deallocated behind the store's back
        return _run(conn, statement, parameters, prepared)


def _run(
    conn: Connection,
    statement: Statement,
    parameters: list[bytes | None],
    prepared: set[bytes],
) -> psycopg.pq.abc.PGresult:
    pgconn = conn.pgconn
    with conn.lock:
        if statement.name not in prepared:
            pgconn.send_prepare(statement.name, statement.query, param_types=statement.types)
            _checked(conn.wait(execute(pgconn)))
            prepared.add(statement.name)
        pgconn.send_query_prepared(statement.name, parameters)
        return _checked(conn.wait(execute(pgconn)))


def _checked(results: list[psycopg.pq.abc.PGresult]) -> psycopg.pq.abc.PGresult:
    """The one result of a statement, or the error it reports raised."""
    for result in results:
        if result.status == ExecStatus.FATAL_ERROR:
            raise errors.error_from_result(result, encoding="utf-8")
    (result,) = results
    if result.status not in (ExecStatus.TUPLES_OK, ExecStatus.COMMAND_OK):
        raise psycopg.InterfaceError(f"unexpected result status {result.status!r}")
    return result
