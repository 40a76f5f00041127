from __future__ import annotations

import json
from collections.abc import Callable
from typing import NoReturn

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, field_validator

from agentfsm.errors import ToolArgumentsError
from agentfsm.tools import ArgumentLimits, Tool, accelerator
from agentfsm.tools.arguments import ArgumentParser, _plain_object, decode_json
from agentfsm.tools.schema import json_pointer


class Window(BaseModel):
    start: int
    end: int

    @field_validator("end")
    @classmethod
    def _after_start(cls, end: int) -> int:
        if end > 100:
            raise ValueError("end must be at most 100")
        return end


def plan(window: Window, tags: list[str] | None = None) -> str:
    """Plan within a window."""
    return f"{window.start}-{window.end}"


PARSER = Tool(plan).arguments
LIMITS = ArgumentLimits()


def refusal(text: str, limits: ArgumentLimits = LIMITS) -> ToolArgumentsError:
    with pytest.raises(ToolArgumentsError) as raised:
        PARSER.parse("c1", text, limits)
    return raised.value


def test_valid_arguments_become_the_bodys_keyword_arguments() -> None:
    assert PARSER.parse("c1", '{"window": {"start": 1, "end": 5}}', LIMITS) == {
        "window": Window(start=1, end=5),
        "tags": None,
    }


def test_a_check_the_schema_cannot_express_is_still_applied_with_its_pointer() -> None:
    error = refusal('{"window": {"start": 1, "end": 500}}')

    assert (error.pointer, error.tool_name, error.call_id) == ("/window/end", "plan", "c1")
    assert error.detail.startswith("Value error, end must be at most 100; the tool takes")


def test_the_pointer_of_a_nested_schema_error_names_the_array_index() -> None:
    error = refusal('{"window": {"start": 1, "end": 2}, "tags": ["a", 3]}')

    assert error.pointer == "/tags/1"
    assert error.detail == (
        "3 is not of type 'string'; the tool takes an object with properties "
        "'window' (required), 'tags'"
    )


@pytest.mark.parametrize("text", ["", "   ", "\n"], ids=["empty", "spaces", "newline"])
def test_blank_arguments_count_as_an_empty_object(text: str) -> None:
    assert refusal(text).detail.startswith("'window' is a required property")


def test_nesting_exactly_at_the_limit_is_accepted() -> None:
    limits = ArgumentLimits(max_depth=2)

    accepted = PARSER.parse("c1", '{"window": {"start": 1, "end": 2}, "tags": []}', limits)

    assert accepted["tags"] == []
    assert refusal('{"window": {"start": 1, "end": 2}, "tags": [[]]}', limits).detail == (
        "they are nested deeper than 2 levels"
    )


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    text = '{"window": {"start": 1, "end": 2}, "tags": ["[[[[{{{{"]}'

    assert PARSER.parse("c1", text, ArgumentLimits(max_depth=2))["tags"] == ["[[[[{{{{"]


def test_an_integer_too_long_to_parse_is_refused_not_crashed_on() -> None:
    error = refusal('{"window": {"start": ' + "9" * 5000 + ', "end": 1}}')

    assert error.detail.startswith("they are not valid JSON (")


@pytest.mark.parametrize(
    ("path", "pointer"),
    [((), ""), (("a", 0, "b"), "/a/0/b"), (("x/y", "m~n"), "/x~1y/m~0n")],
    ids=["root", "nested", "escaped"],
)
def test_json_pointers_follow_rfc_6901(path: tuple[str | int, ...], pointer: str) -> None:
    assert json_pointer(path) == pointer


@pytest.mark.parametrize(
    ("text", "kind"),
    [("null", "null"), ('"Paris"', "string"), ("true", "boolean"), ("3.5", "number")],
    ids=["null", "string", "boolean", "number"],
)
def test_arguments_that_are_not_an_object_name_their_json_type(text: str, kind: str) -> None:
    assert refusal(text).detail.startswith(f"they must be a JSON object, not a JSON {kind}; ")


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)


def _outcome(parse: Callable[[str], object], text: str) -> tuple[str, object]:
    try:
        return ("value", parse(text))
    except (ValueError, RecursionError) as exc:
        return (type(exc).__name__, str(exc))


