"""`FakeClock`: a clock for tests that moves only when told."""

from __future__ import annotations


class FakeClock:
    """A clock that moves only when told: pass it as an Agent's ``clock``.

    Example:
        >>> clock = FakeClock(start=100.0)
        >>> clock.advance(60)
        >>> clock()
        160.0

    Args:
        start: The time it starts at, in seconds since the epoch.
    """

    __slots__ = ("now",)

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start
        """The current time."""

    def __call__(self) -> float:
        """The current time."""
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds``."""
        self.now += seconds
