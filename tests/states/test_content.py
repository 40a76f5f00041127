"""`ContentPart` and a tool message's media (`Message.parts`): shape, JSON, refusals."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from agentfsm.states.content import ContentPart
from agentfsm.states.messages import Message, message_json, tool_message

PNG = ContentPart.media("image", "image/png", "iVBORw0KGgo=")


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"type": "text"}, "a 'text' part has text"),
        ({"type": "text", "text": "a", "data": "AAAA"}, "a 'text' part has text"),
        ({"type": "image", "data": "AAAA"}, "has a mime_type and base64 data"),
        ({"type": "image", "mime_type": "image/png"}, "has a mime_type and base64 data"),
        ({"type": "audio", "mime_type": "audio/wav", "data": "not base64!"}, "is not base64"),
        ({"type": "video", "mime_type": "video/mp4", "data": "AAAA"}, "type"),
    ],
    ids=["text-missing", "text-with-data", "no-mime", "no-data", "bad-base64", "unknown-type"],
)
def test_a_part_that_does_not_fit_its_type_is_refused(
    fields: dict[str, str], problem: str
) -> None:
    with pytest.raises(ValidationError, match=problem):
        ContentPart.model_validate(fields)


@settings(max_examples=25)
@given(st.binary(min_size=1, max_size=64))
def test_a_media_part_s_size_is_its_decoded_length(raw: bytes) -> None:
    part = ContentPart.media("file", "application/octet-stream", base64.b64encode(raw).decode())
    assert part.size == len(raw)
    assert str(part.data) not in part.placeholder()


def test_a_tool_message_with_parts_round_trips_and_its_fast_json_is_pydantic_s() -> None:
    message = Message.tool("c1", "a chart", name="chart", parts=(PNG,))

    assert Message.model_validate_json(message.model_dump_json()) == message
    assert message_json(message) == message.model_dump(mode="json")
    assert message_json(message)["parts"] == [PNG.model_dump(mode="json")]


def test_without_parts_a_message_s_json_is_what_it_was() -> None:
    built = tool_message("c1", "x", "t")
    assert built == Message.tool("c1", "x", name="t")
    assert "parts" not in built.model_dump(mode="json")
    assert "parts" not in message_json(built)
    assert built.parts == ()


@pytest.mark.parametrize(
    "make",
    [
        lambda: Message(role="user", content="hi", parts=(PNG,)),
        lambda: Message.tool("c1", "x", parts=(ContentPart.of_text("for the user"),)),
    ],
    ids=["user-message", "text-part"],
)
def test_only_a_tool_message_carries_parts_and_only_media(make: object) -> None:
    with pytest.raises(ValidationError, match="only a tool message carries parts"):
        make()  # type: ignore[operator]
