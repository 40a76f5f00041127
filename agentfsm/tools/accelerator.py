"""A tool's arguments validator: jsonschema, accelerated by jsonschema-rs where they agree.

jsonschema is the reference semantics. With the ``fast`` extra installed (``pip install
'agentfsm[fast]'``), each tool's schema is also compiled once with jsonschema-rs, which
gives the verdict on valid arguments in well under a microsecond instead of the 15 to 50 µs
jsonschema takes; arguments it refuses are judged again by jsonschema, whose verdict and
error message are the ones reported. So an accelerated tool refuses exactly what jsonschema
refuses, with the same words, as long as jsonschema-rs never accepts what jsonschema
refuses; a differential property test (tests/tools/test_accelerator.py) checks that the two
agree on every verdict for the schemas the accelerator is used for.

It is used only for schemas made of keywords both judge alike (`AGREEING` and the
subschema keywords). A schema with any other keyword (``pattern``, whose regular expressions
differ between Python and ECMA-262; ``multipleOf`` with a fraction, which they round
differently; ``$dynamicRef``; an unknown keyword…) is validated by jsonschema alone, and the
``agentfsm.tools`` logger says so once, when the tool is built. ``format`` is an annotation
for both (neither asserts formats by default). Set ``AGENTFSM_FAST=0`` to turn the
accelerator off for the tools built from then on.

Both judge a schema by the draft its ``$schema`` declares (draft-04, -06, -07, 2019-09,
2020-12; 2020-12 when it declares none): each draft's own keywords (draft-07's ``items`` as
an array, ``additionalItems``, ``dependencies``) are judged by both; a keyword the draft does
not have, or a draft-07 ``$ref`` beside validation keywords (which that draft ignores), is
left to jsonschema alone.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import Any

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]  # no stubs

from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.tools.schema import compile_validator, draft_of, schema_error

_rs: Any
try:  # the `fast` extra
    import jsonschema_rs as _rs
except ImportError:  # pragma: no cover - the dev extra installs it
    _rs = None

logger = logging.getLogger("agentfsm.tools")

AGREEING = frozenset(
    {
        "type",
        "enum",
        "const",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "maxItems",
        "minItems",
        "uniqueItems",
        "maxContains",
        "minContains",
        "maxProperties",
        "minProperties",
        "required",
        "dependentRequired",
        "format",
        # annotations: neither validator reads them
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
        "discriminator",  # pydantic's OpenAPI annotation on tagged unions
    }
)
"""Keywords without subschemas that jsonschema-rs and jsonschema judge alike."""

_SUBSCHEMA = frozenset(
    {
        "additionalProperties",
        "items",
        "contains",
        "not",
        "if",
        "then",
        "else",
        "propertyNames",
        "unevaluatedItems",
        "unevaluatedProperties",
        "additionalItems",
    }
)
_SUBSCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SUBSCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "dependentSchemas"})

_SINCE_06 = frozenset({"const", "contains", "propertyNames"})
_SINCE_07 = frozenset({"if", "then", "else"})
_SINCE_2019 = frozenset(
    {
        "dependentRequired",
        "dependentSchemas",
        "unevaluatedItems",
        "unevaluatedProperties",
        "maxContains",
        "minContains",
        "$defs",
    }
)
_MISSING: dict[str, frozenset[str]] = {
    "draft-04": _SINCE_06 | _SINCE_07 | _SINCE_2019 | {"prefixItems"},
    "draft-06": _SINCE_07 | _SINCE_2019 | {"prefixItems"},
    "draft-07": _SINCE_2019 | {"prefixItems"},
    "2019-09": frozenset({"prefixItems", "dependencies"}),
    "2020-12": frozenset({"additionalItems", "dependencies"}),
}
"""The keywords each draft does not have (its validator ignores them: left to jsonschema)."""
_LEGACY = frozenset({"draft-04", "draft-06", "draft-07"})
"""The drafts where ``$ref`` makes its sibling keywords ignored."""
_BESIDE_REF = frozenset({"$schema", "$comment", "title", "description", "definitions"})
"""What may stand beside a ``$ref`` in those drafts and change nothing."""


def accelerator_available() -> bool:
    """Whether jsonschema-rs is installed (the ``fast`` extra) and not turned off."""
    return _rs is not None and os.environ.get("AGENTFSM_FAST", "1") != "0"


def disagreement(schema: JSONValue) -> str | None:
    """The first keyword of ``schema`` the two validators may judge differently, or None.

    Args:
        schema: A JSON Schema, of the draft its ``$schema`` declares (2020-12 if none), or a
            part of one.

    Returns:
        A description of the keyword and where it is (``'pattern' at /properties/code``),
        or None when every keyword is one both judge alike.
    """
    draft = draft_of(schema) if isinstance(schema, dict) else "2020-12"
    if draft is None:
        return "'$schema' at /, which names no draft agentfsm knows"
    return next(_disagreements(schema, "", draft), None)


def _disagreements(schema: JSONValue, where: str, draft: str) -> Iterator[str]:
    if isinstance(schema, bool):
        return
    if not isinstance(schema, dict):
        yield f"a subschema that is not an object or a boolean at {where or '/'}"
        return
    if draft in _LEGACY and "$ref" in schema and not schema.keys() - {"$ref"} <= _BESIDE_REF:
        yield f"'$ref' beside other keywords at {where or '/'} (draft {draft} ignores them)"
        return
    missing = _MISSING[draft]
    for key, value in schema.items():
        children = _subschemas(key, value, f"{where}/{key}")
        if key in missing:
            yield f"{key!r} at {where or '/'}, which draft {draft} does not have"
        elif children is not None:
            for child, here in children:
                yield from _disagreements(child, here, draft)
        elif key == "$schema" and draft_of({key: value}) != draft:
            yield f"'$schema' at {where or '/'}, which differs from the root's"
        elif key != "$schema" and not _agrees(key, value):
            yield f"{key!r} at {where or '/'}"


def _subschemas(key: str, value: JSONValue, here: str) -> list[tuple[JSONValue, str]] | None:
    """The subschemas of keyword ``key`` with their paths; None if it has none."""
    if key == "items" and isinstance(value, list):  # the tuple form (before 2020-12)
        return [(item, f"{here}/{index}") for index, item in enumerate(value)]
    if key == "dependencies" and isinstance(value, dict):  # a schema, or names (required)
        return [
            (item, f"{here}/{name}")
            for name, item in value.items()
            if not (isinstance(item, list) and all(isinstance(n, str) for n in item))
        ]
    if key in _SUBSCHEMA:
        return [(value, here)]
    if key in _SUBSCHEMA_LISTS and isinstance(value, list):
        return [(item, f"{here}/{index}") for index, item in enumerate(value)]
    if key in _SUBSCHEMA_MAPS and isinstance(value, dict):
        return [(item, f"{here}/{name}") for name, item in value.items()]
    return None


def _agrees(key: str, value: JSONValue) -> bool:
    if key in AGREEING:
        return True
    if key == "$ref":
        return isinstance(value, str) and value.startswith("#")
    if key == "multipleOf":  # fractions are rounded differently
        return isinstance(value, int) and not isinstance(value, bool)
    return False


class ArgumentsValidator:
    """One tool's arguments validator, compiled once: jsonschema, and jsonschema-rs if it may.

    Args:
        tool_name: The tool's name, for the log line saying the accelerator is not used.
        schema: The arguments' JSON Schema (of its draft), already checked.
    """

    __slots__ = ("_fast", "_reference", "engine", "fallback")

    def __init__(self, tool_name: str, schema: JSONObject) -> None:
        self._reference = compile_validator(schema)
        self._fast: Any = None
        self.fallback: str | None = None
        """Why this tool does not use the accelerator though it is available (else None)."""
        if accelerator_available():
            where = disagreement(schema)
            if where is not None:
                self.fallback = f"its schema has {where}, which the two may judge differently"
            else:
                self._fast = _compile(schema)
                if self._fast is None:
                    self.fallback = "jsonschema-rs cannot compile its schema"
            if self.fallback is not None:
                logger.warning(
                    "tool %r: its arguments are validated with jsonschema only, not "
                    "jsonschema-rs: %s",
                    tool_name,
                    self.fallback,
                )
        self.engine = "jsonschema" if self._fast is None else "jsonschema-rs"
        """Which validator gives the verdict on valid arguments."""

    @property
    def reference(self) -> Draft202012Validator:
        """The jsonschema validator (the reference semantics), compiled once."""
        return self._reference

    def error(self, instance: JSONObject) -> tuple[str, str] | None:
        """``(JSON pointer, message)`` of the error to report for ``instance``; None if valid.

        jsonschema-rs accepts valid arguments; anything it refuses (or cannot read, such
        as an integer beyond 64 bits) is judged by jsonschema, whose verdict and message
        stand.
        """
        fast = self._fast
        if fast is not None:
            try:
                if fast.is_valid(instance):
                    return None
            except (ValueError, TypeError, OverflowError):
                pass  # jsonschema decides
        return schema_error(self._reference, instance)


_RS_CLASSES = {
    "draft-04": "Draft4Validator",
    "draft-06": "Draft6Validator",
    "draft-07": "Draft7Validator",
    "2019-09": "Draft201909Validator",
    "2020-12": "Draft202012Validator",
}
"""jsonschema-rs's validator of each draft, by name."""


def _compile(schema: JSONObject) -> Any:
    assert _rs is not None  # (checked by the caller)
    try:
        rs_class = getattr(_rs, _RS_CLASSES[draft_of(schema) or "2020-12"])
        return rs_class(schema, validate_formats=False)
    except Exception:  # any refusal means: not accelerated
        return None
