"""New run ids, drawn from a pool filled by one ``os.urandom`` call per `POOL` ids.

An Agent is built per run, and a system call per run id is a measurable part of what a
short run costs. Each id is still 16 bytes of ``os.urandom`` made a UUID 4 (as `uuid.uuid4` does),
and used once: the pool is a list popped from (atomic: any thread may draw), refilled when
empty, and emptied in a forked child (which must not draw the ids its parent will).
"""

from __future__ import annotations

import os

POOL = 64
"""How many ids one refill makes."""

_pool: list[str] = []


def _forget() -> None:  # pragma: no cover - runs in a forked child
    _pool.clear()


os.register_at_fork(after_in_child=_forget)


_CLEAR = sum(~((0xF000 << 64) | (0xC000 << 48)) % (1 << 128) << 128 * k for k in range(POOL))
"""Per 16 bytes, what `uuid.uuid4` overwrites (its version and variant bits), cleared."""
_SET = sum(((4 << 76) | (0x8000 << 48)) << 128 * k for k in range(POOL))
"""Per 16 bytes, what it writes there: version 4, the RFC 4122 variant."""


def ids_of(raw: bytes) -> list[str]:
    """``[uuid.UUID(bytes=b, version=4).hex for b in <raw's 16-byte blocks>]``, in one go.

    Args:
        raw: ``16 * POOL`` random bytes.
    """
    number = int.from_bytes(raw, "big") & _CLEAR | _SET
    text = format(number, f"0{32 * POOL}x")
    return [text[at : at + 32] for at in range(0, 32 * POOL, 32)]


def _fill() -> str:
    """Refill the pool with ``POOL - 1`` new ids; return one more."""
    fresh = ids_of(os.urandom(16 * POOL))
    first = fresh.pop()
    _pool.extend(fresh)
    return first


def draw_run_id() -> str:
    """A new run's id: ``uuid.uuid4().hex``, from the pool (refilled when empty)."""
    try:
        return _pool.pop()
    except IndexError:
        return _fill()
