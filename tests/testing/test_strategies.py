"""The kit's strategies: arguments follow (or break) the tools' own schemas, as labelled."""

from __future__ import annotations

import enum
import json
from typing import Annotated, Literal

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from agentfsm import Decision, ModelResponse, Tool, tool
from agentfsm.errors import ModelError, ToolArgumentsError
from agentfsm.states import RUN_TABLE
from agentfsm.testing import (
    decisions,
    event_sequences,
    invalid_arguments,
    malformed_arguments,
    model_responses,
    tool_call_batches,
    user_inputs,
    valid_arguments,
)
from agentfsm.tools.arguments import ArgumentLimits
from agentfsm.tools.schema import compile_validator


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Address(BaseModel):
    street: str
    number: Annotated[int, Field(ge=1, le=999)]


@tool
def forecast(
    city: Annotated[str, Field(min_length=2, max_length=5)],
    days: Annotated[int, Field(ge=1, le=7)] = 1,
    unit: Unit = Unit.CELSIUS,
    tags: list[str] | None = None,
    mode: Literal["fast", "slow"] = "fast",
) -> str:
    """A schema with bounds, an enum, an optional list and a literal."""
    return city


@tool
def deliver(to: Address, fragile: bool, weight: float) -> str:
    """A schema with a nested model ($defs and $ref)."""
    return to.street


@tool
def nothing() -> str:
    """No arguments at all."""
    return "ok"


EXPLICIT = Tool(
    lambda code: code,
    name="explicit",
    parameters={
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}},
        "required": ["code"],
        "additionalProperties": False,
    },
)
DRAFT07 = Tool(
    lambda card="", cvv="": card,
    name="pay",
    parameters={
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"card": {"type": "string"}, "cvv": {"type": "string"}},
        "dependencies": {"card": ["cvv"]},
        "additionalProperties": False,
    },
)
"""Judged as draft-07: ``card`` needs ``cvv`` (2020-12 ignores ``dependencies``)."""
TOOLS = (forecast, deliver, nothing, EXPLICIT, DRAFT07)
tools = st.sampled_from(TOOLS)
FAST = settings(max_examples=60, deadline=None)


def parses(target: Tool[..., object], text: str) -> bool:
    try:
        target.arguments.parse("call_1", text, ArgumentLimits())
    except ToolArgumentsError:
        return False
    return True


@FAST
@given(data=st.data(), target=tools)
def test_valid_arguments_pass_the_tools_own_parser(data: st.DataObject, target: Tool) -> None:
    text = data.draw(valid_arguments(target))
    assert compile_validator(target.parameters).is_valid(json.loads(text))
    assert parses(target, text)


@FAST
@given(data=st.data(), target=tools)
def test_invalid_arguments_fail_the_tools_schema(data: st.DataObject, target: Tool) -> None:
    text = data.draw(invalid_arguments(target))
    assert not compile_validator(target.parameters).is_valid(json.loads(text))
    assert not parses(target, text)


@FAST
@given(data=st.data(), target=tools)
def test_malformed_arguments_are_refused_by_every_tool(data: st.DataObject, target: Tool) -> None:
    assert not parses(target, data.draw(malformed_arguments()))


@FAST
@given(response=tool_call_batches(TOOLS, max_calls=4))
def test_batches_have_unique_ids_and_one_to_max_calls(response: ModelResponse) -> None:
    ids = [call.id for call in response.tool_calls]
    assert 1 <= len(ids) <= 4
    assert len(set(ids)) == len(ids)
    assert response.finish_reason == "tool_calls"


def kind_of(step: object) -> set[str]:
    if isinstance(step, ModelError):
        return {"error"}
    assert isinstance(step, ModelResponse)
    if not step.tool_calls:
        return {"text"}
    kinds = set()
    for call in step.tool_calls:
        found = next((t for t in TOOLS if t.name == call.name), None)
        if found is None:
            kinds.add("unknown")
        else:
            kinds.add("valid" if parses(found, call.arguments) else "invalid")
    return kinds


def test_model_responses_answer_call_tools_validly_and_not_unknown_tools_and_fail() -> None:
    seen: set[str] = set()

    @settings(max_examples=200, deadline=None, database=None)
    @given(step=model_responses(TOOLS))
    def tally(step: object) -> None:
        seen.update(kind_of(step))

    tally()
    assert seen == {"error", "text", "unknown", "valid", "invalid"}


@FAST
@given(data=st.data(), complete=st.booleans())
def test_decisions_fit_the_pending_calls_only_when_complete(
    data: st.DataObject, complete: bool
) -> None:
    chosen = data.draw(decisions(["c1", "c2"], client_side=["c2"], complete=complete))
    assert all(isinstance(decision, Decision) for decision in chosen.values())
    assert (set(chosen) == {"c1", "c2"}) == complete
    assert chosen.get("c1", Decision.approve()).kind != "output"


@FAST
@given(text=user_inputs())
def test_user_inputs_are_strings(text: str) -> None:
    assert isinstance(text, str)


@FAST
@given(sequence=event_sequences(RUN_TABLE, max_size=5))
def test_event_sequences_name_the_machines_events_or_an_unknown_one(
    sequence: list[tuple[str, dict[str, object]]],
) -> None:
    assert len(sequence) <= 5
    assert all(event in (*RUN_TABLE.events, "teleport") for event, _ in sequence)
