"""The ``fast`` extra: jsonschema-rs agrees with jsonschema on every verdict it gives.

A differential property test: schemas of the kinds ``@tool`` writes (pydantic's, from type
hints) and hand-written draft 2020-12 schemas, each with instances valid by construction
and instances that are mostly not (any JSON value, or a valid one with a part changed). For
every schema the accelerator is used for, jsonschema-rs and jsonschema give the same verdict;
a schema with a keyword they may judge differently falls back to jsonschema and says so once.
"""

from __future__ import annotations

import enum
import json
import logging
from typing import Annotated, Any, Literal

import jsonschema_rs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field

from agentfsm import Agent, ModelResponse, ScriptedModel, ToolCall, tool
from agentfsm.llm.base import FinishReason
from agentfsm.tools.accelerator import ArgumentsValidator, disagreement
from agentfsm.tools.schema import DRAFTS, draft_of, generated_signature

# ---- values and instances ----------------------------------------------------------------

small_ints = st.integers(-3, 6)
numbers = small_ints | st.sampled_from([0.5, -1.5, 2.0, 3.25, 1e300, 2**64, -(2**70)])
strings = st.text(alphabet="ab😀 ", max_size=4)
scalars = st.none() | st.booleans() | numbers | strings
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "c", "x"]), inner, max_size=3)
    ),
    max_leaves=8,
)


def mutated(value: Any) -> st.SearchStrategy[Any]:
    """``value`` with one part replaced by any JSON value, or dropped (mostly invalid)."""
    if isinstance(value, dict) and value:
        key = st.sampled_from(sorted(value))
        return st.one_of(
            st.builds(lambda k, v: {**value, k: v}, key, json_values),
            key.map(lambda k: {n: v for n, v in value.items() if n != k}),
            json_values.map(lambda v: {**value, "extra": v}),
        )
    if isinstance(value, list) and value:
        return st.builds(
            lambda i, v: [*value[:i], v, *value[i + 1 :]],
            st.integers(0, len(value) - 1),
            json_values,
        )
    return json_values


RS_CLASSES = {
    "draft-04": jsonschema_rs.Draft4Validator,
    "draft-06": jsonschema_rs.Draft6Validator,
    "draft-07": jsonschema_rs.Draft7Validator,
    "2019-09": jsonschema_rs.Draft201909Validator,
    "2020-12": jsonschema_rs.Draft202012Validator,
}


def verdicts_agree(schema: dict[str, Any], instance: Any) -> None:
    """The accelerated verdict is jsonschema's (both ways), and so is the reported error.

    Each validator is of the draft the schema declares (2020-12 if none).
    """
    draft = draft_of(schema)
    assert draft is not None
    reference = DRAFTS[draft](schema)
    expected = reference.is_valid(instance)
    try:
        fast = RS_CLASSES[draft](schema, validate_formats=False).is_valid(instance)
    except (ValueError, TypeError, OverflowError):
        fast = None  # jsonschema-rs cannot read it: the validator asks jsonschema
    if fast is not None:
        assert fast == expected, (schema, instance)
    if isinstance(instance, dict):
        validator = ArgumentsValidator("t", schema)
        assert validator.engine == "jsonschema-rs"
        assert (validator.error(instance) is None) == expected


# ---- hand-written draft 2020-12 schemas, with a valid instance each -------------------------


def _string() -> st.SearchStrategy[tuple[dict[str, Any], st.SearchStrategy[Any]]]:
    def build(low: int, extra: int, fmt: str | None) -> tuple[dict[str, Any], Any]:
        schema: dict[str, Any] = {"type": "string", "minLength": low, "maxLength": low + extra}
        if fmt is not None:
            schema["format"] = fmt  # an annotation for both validators
        return schema, st.text(alphabet="ab😀", min_size=low, max_size=low + extra)

    return st.builds(build, st.integers(0, 2), st.integers(0, 2), st.none() | st.just("email"))


def _integer() -> st.SearchStrategy[tuple[dict[str, Any], st.SearchStrategy[Any]]]:
    def build(low: int, span: int, step: int | None, exclusive: bool) -> tuple[Any, Any]:
        schema: dict[str, Any] = {"type": "integer", "minimum": low, "maximum": low + span}
        values = st.integers(low, low + span)
        if exclusive:
            schema = {"type": "integer", "exclusiveMinimum": low - 1, "maximum": low + span}
        if step is not None:
            schema["multipleOf"] = step
            values = values.filter(lambda v: v % step == 0) | st.just(0).filter(
                lambda v: low <= v <= low + span
            )
        return schema, values

    return st.builds(
        build, small_ints, st.integers(0, 6), st.none() | st.integers(1, 3), st.booleans()
    )


