"""Real image files for tests, made in code (no fixture files to keep in sync)."""

from __future__ import annotations

import struct
import zlib


def png(width: int, height: int, rows: bytes) -> bytes:
    """A PNG of ``width`` x ``height`` RGB pixels, 8 bits each.

    Args:
        width: Pixels per row.
        height: Rows.
        rows: Each row's filter byte (0: none) and its ``width * 3`` bytes, row after row.
    """

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
