"""An MCP result's content blocks as the model's text and media, and the user's own content.

Private to `agentfsm.tools.mcp` (needs the ``mcp`` extra). A block whose ``audience`` is
``["user"]`` only is for the user, never the model; any other block (no audience,
``["assistant"]``, both) is for the model. For the model, text blocks are joined one per
line (after the structured content, which wins, as before); images, audio and embedded blob
resources become media `ContentPart`s; an embedded text resource and a resource link stay
text (their JSON). An answer with no media and nothing for the user is the plain value it
always was.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

from mcp import types as mcp_types

from agentfsm.states.content import ContentPart
from agentfsm.states.json import JSONValue
from agentfsm.tools.content import ToolContent

_Kind = Literal["image", "audio", "file"]


def shaped(
    structured: JSONValue, blocks: Sequence[mcp_types.ContentBlock]
) -> JSONValue | ToolContent:
    """A successful call's value: plain JSON, or a `ToolContent` (media, user content)."""
    texts: list[str] = []
    parts: list[ContentPart] = []
    for_user: list[ContentPart] = []
    for block in blocks:
        if _user_only(block):
            for_user.append(_part(block, text_too=True))
            continue
        part = _part(block, text_too=False)
        if part.type == "text":
            texts.append(part.text or "")
        else:
            parts.append(part)
    value: JSONValue = structured if structured is not None else "\n".join(texts)
    if not parts and not for_user:
        return value
    return ToolContent(value, tuple(parts), tuple(for_user))


def model_text(blocks: Sequence[mcp_types.ContentBlock]) -> str:
    """The text blocks the model may read (not the user's own), one per line."""
    return "\n".join(
        block.text
        for block in blocks
        if isinstance(block, mcp_types.TextContent) and not _user_only(block)
    )


def _user_only(block: mcp_types.ContentBlock) -> bool:
    annotations = getattr(block, "annotations", None)
    audience = None if annotations is None else annotations.audience
    return bool(audience) and set(audience or ()) == {"user"}


def _part(block: mcp_types.ContentBlock, *, text_too: bool) -> ContentPart:
    if isinstance(block, mcp_types.TextContent):
        return ContentPart.of_text(block.text)
    if isinstance(block, mcp_types.ImageContent):
        return ContentPart.media("image", block.mime_type, block.data)
    if isinstance(block, mcp_types.AudioContent):
        return ContentPart.media("audio", block.mime_type, block.data)
    if isinstance(block, mcp_types.EmbeddedResource) and isinstance(
        block.resource, mcp_types.BlobResourceContents
    ):
        blob = block.resource
        mime = blob.mime_type or "application/octet-stream"
        return ContentPart.media(_kind(mime), mime, blob.blob, uri=str(blob.uri))
    # A text resource or a resource link: its JSON, as text (the model can name the URI).
    dumped = block.model_dump(mode="json", by_alias=True, exclude_none=True)
    return ContentPart.of_text(json.dumps(dumped, ensure_ascii=False))


def _kind(mime: str) -> _Kind:
    major = mime.split("/", 1)[0]
    if major == "image":
        return "image"
    if major == "audio":
        return "audio"
    return "file"
