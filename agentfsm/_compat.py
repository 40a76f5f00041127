"""Small shims for the oldest supported Python (3.10)."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # pragma: no cover - exercised only on Python 3.10
    from enum import Enum

    class StrEnum(str, Enum):
        """`enum.StrEnum` for Python 3.10: members are strings and print as their value."""

        def __str__(self) -> str:
            return str(self.value)


__all__ = ["StrEnum"]
