"""`JSONValue`: the type of anything that crosses a boundary as JSON."""

from __future__ import annotations

from pydantic import FiniteFloat
from typing_extensions import TypeAliasType

JSONValue = TypeAliasType(
    "JSONValue",
    "str | int | FiniteFloat | bool | list[JSONValue] | dict[str, JSONValue] | None",
)
"""A JSON document: null, a boolean, a number, a string, an array or an object.

Numbers are finite: JSON has no infinity or NaN, so they could not round-trip."""

JSONObject = dict[str, JSONValue]
"""A JSON object."""
