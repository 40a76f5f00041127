"""`ToolContent`: a tool's value with media for the model and content for the user only.

A body returns a `ToolContent` instead of a plain value when its answer has more than JSON:
images, audio or files the model should see in its own content form (`ContentPart` media,
carried by the call's tool message as `Message.parts`), or content meant for the user only,
never shown to the model (recorded as a ``user_content`` record and told to the run's
listeners). `agentfsm.tools.mcp` returns one for an MCP answer with such blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from agentfsm.states.content import MEDIA_TYPES, ContentPart
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import Message

__all__ = ["ContentPart", "ToolContent", "ToolReply"]


@dataclass(frozen=True, slots=True)
class ToolContent:
    """What a tool body returns when its answer has media or content for the user only.

    Example:
        >>> image = ContentPart.media("image", "image/png", "iVBORw0KGgo=")
        >>> ToolContent("a chart", parts=(image,), for_user=(ContentPart.of_text("Hi"),)).value
        'a chart'

    Raises:
        TypeError: ``parts`` holds a text part or anything not a media `ContentPart` (text
            belongs in ``value``), or ``for_user`` anything not a `ContentPart`.
    """

    value: JSONValue = None
    """The result as JSON, as a plain body's return value (the tool message's text; a str
    as it is, anything else as JSON text, nothing when None)."""
    parts: tuple[ContentPart, ...] = ()
    """Media for the model (images, audio, files), after the text."""
    for_user: tuple[ContentPart, ...] = ()
    """Content for the user only (text or media): recorded and told, never sent to the
    model."""

    def __post_init__(self) -> None:
        for name, allowed, kinds in (
            ("parts", "media ContentParts (image, audio, file)", MEDIA_TYPES),
            ("for_user", "ContentParts", MEDIA_TYPES | {"text"}),
        ):
            for index, part in enumerate(getattr(self, name)):
                if not isinstance(part, ContentPart) or part.type not in kinds:
                    raise TypeError(
                        f"ToolContent.{name} must hold {allowed}; [{index}] is {part!r}"
                    )


def content_json(content: ToolContent) -> JSONObject:
    """A `ToolContent`'s parts as JSON (its value aside), for `content_of` to read back."""
    return {
        "parts": [part.model_dump(mode="json") for part in content.parts],
        "for_user": [part.model_dump(mode="json") for part in content.for_user],
    }


def content_of(value: JSONValue, parts: JSONObject) -> ToolContent:
    """The `ToolContent` of ``value`` and parts `content_json` gave (from another process)."""
    return ToolContent(value, _parts(parts.get("parts")), _parts(parts.get("for_user")))


def _parts(items: JSONValue) -> tuple[ContentPart, ...]:
    if not isinstance(items, list):
        return ()
    return tuple(ContentPart.model_validate(item) for item in items)


class ToolReply(NamedTuple):
    """A call's tool-message text with its media, and its content for the user only.

    What the `ToolSystem` answers a call with when its body returned a `ToolContent`.
    """

    text: str
    """The tool message's text."""
    parts: tuple[ContentPart, ...]
    """The tool message's media."""
    for_user: tuple[ContentPart, ...]
    """What only the user is shown."""

    def message(self, call_id: str, name: str | None) -> Message:
        """The tool message answering ``call_id``."""
        return Message.tool(call_id, self.text, name=name, parts=self.parts)
