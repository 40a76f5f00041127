"""A tool's arguments schema: generated once from its type hints, or given and checked.

A generated schema comes from a pydantic model built from the function's signature, so
`Annotated[..., Field(description=...)]`, pydantic model parameters, enums and defaults all
show in it, and the same model turns the validated JSON into the Python values the body
expects (an enum member, a model instance). An explicit schema is checked against the
metaschema of its draft when the tool is built, and its arguments reach the body as JSON.

A schema is judged by the draft its ``$schema`` names (draft-04, -06, -07, 2019-09 or
2020-12; MCP servers written in TypeScript declare draft-07), and by draft 2020-12 when it
names none.
"""

from __future__ import annotations

import copy
import inspect
import re
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, cast

from jsonschema import (  # type: ignore[import-untyped]  # no stubs
    Draft4Validator,
    Draft6Validator,
    Draft7Validator,
    Draft201909Validator,
    Draft202012Validator,
)
from jsonschema.exceptions import (  # type: ignore[import-untyped]  # no stubs
    SchemaError,
    best_match,
)
from pydantic import BaseModel, ConfigDict, Field, PydanticUserError, create_model
from pydantic.errors import PydanticSchemaGenerationError
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012, specification_with

from agentfsm.errors import ToolDefinitionError, ToolSchemaError
from agentfsm.states.json import JSONObject
from agentfsm.tools.context import ToolContext

_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Returns|Yields|Raises|Examples?|Notes?):\s*$",
    re.MULTILINE,
)
_EMPTY_OBJECT: JSONObject = {"type": "object", "properties": {}, "additionalProperties": False}


@dataclass(frozen=True, slots=True)
class Signature:
    """What a tool's schema step learned from its function (or its explicit schema)."""

    schema: JSONObject
    """The JSON Schema of the arguments object."""
    model: type[BaseModel] | None
    """Converts validated arguments to the body's values; None for an explicit schema."""
    fields: tuple[tuple[str, str], ...]
    """``(model attribute, parameter name)`` pairs, in signature order."""
    context_parameter: str | None
    """The parameter that receives the `ToolContext`, if the function declares one."""


def json_pointer(path: typing.Iterable[str | int]) -> str:
    """The RFC 6901 pointer of a path of keys and indexes (``''`` for the root)."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def is_context(hint: object) -> bool:
    """Whether a parameter annotated ``hint`` receives the `ToolContext`.

    ``ToolContext``, ``ToolContext[MyDeps]`` and either ``| None`` do (the latter so the
    function can still be called without one).
    """
    if hint is ToolContext or typing.get_origin(hint) is ToolContext:
        return True
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        bare = {typing.get_origin(arg) or arg for arg in args}
        return len(args) == 2 and bare == {ToolContext, type(None)}
    return False


def description_of(function: Callable[..., object]) -> str:
    """The docstring of ``function`` up to its first Google-style section (``Args:`` …)."""
    doc = inspect.getdoc(function) or ""
    return _SECTION.split(doc, maxsplit=1)[0].strip()


DRAFTS: dict[str, Any] = {
    "draft-04": Draft4Validator,
    "draft-06": Draft6Validator,
    "draft-07": Draft7Validator,
    "2019-09": Draft201909Validator,
    "2020-12": Draft202012Validator,
}
"""The drafts a schema may declare in ``$schema``, by name: jsonschema's validator of each."""

_DRAFT_URIS = {
    "http://json-schema.org/draft-04/schema": "draft-04",
    "http://json-schema.org/draft-06/schema": "draft-06",
    "http://json-schema.org/draft-07/schema": "draft-07",
    "https://json-schema.org/draft/2019-09/schema": "2019-09",
    "https://json-schema.org/draft/2020-12/schema": "2020-12",
}


