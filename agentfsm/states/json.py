"""`JSONValue`: the type of anything that crosses a boundary as JSON."""

from __future__ import annotations

from typing_extensions import TypeAliasType

JSONValue = TypeAliasType(
    "JSONValue",
    "str | int | float | bool | list[JSONValue] | dict[str, JSONValue] | None",
)
"""A JSON document: null, a boolean, a number, a string, an array or an object."""

JSONObject = dict[str, JSONValue]
"""A JSON object."""
