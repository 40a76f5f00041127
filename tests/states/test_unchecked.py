"""The hot path's unvalidated records equal the validated ones, field set and JSON included.

Each fast constructor (`tool_message`, `assistant_message`, `tool_result`, `llm_call_entry`,
`tool_entries`, `tool_call`, `usage_counts`) is compared with pydantic's validated
construction of the same record on generated values: equal, with the same fields marked as
given, the same JSON, and frozen (or refused alike); each fast dump (`message_json`,
`result_json`) with pydantic's ``model_dump(mode="json")``.
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Callable
from typing import Any

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfsm.fsm.trace import (
    LLMCallTrace,
    ToolExecutionTrace,
    UserInputTrace,
    llm_call_entry,
    tool_entries,
    user_input_entry,
)
from agentfsm.llm.base import FinishReason, ModelResponse, Usage, usage_counts
from agentfsm.states.messages import (
    Message,
    ToolCall,
    assistant_message,
    message_json,
    tool_call,
    tool_message,
    user_message,
)
from agentfsm.states.unchecked import (
    inline_fields,
    new,
    put,
    put_extra,
    put_fields_set,
    put_private,
    sealed,
    twin,
)
from agentfsm.tools.results import ToolErrorInfo, ToolResult, ToolStatus, result_json, tool_result

ids = st.text(min_size=1, max_size=8)
texts = st.text(max_size=12)
calls = st.builds(ToolCall, id=ids, name=texts, arguments=texts)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
seconds = st.floats(min_value=0, max_value=1e9, allow_nan=False) | st.integers(0, 10**6)
clock_values = st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(10**9), 10**9)


def same(fast: pydantic.BaseModel, checked: pydantic.BaseModel) -> None:
    """``fast`` is ``checked``: equal, the same fields given, the same JSON, and frozen."""
    assert fast == checked
    assert type(fast) is type(checked)
    assert fast.model_fields_set == checked.model_fields_set
    assert fast.model_dump_json() == checked.model_dump_json()
    assert repr(fast) == repr(checked)
    # In the class's field order, so that the instance dict shares its keys with the class's
    # other instances (a split table), as a validated one does.
    assert list(vars(fast)) == list(type(fast).model_fields) == list(vars(checked))
    name = next(iter(type(fast).model_fields))
    with pytest.raises(pydantic.ValidationError):
        setattr(fast, name, getattr(fast, name))


@st.composite
def results(draw: st.DrawFn) -> dict[str, Any]:
    """The fields of a valid `ToolResult`: an error exactly when the status is no success."""
    status = draw(st.sampled_from(ToolStatus))
    failed = status is not ToolStatus.SUCCESS
    error = ToolErrorInfo(type=draw(texts), message=draw(texts)) if failed else None
    return {
        "call_id": draw(ids),
        "tool_name": draw(texts),
        "status": status,
        "output": None if failed else draw(json_values),
        "error": error,
        "duration": draw(seconds),
        "attempts": draw(st.integers(0, 5)),
    }


@given(texts)
def test_user_message_is_message_user(content: str) -> None:
    same(user_message(content), Message.user(content))


@given(st.integers(0, 99), texts, clock_values)
def test_user_input_entry_is_the_validated_entry(turn: int, text: str, at: float) -> None:
    same(user_input_entry(turn, text, at), UserInputTrace(turn=turn, text=text, at=at))


@given(ids, texts, st.none() | texts)
def test_tool_message_is_message_tool(call_id: str, content: str, name: str | None) -> None:
    same(tool_message(call_id, content, name), Message.tool(call_id, content, name=name))


@given(st.none() | texts, st.lists(calls, max_size=4).map(tuple))
def test_assistant_message_is_message_assistant(
    content: str | None, tool_calls: tuple[ToolCall, ...]
) -> None:
    try:
        checked = Message.assistant(content, tool_calls)
    except pydantic.ValidationError as refused:
        message = refused.errors()[0]["msg"]
    else:
        same(assistant_message(content, tool_calls), checked)
        return
    with pytest.raises(pydantic.ValidationError) as also:
        assistant_message(content, tool_calls)
    assert also.value.errors()[0]["msg"] == message


def same_or_refused_alike(fast: Callable[[], Any], checked: Callable[[], Any]) -> None:
    """``fast()`` is ``checked()``, or both refuse with the same errors."""
    refusal = None
    try:
        expected = checked()
    except pydantic.ValidationError as refused:
        refusal = refused.errors()
    if refusal is None:
        same(fast(), expected)
        return
    with pytest.raises(pydantic.ValidationError) as also:
        fast()
    assert also.value.errors() == refusal


# Besides plain text: what a compatible server's client may hand over instead.
call_parts = (
    texts | st.none() | st.integers() | st.builds(lambda text: type("S", (str,), {})(text), texts)
)


@given(ids | call_parts, call_parts, call_parts)
def test_tool_call_is_the_validated_call(call_id: Any, name: Any, arguments: Any) -> None:
    same_or_refused_alike(
        lambda: tool_call(call_id, name, arguments),
        lambda: ToolCall(id=call_id, name=name, arguments=arguments),
    )


counts = st.integers(-3, 2**70) | st.booleans() | st.floats(-2, 1e6) | st.none() | st.just("7")


@given(counts, counts, counts, st.none() | counts, st.none() | counts)
def test_usage_counts_are_the_validated_usage(
    prompt: Any, completion: Any, total: Any, cached: Any, reasoning: Any
) -> None:
    details = {"cache_read_tokens": cached, "reasoning_tokens": reasoning}
    same_or_refused_alike(
        lambda: usage_counts(prompt, completion, total, cached, reasoning),
        lambda: Usage(
            prompt_tokens=prompt,
            completion_tokens=completion,
            total_tokens=total,
            **{name: count for name, count in details.items() if count is not None},
        ),
    )


def test_tool_call_and_usage_counts_build_plain_values_unvalidated() -> None:
    call = tool_call("c1", "lookup", '{"q": 1}')
    counts = usage_counts(10, 5, 15)

    # made as twins (no validation: no fields-set set of their own, which a validated
    # record has), so each a few hundred bytes smaller than pydantic's
    assert call.__pydantic_fields_set__ is tool_call("c2", "f", "").__pydantic_fields_set__
    assert counts.__pydantic_fields_set__ is usage_counts(0, 0, 0).__pydantic_fields_set__
    assert ToolCall(id="c1", name="f").__pydantic_fields_set__ is not (
        ToolCall(id="c2", name="f").__pydantic_fields_set__
    )


def test_assistant_message_refuses_what_message_assistant_refuses() -> None:
    twice = (ToolCall(id="c", name="f"), ToolCall(id="c", name="g"))

    with pytest.raises(pydantic.ValidationError, match="must be unique"):
        assistant_message(None, twice)
    with pytest.raises(pydantic.ValidationError, match="needs content"):
        assistant_message(None, ())


def test_assistant_message_validates_calls_that_are_not_a_tuple_of_tool_calls() -> None:
    listed = [ToolCall(id="c", name="f")]
    as_dicts = ({"id": "c", "name": "f"},)

    for given_calls in (listed, as_dicts):
        message = assistant_message(None, given_calls)  # type: ignore[arg-type]  # on purpose
        assert message == Message.assistant(None, (ToolCall(id="c", name="f"),))


@given(results())
def test_tool_result_is_the_validated_result(fields: dict[str, Any]) -> None:
    fast = tool_result(**fields)

    same(fast, ToolResult(**fields))
    assert fast.model_fields_set == set(ToolResult.model_fields)


def test_tool_result_takes_a_negative_duration_as_zero() -> None:
    fast = tool_result("c", "t", ToolStatus.SUCCESS, "ok", None, -0.5, 1)

    assert fast.duration == 0.0


responses = st.builds(
    ModelResponse,
    content=st.none() | texts,
    tool_calls=st.lists(calls, max_size=3, unique_by=lambda c: c.id).map(tuple),
    finish_reason=st.sampled_from(FinishReason),
    usage=st.none() | st.builds(Usage, prompt_tokens=st.integers(0, 99)),
    model=texts,
    id=st.none() | texts,
)
"""Model responses of every kind: text or calls, each finish reason, with usage or none,
with an id or none."""


@given(responses, texts, st.integers(0, 99), st.integers(0, 99), seconds, clock_values)
def test_llm_call_entry_is_the_validated_entry(
    response: ModelResponse, model: str, turn: int, iteration: int, duration: float, at: float
) -> None:
    checked = LLMCallTrace(
        model=response.model or model,
        turn=turn,
        iteration=iteration,
        duration=duration,
        tool_call_count=len(response.tool_calls),
        finish_reason=response.finish_reason.value,
        usage=response.usage,
        at=at,
        **({} if response.id is None else {"response_id": response.id}),
    )

    entry = llm_call_entry(model, response, turn, iteration, duration, at)
    same(entry, checked)
    # one text per reason, shared by every entry (not a new str per model call)
    assert entry.finish_reason is response.finish_reason.value


@given(st.lists(st.tuples(calls, results()), max_size=4), st.integers(0, 9), clock_values)
def test_tool_entries_are_the_validated_entries(
    pairs: list[tuple[ToolCall, dict[str, Any]]], turn: int, at: float
) -> None:
    round_calls = [call for call, _ in pairs]
    round_results = [ToolResult(**fields) for _, fields in pairs]

    entries = tool_entries(round_calls, round_results, turn, 1, at)

    assert len(entries) == len(pairs)
    for entry, call, result in zip(entries, round_calls, round_results, strict=True):
        checked = ToolExecutionTrace(
            name=call.name,
            arguments=call.arguments,
            call_id=call.id,
            turn=turn,
            iteration=1,
            status=result.status,
            result=result,
            duration=result.duration,
            error_type=result.error.type if result.error else None,
            at=at,
        )
        same(entry, checked)


def test_tool_entries_refuse_calls_and_results_that_do_not_pair_up() -> None:
    with pytest.raises(ValueError, match=r"shorter|longer"):
        tool_entries([ToolCall(id="c", name="f")], [], 1, 1, 0.0)


messages = st.one_of(
    st.builds(Message.user, texts),
    st.builds(Message.system, texts),
    st.builds(
        Message.assistant,
        st.none() | texts,
        st.lists(calls, min_size=1, max_size=3, unique_by=lambda c: c.id).map(tuple),
    ),
    st.builds(Message.tool, ids, texts, st.none() | texts),
)


@given(messages)
def test_message_json_is_the_model_dump(message: Message) -> None:
    assert message_json(message) == message.model_dump(mode="json")
    assert list(message_json(message)) == list(message.model_dump(mode="json"))


class _TaggedCall(ToolCall):
    """A subclass with a field of its own: pydantic dumps a message's calls as `ToolCall`s."""

    tag: str = "extra"


