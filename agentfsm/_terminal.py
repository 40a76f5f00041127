r"""Text for a terminal: control characters neutralised, so stored data cannot drive it.

A stored field (a run id, a model-written ``ask_user`` question, a tool's output) may hold
escape sequences that would move the cursor, retitle the window, hide text or fake lines.
The CLI prints everything through `terminal_safe` (or a `TerminalSafe` stream), which shows
each such character as a visible ``\xNN`` / ``\uNNNN`` escape instead.
"""

from __future__ import annotations

import io
import unicodedata
from typing import TextIO

_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Bidirectional controls: they reorder what the terminal shows (Trojan Source)."""


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _unsafe(char: str, keep: str) -> bool:
    if char in keep:
        return False
    return unicodedata.category(char) == "Cc" or char in _BIDI


def terminal_safe(text: str, *, keep: str = "") -> str:
    r"""``text`` with every control character (but those in ``keep``) shown as an escape.

    Args:
        text: What is about to be printed.
        keep: Control characters to let through, e.g. ``"\n"`` for a multi-line report.
    """
    if text.isprintable() and not any(c in _BIDI for c in text):
        return text  # the common case costs one scan
    return "".join(_escape(c) if _unsafe(c, keep) else c for c in text)


class TerminalSafe(io.TextIOBase):
    """A text stream that writes to another with control characters neutralised.

    Newlines and tabs pass: the CLI's own layout uses them. Data that must stay on one
    line is escaped with `terminal_safe` before it is formatted.

    Args:
        target: Where the text goes (``sys.stdout``).
    """

    def __init__(self, target: TextIO) -> None:
        super().__init__()
        self._target = target

    def write(self, text: str) -> int:
        """Write ``text``, neutralised; returns the length of ``text``."""
        self._target.write(terminal_safe(text, keep="\n\t"))
        return len(text)

    def flush(self) -> None:
        """Flush the target stream."""
        self._target.flush()
