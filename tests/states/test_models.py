"""Messages, tool calls and events: role rules, and lossless JSON round-trips."""

from __future__ import annotations

import weakref

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfsm.states import Event, MachineName, Message, ToolCall
from agentfsm.states.events import unchecked_event

ids = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)
tool_calls = st.builds(ToolCall, id=ids, name=st.text(max_size=20), arguments=st.text())
messages = st.one_of(
    st.builds(Message.system, st.text()),
    st.builds(Message.user, st.text()),
    st.builds(
        Message.assistant,
        st.none() | st.text(),
        st.lists(tool_calls, min_size=1, max_size=3, unique_by=lambda c: c.id).map(tuple),
    ),
    st.builds(Message.assistant, st.text()),
    st.builds(Message.tool, ids, st.text(), st.none() | st.text()),
)
events = st.builds(
    Event,
    seq=st.integers(min_value=1),
    run_id=st.text(),
    machine=st.sampled_from(MachineName),
    event=st.text(),
    source=st.text(),
    target=st.text(),
    at=st.floats(allow_nan=False, allow_infinity=False),
    data=st.dictionaries(st.text(), json_values, max_size=4),
)


@given(messages)
def test_message_json_round_trip_is_lossless(message: Message) -> None:
    assert Message.model_validate_json(message.model_dump_json()) == message


@given(events)
def test_event_json_round_trip_is_lossless(event: Event) -> None:
    assert Event.model_validate_json(event.model_dump_json()) == event


@given(events)
def test_unchecked_event_is_the_same_event(event: Event) -> None:
    fast = unchecked_event(*(getattr(event, name) for name in Event.model_fields))

    assert fast == event
    assert type(fast) is Event
    assert fast.model_fields_set == event.model_fields_set
    assert fast.model_dump_json() == event.model_dump_json()
    assert repr(fast) == repr(event)
    assert list(vars(fast)) == list(Event.model_fields) == list(vars(event))
    assert fast.model_dump() == event.model_dump()
    assert weakref.ref(fast)() is fast  # (its layout is an Event's: weakrefs included)
    with pytest.raises(pydantic.ValidationError):
        fast.seq = 2  # type: ignore[misc]  # frozen like any Event


BAD_MESSAGES = {
    "tool-calls-on-user": (
        {"role": "user", "content": "x", "tool_calls": [{"id": "c", "name": "f"}]},
        "only assistant messages carry tool_calls",
    ),
    "tool-without-call-id": ({"role": "tool", "content": "x"}, "has a tool_call_id"),
    "call-id-on-user": ({"role": "user", "content": "x", "tool_call_id": "c"}, "tool_call_id"),
    "user-without-content": ({"role": "user"}, "needs content"),
    "empty-assistant": ({"role": "assistant"}, "needs content"),
    "duplicate-call-ids": (
        {"role": "assistant", "tool_calls": [{"id": "c", "name": "f"}, {"id": "c", "name": "g"}]},
        "must be unique",
    ),
    "unknown-field": ({"role": "user", "content": "x", "mood": "happy"}, "Extra inputs"),
    "unknown-role": ({"role": "robot", "content": "x"}, "role"),
}


@pytest.mark.parametrize(("fields", "message"), BAD_MESSAGES.values(), ids=list(BAD_MESSAGES))
def test_message_that_does_not_fit_its_role_is_refused(
    fields: dict[str, object], message: str
) -> None:
    with pytest.raises(pydantic.ValidationError, match=message):
        Message.model_validate(fields)


def test_messages_render_in_the_chat_completions_form() -> None:
    call = ToolCall(id="call_1", name="get_weather", arguments='{"city": "Paris"}')

    assert Message.assistant(None, (call,)).to_openai() == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }
    assert Message.tool("call_1", "sunny", name="get_weather").to_openai() == {
        "role": "tool",
        "content": "sunny",
        "tool_call_id": "call_1",
        "name": "get_weather",
    }


@pytest.mark.parametrize("number", [float("inf"), float("-inf"), float("nan")])
def test_event_refuses_numbers_json_cannot_carry(number: float) -> None:
    fields = {"seq": 1, "run_id": "r", "machine": "run", "event": "e", "source": "a"}
    with pytest.raises(pydantic.ValidationError, match="finite"):
        Event.model_validate({**fields, "target": "b", "at": 1.0, "data": {"x": [number]}})
    with pytest.raises(pydantic.ValidationError, match="finite"):
        Event.model_validate({**fields, "target": "b", "at": number})


def test_unchecked_event_can_be_copied_with_changes() -> None:
    fast = unchecked_event(1, "r", MachineName.RUN, "start", "created", "ready", 1.0, {})

    changed = fast.model_copy(update={"seq": 2})

    assert (changed.seq, fast.seq) == (2, 1)
    assert fast.model_fields_set == set(Event.model_fields)