@given(
    st.lists(
        st.tuples(ids, texts, texts, st.integers(0, 2)),
        min_size=1,
        max_size=3,
        unique_by=lambda c: c[0],
    ),
    st.none() | texts,
)
def test_message_json_dumps_each_kind_of_call_as_pydantic_does(
    specs: list[tuple[str, str, str, int]], content: str | None
) -> None:
    # A validated call, one built by model_construct, and a subclass's (whose own field
    # pydantic leaves out): the fast dump copies only an exact ToolCall's fields.
    makers = (ToolCall, ToolCall.model_construct, _TaggedCall)
    made = tuple(
        makers[kind](id=call_id, name=name, arguments=arguments)
        for call_id, name, arguments, kind in specs
    )
    message = Message.assistant(content, made)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (pydantic warns of the subclass's extra field)
        dumped = message.model_dump(mode="json")
    assert message_json(message) == dumped
    assert [list(call) for call in message_json(message)["tool_calls"]] == [  # type: ignore[union-attr]
        list(call) for call in dumped["tool_calls"]
    ]


@given(results())
def test_result_json_is_the_model_dump(fields: dict[str, Any]) -> None:
    result = ToolResult(**fields)

    assert result_json(result) == result.model_dump(mode="json")
    assert list(result_json(result)) == list(result.model_dump(mode="json"))


def _holds_a_dict(record: pydantic.BaseModel) -> bool:
    """Whether ``record`` holds a dict object (its ``__dict__``, once made) and not inline values.

    The garbage collector visits an instance's inline values one by one, and its ``__dict__``
    as one dict, once one was made; none of the records below has a field that is a dict.
    """
    return any(type(referent) is dict for referent in gc.get_referents(record))


def test_the_messages_a_run_keeps_hold_no_dict_object() -> None:
    for index in range(100):  # many validated messages first (an application's)
        Message.tool(str(index), "ok")
    call = ToolCall(id="c", name="f", arguments="{}")
    records: list[pydantic.BaseModel] = [
        tool_message("c", "ok", "f"),
        user_message("hi"),
        assistant_message(None, (call,)),
        user_input_entry(1, "hi", 0.0),
    ]

    for record in records:
        assert not _holds_a_dict(record), type(record).__name__
        vars(record)  # asked for (pydantic does, to compare or dump): then it is made
        assert _holds_a_dict(record), type(record).__name__


def _point_class() -> type[pydantic.BaseModel]:
    class Point(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(frozen=True)
        x: int
        y: int

    return Point


def _put_point(cls: type[pydantic.BaseModel]) -> pydantic.BaseModel:
    point = new(cls)
    put(point, "x", 1)
    put(point, "y", 2)
    return sealed(point, {"x", "y"})


def test_inline_fields_keeps_put_records_inline_after_many_validated_ones() -> None:
    plain, decorated = _point_class(), inline_fields(_point_class())
    for cls in (plain, decorated):
        for _ in range(100):
            cls(x=1, y=2)

    assert _holds_a_dict(_put_point(plain))  # what the decorator prevents
    fast = _put_point(decorated)
    assert not _holds_a_dict(fast)
    same(fast, decorated(x=1, y=2))


@given(fields=st.sets(st.sampled_from(("x", "y"))))
def test_the_slot_setters_set_what_put_sets(fields: set[str]) -> None:
    cls = _point_class()
    by_name, by_slot = new(cls), new(cls)
    for point in (by_name, by_slot):
        put(point, "x", 1)
        put(point, "y", 2)
    put(by_name, "__pydantic_fields_set__", fields)
    put(by_name, "__pydantic_extra__", None)
    put(by_name, "__pydantic_private__", None)
    put_fields_set(by_slot, fields)
    put_extra(by_slot, None)
    put_private(by_slot, None)

    same(by_slot, by_name)
    assert by_slot.model_fields_set == fields
    assert by_slot.__pydantic_extra__ is None
    assert by_slot.__pydantic_private__ is None


def test_twin_refuses_a_class_whose_layout_it_cannot_share() -> None:
    class Slotted(pydantic.BaseModel):
        __slots__ = ("_cache",)
        value: int = 0

    with pytest.raises(TypeError, match="layout"):
        twin(Slotted)


def test_calling_a_twin_makes_a_blank_record_without_validating() -> None:
    raw = twin(ToolErrorInfo)
    record = raw()  # (the hot path's way: no pydantic __init__, nothing checked)

    assert type(record) is raw
    assert not any(hasattr(record, name) for name in ToolErrorInfo.model_fields)
    with pytest.raises(TypeError):
        raw(type="ValueError", message="bad")  # a twin takes no fields: it is not the model


@pytest.mark.parametrize("make", [object.__new__, lambda raw: raw()], ids=["new", "call"])
def test_a_twin_record_becomes_its_class(make: Callable[[type[Any]], Any]) -> None:
    raw = twin(ToolErrorInfo)
    record = make(raw)
    record.type = "ValueError"
    record.message = "bad"
    record.__pydantic_fields_set__ = {"type", "message"}
    record.__pydantic_extra__ = None
    record.__pydantic_private__ = None
    record.__class__ = ToolErrorInfo

    same(record, ToolErrorInfo(type="ValueError", message="bad"))
