"""A model reply's record is dumped from what the reply was made of: pinned to the reply's dump.

`_reply_json` makes the ``message`` of ``model_replied`` from a reply's content and tool calls
when the reply was built from them on `assistant_message`'s fast path, without reading the
reply (a pydantic attribute costs several dict items); anything else dumps the reply.
"""

from __future__ import annotations

import warnings

from hypothesis import given
from hypothesis import strategies as st

from agentfsm.agent.turn import _UNKNOWN, _reply_json
from agentfsm.states.messages import Message, ToolCall, assistant_message, message_json


class MarkedCall(ToolCall):
    """A `ToolCall` subclass (dumped by its declared fields only)."""

    mark: str = "m"


texts = st.text(max_size=8)
plain_calls = st.builds(ToolCall, id=st.text(min_size=1, max_size=6), name=texts, arguments=texts)
marked_calls = st.builds(
    MarkedCall, id=st.text(min_size=1, max_size=6), name=texts, arguments=texts
)
call_lists = st.lists(plain_calls | marked_calls, max_size=4, unique_by=lambda call: call.id)
contents = st.none() | texts


@given(contents, call_lists, st.booleans(), st.booleans())
def test_a_replys_json_is_its_dump_however_it_was_made(
    content: str | None, calls: list[ToolCall], as_tuple: bool, known: bool
) -> None:
    made_of = tuple(calls) if as_tuple else calls
    if content is None and not calls:
        content = ""  # (as `ModelResponse.to_message` makes it)
    reply = assistant_message(content, made_of)  # type: ignore[arg-type]  # lists too
    dumped = _reply_json(reply, content if known else _UNKNOWN, made_of)  # type: ignore[arg-type]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (pydantic may warn of the subclass's extra field)
        expected = reply.model_dump(mode="json")
    assert dumped == message_json(reply) == expected
    # (every field in order, but ``parts``: a tool message's media, left out when empty)
    assert list(dumped) == [name for name in Message.model_fields if name != "parts"]
    assert [type(call) for call in dumped["tool_calls"]] == [dict] * len(calls)  # type: ignore[union-attr]


def test_a_replys_json_holds_copies_of_its_calls_fields() -> None:
    call = ToolCall(id="c1", name="echo", arguments="{}")
    reply = assistant_message(None, (call,))

    dumped = _reply_json(reply, None, (call,))
    dumped["tool_calls"][0]["id"] = "changed"  # type: ignore[index]

    assert call.id == "c1"
