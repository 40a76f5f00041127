"""Errors the testing kit raises: broken invariants and injected faults."""

from __future__ import annotations


class InvariantError(AssertionError):
    """An invariant of the contract does not hold (raised by `agentfsm.testing`'s checks).

    Attributes:
        invariant: Which one (``"I7"``…).
    """

    def __init__(self, invariant: str, message: str) -> None:
        self.invariant = invariant
        super().__init__(f"{invariant} violated: {message}")


class InjectedError(RuntimeError):
    """The `Exception` a fault armed by the testing kit raises (`agentfsm.testing.faults`).

    Like `InvariantError`, it belongs to tests: a run never raises it on its own.
    """


class InjectedInterrupt(BaseException):
    """The `BaseException` a fault armed by the testing kit raises.

    It is neither an `Exception`, a `KeyboardInterrupt` nor a `SystemExit`, so it stands for
    any other escape a step must survive (I12).
    """


class ProcessCrashed(InjectedInterrupt):
    """A simulated process crashed (`agentfsm.testing.sim`): whatever it still does fails.

    Raised inside the crashed process only, at its next touch of the store, the model or a
    tool's side effect, so nothing it does after the crash reaches the outside world.
    """