def draft_of(schema: JSONObject) -> str | None:
    """The name of the draft ``schema`` is judged by (a key of `DRAFTS`); None if unknown.

    A schema without ``$schema`` is draft 2020-12. The URI may end in ``#`` and use http or
    https.
    """
    uri = schema.get("$schema")
    if uri is None:
        return "2020-12"
    if not isinstance(uri, str):
        return None
    bare = uri.rstrip("#")
    for known, name in _DRAFT_URIS.items():
        if bare in (known, known.replace("http://", "https://"), known.replace("https", "http")):
            return name
    return None


def unknown_draft(schema: JSONObject) -> str:
    """What to tell about a ``$schema`` that names no draft agentfsm knows."""
    return (
        f"$schema {schema.get('$schema')!r} names no JSON Schema draft agentfsm judges; "
        f"use one of {sorted(_DRAFT_URIS)!r} (or leave it out for draft 2020-12)"
    )


def validator_class(schema: JSONObject) -> Any:
    """The jsonschema validator class for the draft ``schema`` declares (2020-12 if none).

    Raises:
        ValueError: Its ``$schema`` names no known draft (the message says which are).
    """
    name = draft_of(schema)
    if name is None:
        raise ValueError(unknown_draft(schema))
    return DRAFTS[name]


def compile_validator(schema: JSONObject) -> Draft202012Validator:
    """A validator for ``schema`` (of its draft), built once and reused for every call."""
    return validator_class(schema)(copy.deepcopy(schema))


def schema_error(validator: Draft202012Validator, instance: JSONObject) -> tuple[str, str] | None:
    """``(JSON pointer, message)`` of the error to report for ``instance``; None if valid.

    A valid instance costs one pass, as ``is_valid`` would. For an invalid one the error
    reported is jsonschema's `best_match`: the most specific one, so that a value failing
    an ``anyOf`` is pointed at inside it (``/tags/1``, not ``/tags``).
    """
    if next(iter(validator.iter_errors(instance)), None) is None:
        return None
    error = best_match(validator.iter_errors(instance))
    return json_pointer(error.absolute_path), cast(str, error.message)


def explicit_signature(
    tool_name: str, schema: JSONObject, function: Callable[..., object] | None
) -> Signature:
    """Check a user-given schema against its draft's metaschema and against the function."""
    if draft_of(schema) is None:
        raise ToolSchemaError(tool_name, "/$schema", unknown_draft(schema))
    try:
        validator_class(schema).check_schema(schema)
    except SchemaError as error:
        raise ToolSchemaError(
            tool_name, json_pointer(error.absolute_path), cast(str, error.message)
        ) from None
    _check_references(tool_name, schema)
    if schema.get("type") != "object":
        raise ToolSchemaError(
            tool_name,
            "/type",
            f"the arguments are an object, so 'type' must be 'object', not {schema.get('type')!r}",
        )
    context_parameter = None
    if function is not None:
        context_parameter = _check_parameters_match(tool_name, schema, function)
    return Signature(copy.deepcopy(schema), None, (), context_parameter)


