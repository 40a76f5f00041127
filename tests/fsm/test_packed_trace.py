"""A run with no store keeps its model calls and tool executions packed, and gets them back.

`packed_llm_call` and `packed_tool_entries` pack what `llm_call_entry` and `tool_entries`
build; `entry_of` builds the entry back: equal, with the same fields given, the same JSON
and frozen (`same`, as for every unvalidated record). A packed entry holds only the atoms
the collector stops tracking, unless a value of its own is a container (a usage, an error,
an output that is a list or an object).
"""

from __future__ import annotations

import gc
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentfsm.fsm.trace import (
    LLMCallTrace,
    ToolExecutionTrace,
    entries_of,
    entry_of,
    last_llm_call,
    llm_call_entry,
    packed_llm_call,
    packed_tool_entries,
    tool_entries,
    user_input_entry,
)
from agentfsm.llm.base import ModelResponse, Usage
from agentfsm.states.messages import ToolCall
from agentfsm.tools.results import ToolResult, tool_result
from tests.states.test_unchecked import (
    calls,
    clock_values,
    responses,
    results,
    same,
    seconds,
    texts,
)


@given(responses, texts, st.integers(0, 99), st.integers(0, 99), seconds, clock_values)
def test_a_packed_model_call_is_its_entry(
    response: ModelResponse, model: str, turn: int, iteration: int, duration: float, at: float
) -> None:
    item = packed_llm_call(model, response, turn, iteration, duration, at)

    same(entry_of(item), llm_call_entry(model, response, turn, iteration, duration, at))
    assert type(item) is tuple
    if response.usage is None:
        gc.collect()
        assert not gc.is_tracked(item)  # strings and numbers only


@given(
    st.lists(st.tuples(calls, results(), st.booleans(), st.booleans()), max_size=4),
    st.integers(0, 9),
    st.integers(0, 9),
    clock_values,
    st.booleans(),
)
def test_packed_tool_entries_are_the_entries(
    rows: list[tuple[ToolCall, dict[str, Any], bool, bool]],
    turn: int,
    iteration: int,
    at: float,
    telling: bool,
) -> None:
    round_calls = [call for call, _, _, _ in rows]
    round_results = []
    for call, fields, built, answers_the_call in rows:
        if answers_the_call:  # (as the ToolSystem answers: the call's own id and name)
            fields = {**fields, "call_id": call.id, "tool_name": call.name}
        # as the ToolSystem builds a result, or validated (its fields given as given)
        round_results.append(tool_result(**fields) if built else ToolResult(**fields))
    told: list[ToolExecutionTrace] | None = [] if telling else None

    items = packed_tool_entries(round_calls, round_results, turn, iteration, at, told)
    entries = tool_entries(round_calls, round_results, turn, iteration, at)

    assert len(items) == len(entries) == len(rows)
    if told is not None:  # the entries to tell, built alongside
        assert len(told) == len(entries)
        for built_entry, entry in zip(told, entries, strict=True):
            same(built_entry, entry)
            assert built_entry.result is entry.result
    for item, entry, result, (call, fields, built, _) in zip(
        items, entries, round_results, rows, strict=True
    ):
        same(entry_of(item), entry)
        assert entry_of(item).result.model_fields_set == result.model_fields_set  # type: ignore[union-attr]
        # Packed when built by tool_result and naming the call by the call's own strings: as
        # the ToolSystem answers a call, or by chance ('' and one-letter strings are shared).
        names_the_call = result.call_id is call.id and result.tool_name is call.name
        if not (built and names_the_call):  # kept in its entry, as it is
            assert type(item) is ToolExecutionTrace
            assert item.result is result
            continue
        assert type(item) is tuple
        if fields["error"] is None and not isinstance(fields["output"], (list, dict)):
            gc.collect()
            assert not gc.is_tracked(item)  # strings and numbers only


def test_entries_kept_as_they_are_come_back_as_they_are() -> None:
    entry = user_input_entry(1, "hi", 5.0)

    assert entry_of(entry) is entry
    assert entries_of([entry]) == [entry]


def test_the_newest_model_call_is_found_packed_or_not() -> None:
    usage = Usage(prompt_tokens=7, completion_tokens=1, total_tokens=8)
    first = ModelResponse(content="a", model="m", usage=usage)
    second = ModelResponse(content="b", model="m")
    entry = llm_call_entry("m", first, 1, 1, 0.5, 10.0)
    call = ToolCall(id="c", name="f")
    tools = packed_tool_entries([call], [tool_result("c", "f", *_ok())], 1, 2, 11.0)

    assert last_llm_call([]) is None
    assert last_llm_call([user_input_entry(1, "hi", 5.0)]) is None
    assert last_llm_call([entry, *tools]) is entry
    packed = [packed_llm_call("m", first, 1, 1, 0.5, 10.0), *tools]
    found = last_llm_call(packed)
    assert type(found) is LLMCallTrace
    same(found, entry)
    newest = last_llm_call([*packed, packed_llm_call("m", second, 1, 3, 0.5, 12.0)])
    assert newest is not None
    assert (newest.iteration, newest.usage) == (3, None)
    assert [type(entry) for entry in entries_of(packed)] == [LLMCallTrace, ToolExecutionTrace]


def _ok() -> tuple[Any, ...]:
    from agentfsm.tools.results import ToolStatus

    return ToolStatus.SUCCESS, "ok", None, 0.25, 1