def _number() -> st.SearchStrategy[tuple[dict[str, Any], st.SearchStrategy[Any]]]:
    def build(low: float, span: float) -> tuple[Any, Any]:
        schema = {"type": "number", "minimum": low, "exclusiveMaximum": low + span}
        values = st.floats(low, low + span, exclude_max=True, allow_nan=False)
        return schema, values

    return st.builds(build, st.sampled_from([-1.5, 0, 0.5, 2]), st.sampled_from([0.5, 1, 4]))


def _constant() -> st.SearchStrategy[tuple[dict[str, Any], st.SearchStrategy[Any]]]:
    enums = st.lists(scalars, min_size=1, max_size=3).map(
        lambda values: ({"enum": values}, st.sampled_from(values))
    )
    consts = scalars.map(lambda value: ({"const": value}, st.just(value)))
    plain = st.sampled_from(
        [
            ({"type": "boolean"}, st.booleans()),
            ({"type": "null"}, st.none()),
            ({}, json_values),
            ({"type": ["string", "null"]}, st.none() | strings),
        ]
    )
    return enums | consts | plain


def _compound(
    inner: st.SearchStrategy[tuple[dict[str, Any], st.SearchStrategy[Any]]],
) -> st.SearchStrategy[tuple[dict[str, Any], st.SearchStrategy[Any]]]:
    def obj(fields: list[tuple[dict[str, Any], Any]], required: int, closed: bool) -> Any:
        names = ["a", "b", "c"][: len(fields)]
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {n: s for n, (s, _) in zip(names, fields, strict=False)},
            "required": names[:required],
        }
        if closed:
            schema["additionalProperties"] = False
        values = st.fixed_dictionaries(
            {n: v for n, (_, v) in zip(names[:required], fields, strict=False)},
            optional={
                n: v for n, (_, v) in zip(names[required:], fields[required:], strict=False)
            },
        )
        return schema, values

    def array(item: tuple[dict[str, Any], Any], low: int, unique: bool) -> Any:
        schema = {"type": "array", "items": item[0], "minItems": low, "maxItems": low + 2}
        if unique:
            schema["uniqueItems"] = True
        values = st.lists(item[1], min_size=low, max_size=low + 2)
        if unique:
            values = values.filter(lambda v: Draft202012Validator(schema).is_valid(v))
        return schema, values

    def any_of(options: list[tuple[dict[str, Any], Any]]) -> Any:
        return {"anyOf": [s for s, _ in options]}, st.one_of([v for _, v in options])

    def tupled(items: list[tuple[dict[str, Any], Any]]) -> Any:
        schema = {"type": "array", "prefixItems": [s for s, _ in items], "items": False}
        return schema, st.tuples(*(v for _, v in items)).map(list)

    return st.one_of(
        st.builds(obj, st.lists(inner, max_size=3), st.integers(0, 3), st.booleans()),
        st.builds(array, inner, st.integers(0, 2), st.booleans()),
        st.lists(inner, min_size=1, max_size=3).map(any_of),
        st.lists(inner, min_size=1, max_size=3).map(tupled),
    )


schemas_with_values = st.recursive(
    _string() | _integer() | _number() | _constant(), _compound, max_leaves=6
)


@st.composite
def hand_written(draw: st.DrawFn) -> tuple[dict[str, Any], Any, bool]:
    """A hand-written schema, an instance, and whether it was built to be valid."""
    schema, values = draw(schemas_with_values)
    if draw(st.booleans()):  # the same schema, through a reference
        schema = {"$defs": {"Item": schema}, "$ref": "#/$defs/Item"}
    valid = draw(values)
    if draw(st.booleans()):
        return schema, valid, True
    return schema, draw(mutated(valid)), False


@given(hand_written())
def test_the_validators_agree_on_hand_written_schemas(case: tuple[Any, Any, bool]) -> None:
    schema, instance, built_valid = case
    assert disagreement(schema) is None
    if built_valid:
        assert Draft202012Validator(schema).is_valid(instance)
    verdicts_agree(schema, instance)
    if "$ref" not in json.dumps(schema):  # (a reference points from the root)
        verdicts_agree({"type": "object", "properties": {"x": schema}}, {"x": instance})


# ---- the same schemas, written in the older drafts -----------------------------------------

DRAFT_URIS = {
    "draft-04": "http://json-schema.org/draft-04/schema#",
    "draft-06": "http://json-schema.org/draft-06/schema#",
    "draft-07": "http://json-schema.org/draft-07/schema#",
    "2019-09": "https://json-schema.org/draft/2019-09/schema",
}