def _references(value: object, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str, str]]:
    """Every ``$ref`` / ``$dynamicRef`` in a schema: ``(JSON pointer, reference)``."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("$ref", "$dynamicRef") and isinstance(item, str):
                yield json_pointer((*path, key)), item
            else:
                yield from _references(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _references(item, (*path, index))


def _check_references(tool_name: str, schema: JSONObject) -> None:
    """Refuse a reference that leads nowhere: its first call would fail inside the check.

    Only references within the schema resolve (nothing is fetched from the network).
    """
    name = draft_of(schema) or "2020-12"
    uri = next(uri for uri, known in _DRAFT_URIS.items() if known == name)
    resource = specification_with(uri, default=DRAFT202012).create_resource(schema)
    resolver = Registry().with_resource(resource.id() or "", resource).resolver()
    for pointer, reference in _references(schema):
        try:
            resolver.lookup(reference)
        except Unresolvable as exc:
            raise ToolSchemaError(
                tool_name,
                pointer,
                f"the reference {reference!r} leads nowhere in the schema ({exc}); a $ref "
                "must point into the schema itself, e.g. '#/$defs/Name'",
            ) from None


def _check_parameters_match(
    tool_name: str, schema: JSONObject, function: Callable[..., object]
) -> str | None:
    parameters = inspect.signature(function).parameters
    hints = _hints(tool_name, function)
    context = next((name for name in parameters if is_context(hints.get(name))), None)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return context
    properties = schema.get("properties")
    names = sorted(properties) if isinstance(properties, dict) else []
    missing = [name for name in names if name not in parameters or name == context]
    if missing:
        raise ToolDefinitionError(
            tool_name,
            f"its schema has properties {missing!r} that the function does not accept; "
            f"its parameters are {[n for n in parameters if n != context]!r}",
        )
    return context


def empty_signature() -> Signature:
    """The signature of a client-side tool declared without a function or a schema."""
    return Signature(copy.deepcopy(_EMPTY_OBJECT), None, (), None)


def generated_signature(tool_name: str, function: Callable[..., object]) -> Signature:
    """Build the arguments model and schema of ``function`` from its type hints."""
    hints = _hints(tool_name, function)
    definitions: dict[str, object] = {}
    fields: list[tuple[str, str]] = []
    context_parameter = None
    for index, parameter in enumerate(inspect.signature(function).parameters.values()):
        name = parameter.name
        hint = hints.get(name, parameter.annotation)
        if is_context(hint):
            context_parameter = name
            continue
        _check_parameter(tool_name, parameter)
        if hint is inspect.Parameter.empty:
            raise ToolDefinitionError(
                tool_name, f"parameter {name!r} has no type annotation; annotate it"
            )
        # The model's attributes are positional names and the parameter names are aliases,
        # so a parameter may be called ``json`` or ``model_x`` without clashing with
        # BaseModel's own attributes.
        attribute = f"p{index}"
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        definitions[attribute] = (Annotated[hint, Field(alias=name)], default)
        fields.append((attribute, name))
    model = _build_model(tool_name, definitions)
    return Signature(_schema_of(tool_name, model), model, tuple(fields), context_parameter)


def _check_parameter(tool_name: str, parameter: inspect.Parameter) -> None:
    if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
        raise ToolDefinitionError(
            tool_name,
            f"parameter {parameter.name!r} is variadic; without an explicit schema a tool's "
            "parameters must be named (give parameters=... to accept **kwargs)",
        )
    if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
        raise ToolDefinitionError(
            tool_name,
            f"parameter {parameter.name!r} is positional-only; arguments arrive by name",
        )


def _hints(tool_name: str, function: Callable[..., object]) -> dict[str, object]:
    target = function if inspect.isroutine(function) else type(function).__call__
    try:
        return typing.get_type_hints(target, include_extras=True)
    except (NameError, TypeError) as exc:
        raise ToolDefinitionError(
            tool_name,
            f"its type hints cannot be resolved ({exc}); define the types they name at "
            "module level",
        ) from exc


def _build_model(tool_name: str, definitions: dict[str, object]) -> type[BaseModel]:
    try:
        return create_model(  # type: ignore[call-overload, no-any-return]  # dynamic fields
            f"{tool_name}_arguments",
            __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
            **definitions,
        )
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError) as exc:
        raise ToolDefinitionError(
            tool_name, f"its parameters cannot be described as JSON: {exc}"
        ) from exc


def _schema_of(tool_name: str, model: type[BaseModel]) -> JSONObject:
    try:
        schema = cast(JSONObject, model.model_json_schema(by_alias=True))
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError) as exc:
        raise ToolDefinitionError(
            tool_name, f"its parameters cannot be described as JSON Schema: {exc}"
        ) from exc
    schema.pop("title", None)
    schema.setdefault("properties", {})
    return schema
