from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable
from typing import Annotated, Optional

import pytest
from pydantic import BaseModel, Field

from agentfsm.errors import InvalidToolNameError, ToolDefinitionError, ToolSchemaError
from agentfsm.states.json import JSONObject
from agentfsm.tools import Tool, ToolContext, ToolPolicy, ToolStatus, ToolSystem, tool
from tests.tools.spies import call


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Place(BaseModel):
    city: str
    country: str = "FR"


def weather(
    place: Place,
    unit: Unit = Unit.CELSIUS,
    days: Annotated[int, Field(description="How many days ahead", ge=1)] = 1,
    context: ToolContext | None = None,
) -> str:
    """Forecast the weather somewhere.

    Args:
        place: Where.
        unit: Which scale.
        days: How far ahead.
        context: The run.
    """
    assert context is not None
    return f"{place.city}/{place.country} {unit.value} {days} {context.call_id}"


def test_the_schema_is_generated_from_the_type_hints() -> None:
    declared = Tool(weather)

    assert declared.name == "weather"
    assert declared.description == "Forecast the weather somewhere."
    assert declared.parameters == {
        "$defs": {
            "Place": {
                "properties": {
                    "city": {"title": "City", "type": "string"},
                    "country": {"default": "FR", "title": "Country", "type": "string"},
                },
                "required": ["city"],
                "title": "Place",
                "type": "object",
            },
            "Unit": {"enum": ["celsius", "fahrenheit"], "title": "Unit", "type": "string"},
        },
        "additionalProperties": False,
        "properties": {
            "place": {"$ref": "#/$defs/Place"},
            "unit": {"$ref": "#/$defs/Unit", "default": "celsius"},
            "days": {
                "default": 1,
                "description": "How many days ahead",
                "minimum": 1,
                "title": "Days",
                "type": "integer",
            },
        },
        "required": ["place"],
        "type": "object",
    }
    assert declared.context_parameter == "context"


def test_the_body_receives_python_values_for_its_annotations() -> None:
    system = ToolSystem([weather])

    (result,) = system.run_round_sync(
        [call("c1", "weather", '{"place": {"city": "Lyon"}, "unit": "fahrenheit", "days": 2.0}')],
        ToolContext(run_id="r"),
    ).results

    assert (result.status, result.output) == (ToolStatus.SUCCESS, "Lyon/FR fahrenheit 2 c1")


def test_the_decorator_works_bare_and_with_options() -> None:
    @tool
    def bare(x: int) -> int:
        """Double."""
        return 2 * x

    @tool(name="renamed", policy=ToolPolicy.REQUIRE_APPROVAL, idempotent=True, timeout=2.5)
    async def configured(x: int) -> int:
        return x

    assert (bare.name, bare.description, bare.policy, bare.is_async) == (
        "bare",
        "Double.",
        ToolPolicy.ALLOW,
        False,
    )
    assert bare(21) == 42
    assert (configured.name, configured.policy, configured.idempotent, configured.timeout) == (
        "renamed",
        ToolPolicy.REQUIRE_APPROVAL,
        True,
        2.5,
    )
    assert configured.is_async
    assert configured.description == ""
    assert asyncio.run(configured(7)) == 7
    assert repr(configured) == (
        "Tool('renamed', policy='require_approval', idempotent=True, timeout=2.5)"
    )


def test_an_optional_or_plain_context_parameter_is_left_out_of_the_schema() -> None:
    def plain(text: str, ctx: ToolContext) -> str:
        return ctx.run_id + text

    def optional(text: str, ctx: Optional[ToolContext] = None) -> str:  # noqa: UP045 - old style on purpose
        return text

    for function in (plain, optional):
        declared = Tool(function)
        assert declared.context_parameter == "ctx"
        assert list(declared.parameters["properties"]) == ["text"]  # type: ignore[arg-type]


def test_parameters_may_share_names_with_pydantic_attributes() -> None:
    def clash(json: str, model_config: int, schema: bool = False) -> str:
        return f"{json} {model_config} {schema}"

    declared = Tool(clash)
    (result,) = (
        ToolSystem([declared])
        .run_round_sync(
            [call("c1", "clash", '{"json": "j", "model_config": 3}')], ToolContext(run_id="r")
        )
        .results
    )

    assert declared.parameters["required"] == ["json", "model_config"]
    assert result.output == "j 3 False"


