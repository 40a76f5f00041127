"""A tool message's media in each API's request form (agentfsm.llm._media): one rule each."""

from __future__ import annotations

import base64
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentfsm.llm._anthropic_convert import conversation
from agentfsm.llm._media import IMAGE_TYPES, chat_messages
from agentfsm.llm._responses_convert import input_items
from agentfsm.states.content import ContentPart
from agentfsm.states.messages import Message, ToolCall

PNG = ContentPart.media("image", "image/png", "iVBORw0KGgo=")
TIFF = ContentPart.media("image", "image/tiff", "SUkqAA==")
WAV = ContentPart.media("audio", "audio/wav", "UklGRg==")
PDF = ContentPart.media("file", "application/pdf", "JVBERi0=", uri="file:///r/report.pdf")
CALLS = (ToolCall(id="a", name="chart"), ToolCall(id="b", name="chart"))


def conversation_with(*parts: ContentPart) -> list[Message]:
    return [
        Message.user("Draw"),
        Message.assistant(tool_calls=CALLS),
        Message.tool("a", "first", name="chart", parts=parts),
        Message.tool("b", "second", name="chart", parts=(PNG,)),
        Message.assistant("Done."),
    ]


def test_without_parts_chat_messages_are_each_message_s_own_form() -> None:
    plain = [Message.user("hi"), Message.assistant(tool_calls=CALLS[:1]), Message.tool("a", "x")]
    assert chat_messages(plain) == [m.to_openai() for m in plain]


def test_chat_images_follow_the_round_s_tool_messages_never_between_them() -> None:
    sent = chat_messages(conversation_with(PNG, WAV))

    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool", "user", "assistant"]
    images = sent[4]["content"]
    assert isinstance(images, list)
    assert [part["type"] for part in images] == ["text", "image_url", "image_url"]  # type: ignore[index]
    assert images[1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
    }
    assert sent[2]["content"] == (
        "first\n[image image/png, 8 bytes: sent next]\n"
        "[audio audio/wav, 4 bytes: not shown to this model]"
    )


@pytest.mark.parametrize("part", [WAV, TIFF, PDF], ids=["audio", "tiff", "pdf"])
def test_chat_media_it_cannot_take_is_a_placeholder_never_base64(part: ContentPart) -> None:
    sent = chat_messages(conversation_with(part))
    assert part.data not in json.dumps(sent)
    assert part.placeholder() in str(sent[2]["content"])


def test_responses_output_holds_images_and_pdfs_as_input_parts() -> None:
    items = input_items(conversation_with(PNG, PDF, WAV))
    (first, _) = [i for i in items if i.get("type") == "function_call_output"]

    assert first["output"] == [
        {
            "type": "input_text",
            "text": "first\n[audio audio/wav, 4 bytes: not shown to this model]",
        },
        {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
        {
            "type": "input_file",
            "file_data": "data:application/pdf;base64,JVBERi0=",
            "filename": "report.pdf",
        },
    ]


def test_anthropic_tool_result_holds_image_and_document_blocks() -> None:
    _, turns = conversation(conversation_with(PNG, PDF, TIFF))
    result = turns[2]["content"][0]  # type: ignore[index]

    assert result["content"] == [  # type: ignore[index]
        {"type": "text", "text": f"first\n{TIFF.placeholder()}"},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
        },
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
        },
    ]


def test_a_tool_message_with_only_media_sends_no_empty_text() -> None:
    only = [Message.assistant(tool_calls=CALLS[:1]), Message.tool("a", "", parts=(PNG,))]
    _, turns = conversation(only)
    (output,) = [i["output"] for i in input_items(only) if i.get("type") == "function_call_output"]

    assert [block["type"] for block in turns[1]["content"][0]["content"]] == ["image"]  # type: ignore[index]
    assert [part["type"] for part in output] == ["input_image"]  # type: ignore[index, union-attr]


MIMES = {
    "image": ["image/png", "image/jpeg", "image/gif", "image/webp", "image/tiff"],
    "audio": ["audio/wav", "audio/mpeg"],
    "file": ["application/pdf", "application/zip"],
}
media = st.sampled_from(sorted(MIMES)).flatmap(
    lambda kind: st.builds(
        lambda mime, raw: ContentPart.media(kind, mime, base64.b64encode(raw).decode()),  # type: ignore[arg-type]
        st.sampled_from(MIMES[kind]),
        st.binary(min_size=12, max_size=24),
    )
)
words = st.text(alphabet=" .,;:!?()", max_size=6)  # no base64 character: no false match


def _texts(value: object) -> list[str]:
    if isinstance(value, dict):
        found = []
        for key, item in value.items():
            if key in ("text", "content", "output") and isinstance(item, str):
                found.append(item)
            else:
                found.extend(_texts(item))
        return found
    if isinstance(value, list):
        return [text for item in value for text in _texts(item)]
    return []


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(words, st.lists(media, max_size=3)), min_size=1, max_size=3))
def test_no_api_ever_gets_base64_as_text_and_each_image_once_as_its_own_part(
    rounds: list[tuple[str, list[ContentPart]]],
) -> None:
    messages: list[Message] = [Message.user("go")]
    for index, (text, parts) in enumerate(rounds):
        call = ToolCall(id=f"c{index}", name="t")
        messages += [
            Message.assistant(tool_calls=(call,)),
            Message.tool(call.id, text, parts=tuple(parts)),
        ]
    parts = [part for _, round_parts in rounds for part in round_parts]
    sent = {
        "chat": chat_messages(messages),
        "responses": input_items(messages),
        "anthropic": conversation(messages)[1],
    }
    for api, body in sent.items():
        dumped = json.dumps(body)

        def shown(part: ContentPart, api: str = api) -> bool:
            if part.type == "image":
                return part.mime_type in IMAGE_TYPES
            return part.mime_type == "application/pdf" and api != "chat"

        for part in parts:
            assert not any(str(part.data) in text for text in _texts(body)), api
            alike = [other for other in parts if other.data == part.data]
            whole = re.findall(r'(?<=[,"])' + re.escape(str(part.data)) + '"', dumped)
            assert len(whole) == sum(map(shown, alike)), api
