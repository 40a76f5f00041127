"""`FakeClock`: a clock for tests that moves only when told."""

from __future__ import annotations

from agentfsm import _checks


class FakeClock:
    """A clock that moves only when told: pass it as an Agent's ``clock``.

    Example:
        >>> clock = FakeClock(start=100.0)
        >>> clock.advance(60)
        >>> clock()
        160.0

    Args:
        start: The time it starts at, in seconds since the epoch.

    Raises:
        TypeError: ``start`` is not a number.
        ValueError: ``start`` is not finite.
    """

    __slots__ = ("now",)

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        if not _checks.is_time(start):
            allowed = "a finite time (seconds since the epoch)"
            if not _checks.is_number(start):
                _checks.refuse_type("start", start, allowed)
            raise ValueError(f"start must be {allowed}, not {_checks.given(start)}")
        self.now = start
        """The current time."""

    def __call__(self) -> float:
        """The current time."""
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds`` (a clock never goes back).

        Raises:
            TypeError: ``seconds`` is not a number.
            ValueError: ``seconds`` is negative or not finite.
        """
        _checks.seconds("seconds", seconds, zero=True)
        self.now += seconds