def _lambda() -> Callable[[], int]:
    return lambda: 1


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("", ""),
        ("has space", "has space"),
        ("dotted.name", "dotted.name"),
        ("x" * 65, "x" * 65),
        ("émoji", "émoji"),
    ],
    ids=["empty", "space", "dot", "too-long", "non-ascii"],
)
def test_a_name_outside_the_api_pattern_is_refused(name: str, shown: str) -> None:
    with pytest.raises(InvalidToolNameError) as raised:
        Tool(weather, name=name)

    assert str(raised.value) == (
        f"tool {shown!r} cannot be declared: its name must match '^[a-zA-Z0-9_-]{{1,64}}$' "
        "(1 to 64 letters, digits, '_' or '-')"
    )
    assert raised.value.tool_name == shown


def test_a_lambdas_name_is_refused() -> None:
    with pytest.raises(InvalidToolNameError, match="'<lambda>' cannot be declared"):
        Tool(_lambda())


def test_a_64_character_name_is_accepted() -> None:
    assert Tool(weather, name="a-" * 32).name == "a-" * 32


def unannotated(city):  # type: ignore[no-untyped-def]
    return city


def variadic(*cities: str) -> str:
    return ",".join(cities)


def positional(city: str, /) -> str:
    return city


class Opaque:
    pass


def opaque(thing: Opaque) -> str:
    return "?"


@pytest.mark.parametrize(
    ("function", "options", "message"),
    [
        (
            unannotated,
            {},
            "tool 'unannotated' cannot be declared: parameter 'city' has no type annotation; "
            "annotate it",
        ),
        (
            variadic,
            {},
            "tool 'variadic' cannot be declared: parameter 'cities' is variadic; without an "
            "explicit schema a tool's parameters must be named (give parameters=... to accept "
            "**kwargs)",
        ),
        (
            positional,
            {},
            "tool 'positional' cannot be declared: parameter 'city' is positional-only; "
            "arguments arrive by name",
        ),
        (
            weather,
            {"timeout": 0},
            "tool 'weather' cannot be declared: timeout must be a number of seconds > 0 or "
            "None, not 0 (int)",
        ),
        (
            weather,
            {"retry_on": (KeyboardInterrupt,)},
            "tool 'weather' cannot be declared: retry_on may name only Exception subclasses, "
            "not <class 'KeyboardInterrupt'> (cancellation and interrupts are never retried)",
        ),
        (
            None,
            {"name": "server"},
            "tool 'server' cannot be declared: only a client-side tool may be declared "
            "without a function",
        ),
    ],
    ids=["unannotated", "variadic", "positional-only", "timeout", "retry-on", "no-function"],
)
def test_a_tool_declared_wrongly_is_refused_with_a_clear_error(
    function: Callable[..., object] | None, options: dict[str, object], message: str
) -> None:
    with pytest.raises(ToolDefinitionError) as raised:
        Tool(function, **options)  # type: ignore[arg-type]

    assert str(raised.value) == message


def test_a_type_with_no_json_form_is_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="its parameters cannot be described as JSON"):
        Tool(opaque)


SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    "required": ["city"],
}


def explicit_body(city: str, days: int = 1) -> str:
    return f"{city} {days}"


def test_an_explicit_schema_is_used_as_given_and_arguments_reach_the_body_as_json() -> None:
    declared = Tool(explicit_body, name="explicit", parameters=SCHEMA)
    system = ToolSystem([declared])

    results = system.run_round_sync(
        [call("c1", "explicit", '{"city": "Oslo"}'), call("c2", "explicit", '{"days": 2}')],
        ToolContext(run_id="r"),
    ).results

    assert declared.parameters == SCHEMA
    assert declared.parameters is not declared.parameters  # a copy each time
    assert results[0].output == "Oslo 1"
    assert results[1].status is ToolStatus.INVALID_ARGUMENTS


