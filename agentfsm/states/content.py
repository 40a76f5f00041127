"""`ContentPart`: a piece of a tool's result that is not its JSON text (an image, audio, a file).

A tool message carries its result as text (`Message.content`) and, beside it, the media the
tool returned (`Message.parts`): each model client gives them to its API in the API's own
content form (an image block, an ``input_image`` item…), or, where the API takes no such
media, as a short placeholder naming the kind, the MIME type and the size, never as base64
text. Content a tool means for the user only (an MCP block with ``audience: ["user"]``) is
made of the same parts, text included, and recorded as a ``user_content`` record instead.
"""

from __future__ import annotations

import binascii
from base64 import b64decode
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

PartType = Literal["text", "image", "audio", "file"]
"""What a part holds: text, or base64 media (an image, audio, or any other file)."""

MEDIA_TYPES: frozenset[str] = frozenset({"image", "audio", "file"})
"""The part types that hold base64 data."""


class ContentPart(BaseModel):
    """One piece of content: text, or media as base64 with its MIME type.

    Example:
        >>> part = ContentPart.media("image", "image/png", "iVBORw0KGgo=")
        >>> (part.size, part.placeholder())
        (8, '[image image/png, 8 bytes: not shown to this model]')
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: PartType
    """What the part holds."""
    text: str | None = None
    """The text of a ``text`` part (None for media)."""
    mime_type: str | None = None
    """The MIME type of a media part (``image/png``, ``audio/wav``, ``application/pdf``)."""
    data: str | None = None
    """A media part's bytes, base64-encoded (as MCP and the model APIs carry them)."""
    uri: str | None = None
    """Where a media part came from, if it says (an MCP resource's URI); else None."""

    @model_validator(mode="after")
    def _fits_its_type(self) -> ContentPart:
        if self.type == "text":
            if self.text is None or self.data is not None or self.mime_type is not None:
                raise ValueError("a 'text' part has text, and no data or mime_type")
            return self
        if self.text is not None or not self.mime_type or self.data is None:
            raise ValueError(f"an {self.type!r} part has a mime_type and base64 data, and no text")
        try:
            b64decode(self.data, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"the data of an {self.type!r} part is not base64") from None
        return self

    @classmethod
    def of_text(cls, text: str) -> ContentPart:
        """A text part."""
        return cls(type="text", text=text)

    @classmethod
    def media(
        cls,
        kind: Literal["image", "audio", "file"],
        mime_type: str,
        data: str,
        uri: str | None = None,
    ) -> ContentPart:
        """A media part of ``kind``: ``data`` is base64 (checked)."""
        return cls(type=kind, mime_type=mime_type, data=data, uri=uri)

    @property
    def size(self) -> int:
        """The number of bytes a media part's data decodes to (0 for text)."""
        if self.data is None:
            return 0
        return len(self.data) * 3 // 4 - self.data[-2:].count("=")

    def placeholder(self) -> str:
        """What a model that cannot take this media reads instead: kind, type and size."""
        where = f" {self.uri}" if self.uri else ""
        return (
            f"[{self.type} {self.mime_type}{where}, {self.size:,} bytes: not shown to this model]"
        )