_TEXTS = st.one_of(
    _JSON.map(json.dumps),
    st.tuples(st.sampled_from(["", " ", "\n"]), _JSON.map(json.dumps), st.text(max_size=3)).map(
        "".join
    ),
    st.text(max_size=30).map(lambda inner: "{" + inner + "}"),
    st.sampled_from(
        ['{"a": NaN}', '{"a": 1} {}', '{"a": }', '{"a":' * 5000 + "1" + "}" * 5000, "{}x}"]
    ),
)


@given(_TEXTS)
def test_the_fast_decoder_gives_the_value_or_the_error_of_json_decode(text: str) -> None:
    decoder = json.JSONDecoder(parse_constant=_reject)

    assert _outcome(decode_json, text) == _outcome(decoder.decode, text)


def _checked_one_by_one(text: str, limits: ArgumentLimits) -> tuple[str, object]:
    try:
        return ("value", PARSER._object("c", text, limits))
    except ToolArgumentsError as refused:
        return ("refused", refused.detail)


@given(
    _TEXTS,
    st.builds(ArgumentLimits, max_chars=st.integers(0, 200), max_depth=st.integers(1, 4))
    | st.just(LIMITS),
)
def test_a_plain_object_is_what_the_checks_one_by_one_make_of_it(
    text: str, limits: ArgumentLimits
) -> None:
    plain = _plain_object(text, limits)

    if plain is not None:  # (None: the checks one by one judge it, as they would anyway)
        assert _checked_one_by_one(text, limits) == ("value", plain)


def test_a_plain_object_is_taken_without_the_checks_one_by_one() -> None:
    assert _plain_object('{"a": [1, {"b": 2}]}', LIMITS) == {"a": [1, {"b": 2}]}
    for unusual in (' {"a": 1}', '{"a": 1} {}', '{"a": NaN}', "[1]", "", '{"a": "x" * 9}'):
        assert _plain_object(unusual, ArgumentLimits(max_chars=10)) is None
    assert _plain_object('{"a": [[1]]}', ArgumentLimits(max_depth=2)) is None  # 3 brackets


def _reject(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


_BOUNDED = {
    "type": "object",
    "properties": {"n": {"type": "integer", "maximum": 5}},
    "required": ["n"],
}


def _bounded_parser() -> ArgumentParser:
    parser = Tool(lambda n: n, name="bounded", parameters=_BOUNDED).arguments
    assert parser.validator.engine == "jsonschema-rs"  # (the dev extra installs it)
    return parser


@pytest.mark.parametrize(("n", "accepted"), [(-(2**70), True), (2**70, False), (3, True)])
def test_integers_beyond_64_bits_are_judged_as_jsonschema_judges_them(
    n: int, accepted: bool
) -> None:
    parser = _bounded_parser()
    text = json.dumps({"n": n})

    if accepted:
        assert parser.parse("c", text, LIMITS) == {"n": n}
    else:
        with pytest.raises(ToolArgumentsError, match="greater than the maximum") as refused:
            parser.parse("c", text, LIMITS)
        assert refused.value.pointer == "/n"


def test_a_validator_that_cannot_read_or_fails_is_taken_as_jsonschema_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parser = _bounded_parser()

    class Fast:
        """A jsonschema-rs validator whose verdict raises ``error``."""

        def __init__(self, error: Exception) -> None:
            self.error = error

        def is_valid(self, instance: object) -> bool:
            raise self.error

    # it cannot read them: then jsonschema judges
    monkeypatch.setattr(parser.validator, "_fast", Fast(OverflowError("it cannot read them")))
    assert parser.parse("c", '{"n": 1}', LIMITS) == {"n": 1}
    with pytest.raises(ToolArgumentsError, match="greater than the maximum"):
        parser.parse("c", '{"n": 6}', LIMITS)

    monkeypatch.setattr(parser.validator, "_fast", Fast(RuntimeError("the validator broke")))
    with pytest.raises(ToolArgumentsError, match=r"could not be checked \(RuntimeError"):
        parser.parse("c", '{"n": 1}', LIMITS)

    monkeypatch.setattr(parser.validator, "_fast", None)  # jsonschema alone, which fails too
    monkeypatch.setattr(accelerator, "schema_error", broken_reference)
    with pytest.raises(ToolArgumentsError, match=r"could not be checked \(LookupError"):
        parser.parse("c", '{"n": 1}', LIMITS)


def broken_reference(validator: object, instance: object) -> None:
    raise LookupError("a reference that fails")