DRAFTS_RULE = (
    " (it must be a JSON Schema describing an object, of the draft its $schema names: "
    "draft-04, -06, -07, 2019-09 or 2020-12, the default)"
)


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            {"type": "object", "properties": {"city": {"type": "text"}}},
            "tool 'explicit' cannot be declared: its parameters schema is invalid at "
            "'/properties/city/type': 'text' is not valid under any of the given schemas"
            + DRAFTS_RULE,
        ),
        (
            {"type": "object", "required": "city"},
            "tool 'explicit' cannot be declared: its parameters schema is invalid at "
            "'/required': 'city' is not of type 'array'" + DRAFTS_RULE,
        ),
        (
            {"type": "array"},
            "tool 'explicit' cannot be declared: its parameters schema is invalid at '/type': "
            "the arguments are an object, so 'type' must be 'object', not 'array'" + DRAFTS_RULE,
        ),
        (
            {"$schema": "http://example.com/my-draft", "type": "object"},
            "tool 'explicit' cannot be declared: its parameters schema is invalid at "
            "'/$schema': $schema 'http://example.com/my-draft' names no JSON Schema draft "
            "agentfsm judges; use one of ['http://json-schema.org/draft-04/schema', "
            "'http://json-schema.org/draft-06/schema', 'http://json-schema.org/draft-07/schema', "
            "'https://json-schema.org/draft/2019-09/schema', "
            "'https://json-schema.org/draft/2020-12/schema'] (or leave it out for draft 2020-12)"
            + DRAFTS_RULE,
        ),
        (
            {"type": "object", "properties": {"town": {"type": "string"}}},
            "tool 'explicit' cannot be declared: its schema has properties ['town'] that the "
            "function does not accept; its parameters are ['city', 'days']",
        ),
    ],
    ids=[
        "bad-type-keyword",
        "required-not-a-list",
        "not-an-object",
        "unknown-draft",
        "unknown-parameter",
    ],
)
def test_an_explicit_schema_is_checked_when_the_tool_is_built(
    schema: JSONObject, message: str
) -> None:
    with pytest.raises(ToolDefinitionError) as raised:
        Tool(explicit_body, name="explicit", parameters=schema)

    assert str(raised.value) == message
    if isinstance(raised.value, ToolSchemaError):
        assert raised.value.pointer.startswith("/")


def test_a_client_side_tool_needs_no_function() -> None:
    picker = Tool(
        name="pick_file",
        description="Ask the user to pick a file.",
        client_side=True,
    )

    assert picker.parameters == {"type": "object", "properties": {}, "additionalProperties": False}
    assert picker.function is None
    with pytest.raises(ToolDefinitionError, match="it is client-side and has no function"):
        picker()


def test_a_client_side_tool_without_function_or_name_is_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="a tool without a function needs name"):
        Tool(client_side=True)


def test_an_explicit_schema_with_kwargs_accepts_any_property() -> None:
    def anything(**options: object) -> str:
        return ",".join(sorted(options))

    declared = Tool(anything, parameters={"type": "object"})
    (result,) = (
        ToolSystem([declared])
        .run_round_sync([call("c1", "anything", '{"b": 1, "a": 2}')], ToolContext(run_id="r"))
        .results
    )

    assert result.output == "a,b"


def unresolvable(city: Missing) -> str:  # type: ignore[name-defined]  # noqa: F821 - on purpose
    return "?"


def callback(on_done: Callable[[], int]) -> str:
    return "?"


@pytest.mark.parametrize(
    ("function", "fragment"),
    [
        (unresolvable, "its type hints cannot be resolved (name 'Missing' is not defined)"),
        (callback, "its parameters cannot be described as JSON Schema"),
    ],
    ids=["unresolvable-hint", "no-json-schema"],
)
def test_hints_that_cannot_become_a_schema_are_refused(
    function: Callable[..., object], fragment: str
) -> None:
    with pytest.raises(ToolDefinitionError) as raised:
        Tool(function)

    assert fragment in str(raised.value)


def test_a_tools_repr_shows_its_options() -> None:
    declared = Tool(explicit_body, name="remote", client_side=True, idempotent=True)

    assert repr(declared) == "Tool('remote', policy='allow', client_side=True, idempotent=True)"


@pytest.mark.parametrize("name", ["allow", "require_approval", "deny"])
def test_a_policy_may_be_given_by_its_value(name: str) -> None:
    @tool(policy=name)  # type: ignore[arg-type]  # a str, not the Literal: checked at run time
    def act() -> None:
        """Act."""

    assert act.policy is ToolPolicy(name)


def test_an_unknown_policy_name_is_refused_naming_it() -> None:
    allowed = "policy must be one of 'allow', 'require_approval', 'deny', not 'maybe'"
    with pytest.raises(ToolDefinitionError, match=allowed):

        @tool(policy="maybe")  # type: ignore[arg-type]
        def act() -> None:
            """Act."""
