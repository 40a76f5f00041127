"""`JSONValue`: the type of anything that crosses a boundary as JSON, and its check."""

from __future__ import annotations

import math
from collections.abc import Iterable

from pydantic import FiniteFloat
from typing_extensions import TypeAliasType

from agentfsm._checks import given

JSONValue = TypeAliasType(
    "JSONValue",
    "str | int | FiniteFloat | bool | list[JSONValue] | dict[str, JSONValue] | None",
)
"""A JSON document: null, a boolean, a number, a string, an array or an object.

Numbers are finite: JSON has no infinity or NaN, so they could not round-trip."""

JSONObject = dict[str, JSONValue]
"""A JSON object."""

JSON_VALUES = (
    "null, true or false, a finite number, a string, a list (or tuple) of JSON values, "
    "or a dict of JSON values with string keys"
)
"""What `json_problem` accepts, in words (for error messages)."""

_LEAVES = frozenset((str, int, bool, type(None)))


def json_problem(value: object, where: str) -> str | None:
    """What keeps ``value`` from being a JSON value, naming the place; None if nothing does.

    Accepted: ``None``, ``bool``, ``int``, finite ``float``, ``str`` (subclasses too, such as
    str enums, which JSON writes as their value), and lists, tuples and dicts of those with
    ``str`` keys, nested to any depth. JSON writes a tuple as an array. Anything else (NaN
    or infinity, a set, bytes, an arbitrary object, a dict key that is not a string) could
    not be written, or would come back as something else.

    Args:
        value: The value to check.
        where: How the answer names ``value`` itself, such as ``"argument 'calls'"``; a
            nested place is named from it (``argument 'calls'[2]``, ``argument 'm'['k']``).

    Returns:
        For the first offending place, depth first: ``"<place> is <repr>: <why>"``.

    Raises:
        RecursionError: ``value`` is nested deeper than the interpreter's recursion limit.
    """
    if type(value) in _LEAVES:
        return None
    if isinstance(value, (list, tuple)):
        return _items_problem(enumerate(value), where)
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                return f"{where} has the key {key!r}: a JSON object's keys are strings"
        return _items_problem(((repr(key), item) for key, item in value.items()), where)
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where} is {value!r}: a JSON number is finite"
    if isinstance(value, (str, int)):  # (subclasses: str and int enums)
        return None
    return f"{where} is {given(value)}: a JSON value is {JSON_VALUES}"


def _items_problem(items: Iterable[tuple[object, object]], where: str) -> str | None:
    """The first problem of an array's or object's items, each named ``where[index]``."""
    for index, item in items:
        if type(item) not in _LEAVES:
            problem = json_problem(item, f"{where}[{index}]")
            if problem is not None:
                return problem
    return None
