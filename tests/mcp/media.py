"""An MCP server whose tool answers with media, written with the official SDK; also over stdio.

``python tests/mcp/media.py`` serves `media_server` on stdin/stdout. Its ``chart`` tool
answers with text for the model, a PNG image, a WAV clip, a note for the user only
(``audience: ["user"]``) and a note for the model only (``audience: ["assistant"]``).
"""

from __future__ import annotations

import base64
import struct
import sys
from pathlib import Path

from mcp import types
from mcp.server.mcpserver import MCPServer

if not __package__:  # run as a script (``python tests/mcp/media.py``): `tests` from the root
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.images import png

READ_ONLY = types.ToolAnnotations(read_only_hint=True)


def _png(width: int = 40, height: int = 30) -> bytes:
    """A real PNG of a deterministic pattern (a few KB, as a small chart's image)."""
    rows = b"".join(
        b"\x00" + bytes(((x * 7 + y * 13) ^ (x * y)) % 256 for x in range(width * 3))
        for y in range(height)
    )
    return png(width, height, rows)


def _wav(samples: int = 400) -> bytes:
    """A short mono 8 kHz 8-bit WAV clip."""
    data = bytes((i * 5) % 256 for i in range(samples))
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 8000, 1, 8)
    return (
        b"RIFF"
        + struct.pack("<I", 36 + len(data))
        + b"WAVEfmt "
        + struct.pack("<I", 16)
        + fmt
        + b"data"
        + struct.pack("<I", len(data))
        + data
    )


PNG = _png()
IMAGE = base64.b64encode(PNG).decode()
"""The image's base64, as it travels in MCP."""
AUDIO = base64.b64encode(_wav()).decode()
"""The clip's base64."""
MODEL_TEXT = "Sales rose 12% in March."
USER_TEXT = "Chart rendered for Ada (shown to you only)."
ASSISTANT_TEXT = "Cite the March figure."


def media_server() -> MCPServer:
    """The server with its one tool, ``chart``."""
    server = MCPServer("media")

    @server.tool(annotations=READ_ONLY)
    def chart() -> types.CallToolResult:
        """Draw the sales chart."""
        return types.CallToolResult(
            content=[
                types.TextContent(type="text", text=MODEL_TEXT),
                types.ImageContent(type="image", data=IMAGE, mime_type="image/png"),
                types.AudioContent(type="audio", data=AUDIO, mime_type="audio/wav"),
                types.TextContent(
                    type="text", text=USER_TEXT, annotations=types.Annotations(audience=["user"])
                ),
                types.TextContent(
                    type="text",
                    text=ASSISTANT_TEXT,
                    annotations=types.Annotations(audience=["assistant"]),
                ),
            ]
        )

    return server


if __name__ == "__main__":
    sys.exit(media_server().run("stdio"))
