"""From a call's argument text to the keyword arguments of its body, or a clear refusal.

The checks run cheapest first: size, JSON syntax, object-ness, nesting depth, the tool's
compiled JSON Schema validator, and (for a generated schema) the pydantic model that turns
the JSON into the values the body's annotations ask for. Each failure raises
`ToolArgumentsError` with the JSON pointer of the offending value.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from pydantic import ValidationError

from agentfsm.errors import ToolArgumentsError
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.tools.accelerator import ArgumentsValidator
from agentfsm.tools.schema import Signature, json_pointer


@dataclass(frozen=True, slots=True)
class ArgumentLimits:
    """Bounds on a call's arguments, checked before they are parsed any further.

    They protect the process from a model (or an attacker steering it) that sends huge or
    pathologically nested JSON: such arguments are refused, not crashed on.
    """

    max_chars: int = 100_000
    """The longest argument text accepted, in characters."""
    max_depth: int = 32
    """The deepest nesting of objects and arrays accepted (the arguments object is 1)."""


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


# Python's json accepts NaN and Infinity, which are not JSON; refuse them while parsing.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_SCAN: Callable[[str, int], tuple[JSONValue, int]] = _DECODER.scan_once  # type: ignore[attr-defined]


def decode_json(text: str) -> JSONValue:
    """``text`` parsed as the arguments' JSON: the value or the error of ``_DECODER.decode``.

    A text that is one object and nothing around it (what models send) goes to the scanner
    directly, skipping the two whitespace matches of ``decode``: about half of its cost.
    Anything else, and any failure, goes through ``decode``, whose value or error stands (a
    property test pins the two equal).
    """
    if text[:1] == "{" and text[-1:] == "}":
        try:
            value, end = _SCAN(text, 0)
        except (StopIteration, ValueError, RecursionError):
            pass  # decode raises its own error, with its own words
        else:
            if end == len(text):
                return value
    decoded: JSONValue = _DECODER.decode(text)
    return decoded


def _plain_object(text: str, limits: ArgumentLimits) -> JSONObject | None:
    """The arguments, when ``text`` is what models send: one object, within the limits.

    That is a text from ``{`` to ``}``, no longer than ``limits.max_chars``, with fewer
    brackets than ``limits.max_depth`` (so it cannot nest deeper), that the scanner reads
    to its end: the value `ArgumentParser`'s checks one by one would give (a property test
    pins them equal). None for anything else, which those checks then judge. A text of at
    most ``2 * max_depth + 1`` characters is not counted: JSON nested ``max_depth + 1``
    deep takes at least ``2 * max_depth + 2`` (a bracket to open and one to close each
    level).
    """
    size = len(text)
    if (
        text[:1] != "{"
        or text[-1:] != "}"
        or size > limits.max_chars
        or (
            size > 2 * limits.max_depth + 1
            and text.count("{") + text.count("[") > limits.max_depth
        )
    ):
        return None
    try:
        value, end = _SCAN(text, 0)
    except (StopIteration, ValueError, RecursionError):
        return None
    return value if end == size else None  # type: ignore[return-value]  # from "{"


def _depth_exceeds(value: JSONValue, limit: int) -> bool:
    # Iterative, so that the check itself cannot hit the recursion limit.
    stack: list[tuple[JSONValue, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: list[JSONValue] = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


class ArgumentParser:
    """The argument checks of one tool, with its JSON Schema validator compiled once.

    Args:
        tool_name: The tool's name, for error messages.
        signature: The tool's schema and, for a generated one, its arguments model.
    """

    __slots__ = ("_accepts", "_expected", "_signature", "_tool_name", "_validator")

    def __init__(self, tool_name: str, signature: Signature) -> None:
        self._tool_name = tool_name
        self._signature = signature
        self._validator = ArgumentsValidator(tool_name, signature.schema)
        self._expected = _expected_properties(signature.schema)
        fast = self._validator._fast  # (this module's own validator: read once, here)
        self._accepts: Callable[[object], bool] | None = None if fast is None else fast.is_valid
        """jsonschema-rs's verdict on valid arguments, for `plain` (None: not accelerated)."""

    @property
    def validator(self) -> ArgumentsValidator:
        """The tool's schema validator (its ``engine`` says which validator judges)."""
        return self._validator

    def plain(self, text: str, limits: ArgumentLimits) -> dict[str, object] | None:
        """`parse`'s keyword arguments for the usual call, in one step; None for any other.

        The usual call is a tool with an explicit schema (no arguments model) and a text
        `_plain_object` takes (one object, within ``limits``) that the schema accepts. For
        anything else (a refusal included) this says None and `parse` judges: it gives the
        same arguments for every text this takes (a property test pins them equal).
        """
        if self._signature.model is not None:
            return None
        # `_plain_object`, inlined: this runs for every call of a run.
        size = len(text)
        if (
            text[:1] != "{"
            or text[-1:] != "}"
            or size > limits.max_chars
            or (
                size > 2 * limits.max_depth + 1
                and text.count("{") + text.count("[") > limits.max_depth
            )
        ):
            return None
        try:
            value, end = _SCAN(text, 0)
            accepts = self._accepts
            if end != size or (accepts is not None and not accepts(value)):
                return None  # (refused by jsonschema-rs: `parse` asks jsonschema)
            if accepts is None and self._validator.error(value) is not None:  # type: ignore[arg-type]  # from "{"
                return None
        except Exception:  # unreadable, or a validator that raises: `parse` says why
            return None
        return value  # type: ignore[return-value]  # from "{"

    def valid(self, text: str, limits: ArgumentLimits) -> bool:
        """Whether `parse` would take ``text``.

        The `ToolSystem` asks before it asks for a decision: a call that cannot validate is
        refused, not asked about.
        """
        try:
            self.parse("", text, limits)
        except ToolArgumentsError:
            return False
        return True

    def parse(self, call_id: str, text: str, limits: ArgumentLimits) -> dict[str, object]:
        """The keyword arguments for the body (without the context), or raise.

        An empty or blank text counts as ``{}``: some model servers send it for a call
        without arguments.

        Raises:
            ToolArgumentsError: Why the arguments were refused, and what is expected.
        """
        arguments = _plain_object(text, limits)
        if arguments is None:  # anything unusual, or refused: checked step by step
            arguments = self._object(call_id, text, limits)
        try:
            # jsonschema-rs's yes ends it; anything else is jsonschema's verdict (the
            # differential test pins the two together)
            problem = self._validator.error(arguments)
        except Exception as exc:
            self._unchecked(call_id, exc)
        if problem is not None:
            pointer, message = problem
            self._refuse(call_id, pointer, f"{message}; {self._expected}")
        if self._signature.model is None:
            # Just decoded from the text, so nobody else holds it: no copy. (Not `cast`: a
            # call, on the hot path.)
            return arguments  # type: ignore[return-value]
        try:
            return self._convert(call_id, arguments)
        except ToolArgumentsError:
            raise
        except Exception as exc:
            self._unchecked(call_id, exc)

    def _unchecked(self, call_id: str, exc: Exception) -> NoReturn:
        # Whatever the schema or the arguments model does (a reference that fails, a
        # validator of the user's that raises), the call gets an error result: the round
        # goes on and the run is never stranded.
        self._refuse(call_id, "", f"they could not be checked ({type(exc).__name__}: {exc})")

    def _object(self, call_id: str, text: str, limits: ArgumentLimits) -> JSONObject:
        """The arguments as a JSON object, each check in turn: or the refusal of the first."""
        if len(text) > limits.max_chars:
            self._refuse(
                call_id,
                "",
                f"they are {len(text)} characters long; at most {limits.max_chars} are accepted",
            )
        blank = not text or text.isspace()
        arguments = self._decode(call_id, "{}" if blank else text, limits)
        if not isinstance(arguments, dict):
            self._refuse(
                call_id,
                "",
                f"they must be a JSON object, not a JSON {_json_type(arguments)}; "
                f"{self._expected}",
            )
        return arguments

    def _decode(self, call_id: str, text: str, limits: ArgumentLimits) -> JSONValue:
        try:
            value = decode_json(text)
        except RecursionError:
            self._refuse(call_id, "", f"they are nested deeper than {limits.max_depth} levels")
        except ValueError as exc:
            self._refuse(call_id, "", f"they are not valid JSON ({exc}); send a JSON object")
        # Counting brackets is far cheaper than walking the value, and bounds its depth.
        if text.count("{") + text.count("[") > limits.max_depth and _depth_exceeds(
            value, limits.max_depth
        ):
            self._refuse(call_id, "", f"they are nested deeper than {limits.max_depth} levels")
        return value

    def _convert(self, call_id: str, arguments: JSONObject) -> dict[str, object]:
        model = self._signature.model
        assert model is not None  # (the caller checked)
        try:
            instance = model.model_validate(arguments)
        except ValidationError as exc:
            error = exc.errors()[0]
            self._refuse(call_id, json_pointer(error["loc"]), f"{error['msg']}; {self._expected}")
        return {name: getattr(instance, attribute) for attribute, name in self._signature.fields}

    def _refuse(self, call_id: str, pointer: str, detail: str) -> NoReturn:
        raise ToolArgumentsError(self._tool_name, call_id, pointer, detail)


def _json_type(value: JSONValue) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


def _expected_properties(schema: JSONObject) -> str:
    properties = schema.get("properties")
    names = list(properties) if isinstance(properties, dict) else []
    required = schema.get("required")
    required_names = (
        {n for n in required if isinstance(n, str)} if isinstance(required, list) else set()
    )
    if not names:
        return "the tool takes an object with no declared properties"
    described = ", ".join(
        f"{name!r} (required)" if name in required_names else repr(name) for name in names
    )
    return f"the tool takes an object with properties {described}"
