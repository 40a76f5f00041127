"""A tool error always becomes a result (issue 18, part 2).

A schema's references are checked when the tool is built, and a check that breaks still
answers the call.
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel, field_validator

from agentfsm import Tool, ToolCall, tool
from agentfsm.errors import ToolSchemaError
from agentfsm.states.json import JSONObject
from agentfsm.tools import ToolContext, ToolStatus, ToolSystem


def _schema(reference: str) -> JSONObject:
    return {
        "type": "object",
        "properties": {"city": {"$ref": reference}},
        "$defs": {"City": {"type": "string"}},
    }


@pytest.mark.parametrize(
    "reference", ["#/$defs/Missing", "#/properties/nowhere", "https://example.com/s.json", "#x"]
)
def test_a_reference_that_leads_nowhere_is_refused_when_the_tool_is_built(
    reference: str,
) -> None:
    def weather(city: str) -> str:
        return city

    with pytest.raises(ToolSchemaError) as raised:
        Tool(weather, parameters=_schema(reference))

    assert raised.value.pointer == "/properties/city/$ref"
    assert repr(reference) in str(raised.value)


def test_a_reference_inside_the_schema_is_accepted_and_checked() -> None:
    def weather(city: str) -> str:
        return city

    declared = Tool(weather, parameters=_schema("#/$defs/City"))
    system = ToolSystem([declared])
    calls = [
        ToolCall(id="c1", name="weather", arguments='{"city": "Oslo"}'),
        ToolCall(id="c2", name="weather", arguments='{"city": 3}'),
    ]

    results = system.run_round_sync(calls, ToolContext(run_id="r")).results

    assert [r.status for r in results] == [ToolStatus.SUCCESS, ToolStatus.INVALID_ARGUMENTS]


class Place(BaseModel):
    name: str

    @field_validator("name")
    @classmethod
    def _broken(cls, value: str) -> str:
        raise LookupError(f"the validator itself broke on {value!r}")


@tool
def visit(place: Place) -> str:
    """Visit a place."""
    return place.name


def test_a_check_that_breaks_answers_the_call_with_an_error_result() -> None:
    system = ToolSystem([visit])
    call = ToolCall(id="c1", name="visit", arguments='{"place": {"name": "Oslo"}}')

    (result,) = system.run_round_sync([call], ToolContext(run_id="r")).results

    assert result.status is ToolStatus.INVALID_ARGUMENTS
    assert result.error is not None
    assert "LookupError: the validator itself broke on 'Oslo'" in result.error.message