def in_draft(schema: Any, draft: str) -> Any:
    """``schema`` (draft 2020-12) said in ``draft``'s words: the same instances are valid."""
    if isinstance(schema, list):
        return [in_draft(item, draft) for item in schema]
    if not isinstance(schema, dict):
        return schema
    said = {key: in_draft(value, draft) for key, value in schema.items()}
    if "prefixItems" in said:  # the tuple form of the older drafts
        rest = said.pop("items", True)
        said["items"] = said.pop("prefixItems")
        said["additionalItems"] = rest
    if draft == "2019-09":
        return said
    if "$defs" in said:
        said["definitions"] = said.pop("$defs")
    if said.get("$ref", "").startswith("#/$defs/"):
        said["$ref"] = said["$ref"].replace("#/$defs/", "#/definitions/")
    return in_draft_04(said) if draft == "draft-04" else said


def in_draft_04(said: dict[str, Any]) -> dict[str, Any]:
    """A draft-06 schema said in draft-04's words (boolean exclusive bounds, no const)."""
    if "const" in said:
        said["enum"] = [said.pop("const")]
    if "enum" in said:  # draft-04 wants its values unique (1 and 1.0 are the same)
        unique: list[Any] = []
        for value in said["enum"]:
            if Draft202012Validator({"uniqueItems": True}).is_valid([*unique, value]):
                unique.append(value)
        said["enum"] = unique
    if said.get("required") == []:  # draft-04 wants at least one name
        del said["required"]
    for exclusive, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if exclusive in said:
            said[bound] = said.pop(exclusive)
            said[exclusive] = True
    return said


@st.composite
def in_older_drafts(draw: st.DrawFn) -> tuple[dict[str, Any], Any, bool]:
    """A hand-written schema in an older draft (with ``dependencies`` in 04/06/07)."""
    schema, instance, built_valid = draw(hand_written())
    draft = draw(st.sampled_from(sorted(DRAFT_URIS)))
    said = in_draft(schema, draft)
    if draft != "2019-09" and "$ref" not in json.dumps(said) and draw(st.booleans()):
        said = {
            "type": "object",
            "properties": {"x": said, "y": {"type": "integer"}, "z": {}},
            "dependencies": {"x": ["y"], "z": {"required": ["x"]}},
        }
        instance = draw(
            st.fixed_dictionaries({}, optional={"x": st.just(instance), "y": small_ints})
            | mutated({"x": instance, "y": 1, "z": None})
        )
        built_valid = False
    return {"$schema": DRAFT_URIS[draft], **said}, instance, built_valid


@given(in_older_drafts())
def test_the_validators_agree_on_schemas_of_the_older_drafts(case: tuple[Any, Any, bool]) -> None:
    schema, instance, built_valid = case
    DRAFTS[draft_of(schema)].check_schema(schema)  # a schema of its draft
    assert disagreement(schema) is None, schema
    if built_valid:
        assert DRAFTS[draft_of(schema)](schema).is_valid(instance)
    verdicts_agree(schema, instance)


def test_a_draft_07_tuple_and_its_dependencies_are_judged_as_draft_07() -> None:
    schema = {
        "$schema": DRAFT_URIS["draft-07"],
        "type": "object",
        "properties": {"p": {"items": [{"type": "integer"}], "additionalItems": False}},
        "dependencies": {"a": ["b"]},
    }
    validator = ArgumentsValidator("t", schema)

    assert validator.engine == "jsonschema-rs"
    assert validator.error({"p": [1]}) is None
    assert validator.error({"p": [1, 2]}) == (
        "/p",
        "Additional items are not allowed (2 was unexpected)",
    )
    assert validator.error({"a": 1}) == ("", "'b' is a dependency of 'a'")


# ---- the schemas @tool writes -----------------------------------------------------------


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    y: float = 0.0


def search(
    query: Annotated[str, Field(min_length=1, max_length=5)],
    limit: Annotated[int, Field(ge=1, le=50)] = 10,
    exact: bool = False,
) -> str:
    """Search."""
    return query


def paint(colour: Colour, points: list[Point], mode: Literal["fill", "line"] = "fill") -> str:
    """Paint."""
    return mode


def tag(tags: Annotated[list[str], Field(max_length=3)], note: str | None = None) -> str:
    """Tag."""
    return ""


def scale(factor: Annotated[float, Field(gt=0, lt=10)], by: dict[str, int]) -> str:
    """Scale."""
    return ""


