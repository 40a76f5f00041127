from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from agentfsm.states.messages import Message
from agentfsm.tools import RoundResult, ToolErrorInfo, ToolResult, ToolStatus
from agentfsm.tools.results import json_output, round_result

FAILURE = ToolErrorInfo(type="LookupError", message="no station")


def test_a_result_has_an_error_exactly_when_it_did_not_succeed() -> None:
    with pytest.raises(ValidationError, match="exactly when its status is not 'success'"):
        ToolResult(call_id="c1", tool_name="t", status=ToolStatus.SUCCESS, error=FAILURE)
    with pytest.raises(ValidationError, match="exactly when its status is not 'success'"):
        ToolResult(call_id="c1", tool_name="t", status=ToolStatus.ERROR)


@pytest.mark.parametrize(
    ("result", "content"),
    [
        (ToolResult(call_id="c1", tool_name="t", status="success", output="plain"), "plain"),
        (
            ToolResult(call_id="c1", tool_name="t", status="success", output={"é": [1, None]}),
            '{"é": [1, null]}',
        ),
        (
            ToolResult(call_id="c1", tool_name="t", status="error", error=FAILURE),
            "[error] LookupError: no station",
        ),
    ],
    ids=["string", "json", "failure"],
)
def test_a_result_becomes_the_tool_message_answering_its_call(
    result: ToolResult, content: str
) -> None:
    assert result.to_message() == Message.tool("c1", content, name="t")
    assert result.ok == (result.status is ToolStatus.SUCCESS)
    assert ToolResult.model_validate_json(result.model_dump_json()) == result


@pytest.mark.parametrize(
    ("value", "output", "text"),
    [
        ("x", "x", "x"),
        (True, True, "true"),
        (3, 3, "3"),
        (None, None, "null"),
        ([("a", 1)], [["a", 1]], '[["a", 1]]'),
        ({1: "one"}, {"1": "one"}, '{"1": "one"}'),
    ],
    ids=["str", "bool", "int", "none", "nested-tuple", "int-key"],
)
def test_outputs_are_normalised_to_json(value: object, output: object, text: str) -> None:
    assert json_output(value) == (output, text)


def test_a_self_referencing_output_is_refused() -> None:
    loop: list[object] = []
    loop.append(loop)

    with pytest.raises(ValueError, match="Circular reference"):
        json_output(loop)


def test_a_round_result_separates_its_tool_messages() -> None:
    result = ToolResult(call_id="c1", tool_name="t", status="success", output=1)
    note = Message.system("note")

    outcome = RoundResult((result,), (result.to_message(), note))

    assert outcome.tool_messages == (result.to_message(),)


@given(st.lists(st.text(max_size=4), max_size=3), st.lists(st.text(max_size=4), max_size=3))
def test_a_round_result_built_directly_is_the_one_the_constructor_builds(
    ids: list[str], texts: list[str]
) -> None:
    results = tuple(
        ToolResult(call_id=i, tool_name="t", status=ToolStatus.SUCCESS, output=i) for i in ids
    )
    messages = tuple(Message.tool(f"c{n}", text) for n, text in enumerate(texts))

    built = round_result(results, messages)
    made = RoundResult(results, messages)

    assert type(built) is RoundResult
    assert built == made
    assert repr(built) == repr(made)
    assert built.tool_messages == made.tool_messages
    # Built as an unfrozen twin and then given the class: as frozen as the constructor's.
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.results = ()  # type: ignore[misc]
    assert built.results == results
