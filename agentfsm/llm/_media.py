"""A tool message's media (`Message.parts`) in each model API's own content form.

- An image (PNG, JPEG, GIF, WebP): Chat Completions, an ``image_url`` part of a user message
  after the round's tool messages; Responses, an ``input_image`` in the
  ``function_call_output``; Anthropic, an ``image`` block in the ``tool_result``.
- A PDF file: Responses, an ``input_file``; Anthropic, a ``document`` block; Chat
  Completions, a placeholder.
- Audio, other files, other image types: a placeholder everywhere.

A Chat Completions tool message takes text only (``content``: a string or text parts), so an
image goes in a ``user`` message sent right after the round's tool messages (never between
two of them). A placeholder (`ContentPart.placeholder`: kind, MIME type, size) is added to
the tool message's text wherever media cannot go; base64 never reaches a text part.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentfsm.states.content import ContentPart
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import Message

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image types all three APIs take."""
PDF = "application/pdf"


def data_url(part: ContentPart) -> str:
    """The part as a ``data:`` URL (what OpenAI's APIs take for inline media)."""
    return f"data:{part.mime_type};base64,{part.data}"


def _image(part: ContentPart) -> bool:
    return part.type == "image" and part.mime_type in IMAGE_TYPES


def _pdf(part: ContentPart) -> bool:
    return part.type == "file" and part.mime_type == PDF


def _text(message: Message, notes: Sequence[str]) -> str:
    return "\n".join(text for text in (message.content or "", *notes) if text)


def chat_messages(messages: Sequence[Message]) -> list[JSONObject]:
    """The conversation as Chat Completions messages, each round's images after its round."""
    if not any(message.parts for message in messages):
        return [message.to_openai() for message in messages]
    out: list[JSONObject] = []
    images: list[tuple[str, ContentPart]] = []
    for message in messages:
        if images and message.role != "tool":
            out.append(_images_message(images))
            images = []
        sent = message.to_openai()
        if message.parts:
            notes = []
            for part in message.parts:
                if _image(part):
                    images.append((message.tool_call_id or "", part))
                    notes.append(f"[image {part.mime_type}, {part.size:,} bytes: sent next]")
                else:
                    notes.append(part.placeholder())
            sent["content"] = _text(message, notes)
        out.append(sent)
    if images:
        out.append(_images_message(images))
    return out


def _images_message(images: list[tuple[str, ContentPart]]) -> JSONObject:
    calls = ", ".join(dict.fromkeys(call_id for call_id, _ in images))
    content: list[JSONValue] = [
        {"type": "text", "text": f"The images the tool calls {calls} returned:"}
    ]
    content.extend(
        {"type": "image_url", "image_url": {"url": data_url(part)}} for _, part in images
    )
    return {"role": "user", "content": content}


def responses_output(message: Message) -> str | list[JSONValue]:
    """A tool message as a ``function_call_output``'s ``output``: text, or text and media."""
    if not message.parts:
        return message.content or ""
    media: list[JSONValue] = []
    notes = []
    for part in message.parts:
        if _image(part):
            media.append({"type": "input_image", "image_url": data_url(part)})
        elif _pdf(part):
            name = (part.uri or "document.pdf").rsplit("/", 1)[-1]
            media.append({"type": "input_file", "file_data": data_url(part), "filename": name})
        else:
            notes.append(part.placeholder())
    text = _text(message, notes)
    return [{"type": "input_text", "text": text}, *media] if text else media


def anthropic_result(message: Message) -> str | list[JSONValue]:
    """A tool message as a ``tool_result`` block's ``content``: text, or text and media."""
    if not message.parts:
        return message.content or ""
    media: list[JSONValue] = []
    notes = []
    for part in message.parts:
        if _image(part) or _pdf(part):
            source: JSONObject = {
                "type": "base64",
                "media_type": part.mime_type,
                "data": part.data,
            }
            media.append({"type": "image" if _image(part) else "document", "source": source})
        else:
            notes.append(part.placeholder())
    text = _text(message, notes)
    return [{"type": "text", "text": text}, *media] if text else media