TOOL_VALUES: dict[str, tuple[Any, st.SearchStrategy[dict[str, Any]]]] = {
    "search": (
        search,
        st.fixed_dictionaries(
            {"query": st.text(alphabet="ab😀", min_size=1, max_size=5)},
            optional={"limit": st.integers(1, 50), "exact": st.booleans()},
        ),
    ),
    "paint": (
        paint,
        st.fixed_dictionaries(
            {
                "colour": st.sampled_from(["red", "blue"]),
                "points": st.lists(
                    st.fixed_dictionaries(
                        {"x": small_ints}, optional={"y": st.floats(-9, 9) | small_ints}
                    ),
                    max_size=2,
                ),
            },
            optional={"mode": st.sampled_from(["fill", "line"])},
        ),
    ),
    "tag": (
        tag,
        st.fixed_dictionaries(
            {"tags": st.lists(strings, max_size=3)}, optional={"note": st.none() | strings}
        ),
    ),
    "scale": (
        scale,
        st.fixed_dictionaries(
            {
                "factor": st.floats(0, 10, exclude_min=True, exclude_max=True),
                "by": st.dictionaries(strings, small_ints, max_size=2),
            }
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(TOOL_VALUES))
@given(data=st.data())
def test_the_validators_agree_on_the_schemas_tool_writes(name: str, data: st.DataObject) -> None:
    function, values = TOOL_VALUES[name]
    schema = generated_signature(name, function).schema
    assert disagreement(schema) is None
    valid = data.draw(values)
    assert Draft202012Validator(schema).is_valid(valid)
    verdicts_agree(schema, valid)
    verdicts_agree(schema, data.draw(mutated(valid)))


# ---- where they cannot agree: jsonschema alone, said once ----------------------------------

DISAGREEING = {
    "pattern": {"type": "object", "properties": {"code": {"type": "string", "pattern": r"^\d+$"}}},
    "fractional multipleOf": {"type": "object", "properties": {"n": {"multipleOf": 0.1}}},
    "dynamic reference": {"type": "object", "$dynamicRef": "#meta"},
    "unknown keyword": {"type": "object", "x-custom": True},
    "keyword the draft lacks": {"$schema": DRAFT_URIS["draft-07"], "dependentRequired": {}},
    "draft-07 $ref beside keywords": {
        "$schema": DRAFT_URIS["draft-07"],
        "definitions": {"n": {"type": "integer"}},
        "properties": {"a": {"$ref": "#/definitions/n", "maximum": 3}},
    },
}


@pytest.mark.parametrize("schema", DISAGREEING.values(), ids=list(DISAGREEING))
def test_a_schema_they_may_judge_differently_falls_back_to_jsonschema_and_says_so(
    schema: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="agentfsm.tools"):
        validator = ArgumentsValidator("lookup", schema)

    assert validator.engine == "jsonschema"
    assert validator.fallback is not None
    assert [r.getMessage() for r in caplog.records] == [
        "tool 'lookup': its arguments are validated with jsonschema only, not jsonschema-rs: "
        + validator.fallback
    ]


def test_the_cases_that_fall_back_are_real_disagreements() -> None:
    # Python's \d matches Arabic-Indic digits, ECMA-262's does not; 0.7 / 0.1 is not whole
    # in floating point, which jsonschema-rs rounds away.
    assert Draft202012Validator({"pattern": r"^\d+$"}).is_valid("١٢")
    assert not jsonschema_rs.Draft202012Validator({"pattern": r"^\d+$"}).is_valid("١٢")
    assert not Draft202012Validator({"multipleOf": 0.1}).is_valid(0.7)
    assert jsonschema_rs.Draft202012Validator({"multipleOf": 0.1}).is_valid(0.7)


def test_agentfsm_fast_0_turns_the_accelerator_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTFSM_FAST", "0")

    validator = ArgumentsValidator("t", {"type": "object"})

    assert (validator.engine, validator.fallback) == ("jsonschema", None)


def test_an_integer_beyond_64_bits_is_judged_by_jsonschema() -> None:
    validator = ArgumentsValidator("t", {"type": "object", "properties": {"n": {"maximum": 5}}})

    assert validator.engine == "jsonschema-rs"
    assert validator.error({"n": 2**80}) == ("/n", f"{2**80} is greater than the maximum of 5")
    assert validator.error({"n": -(2**80)}) is None


def test_an_accelerated_agent_refuses_what_jsonschema_refuses_with_its_words() -> None:
    @tool(parameters={"type": "object", "properties": {"n": {"type": "integer", "maximum": 3}}})
    def count(n: int) -> str:
        """Count."""
        return str(n)

    calls = (
        ToolCall(id="c1", name="count", arguments='{"n": 2}'),
        ToolCall(id="c2", name="count", arguments='{"n": 9}'),
    )
    model = ScriptedModel(
        [
            ModelResponse(tool_calls=calls, finish_reason=FinishReason.TOOL_CALLS),
            ModelResponse(content="done"),
        ]
    )
    agent = Agent(model, [count], ask_user=False)
    agent.start()
    agent.submit("count")

    assert count.arguments.validator.engine == "jsonschema-rs"
    answers = [m.content for m in agent.messages if m.role == "tool"]
    assert answers[0] == "2"
    assert answers[1] is not None
    assert "9 is greater than the maximum of 3" in answers[1]
