"""What a simulation reports: its seed, its trace, the faults it struck, what it found."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from agentfsm.errors import InvariantError

TRACE_TAIL = 40
"""Lines of the trace a failure shows (the last ones, where it went wrong)."""


@dataclass(frozen=True, slots=True)
class Violation:
    """The first broken invariant a simulation found."""

    invariant: str
    """Which one: ``I10``, ``I11``, ``I14``, ``accepted-undone``…"""
    step: int
    """The step after which it was found."""
    message: str
    """Where and what."""


@dataclass(slots=True)
class SimulationReport:
    """What one seed's simulation did and found."""

    seed: int
    """The seed: rerun it with ``agentfsm simulate --seed <seed>``."""
    steps: int
    """The moves it was asked to make (before the end brought every run to rest)."""
    trace: list[str] = field(default_factory=list)
    """Every move and what came of it, one line each, numbered by step."""
    faults: Counter[str] = field(default_factory=Counter)
    """Faults struck, by kind (`FaultKind`)."""
    actions: Counter[str] = field(default_factory=Counter)
    """Moves made, by kind."""
    violation: Violation | None = None
    """The first broken invariant, or None."""
    runs: int = 0
    """Runs in the store at the end (children and forks included)."""
    checks: int = 0
    """How many times the store was checked."""

    @property
    def ok(self) -> bool:
        """True when no invariant broke."""
        return self.violation is None

    def count_fault(self, kind: str) -> None:
        """Count one fault of ``kind``."""
        self.faults[str(kind)] += 1

    def summary(self) -> str:
        """One line: the seed, the steps, the runs, the faults and the outcome."""
        faults = ", ".join(f"{kind} {count}" for kind, count in sorted(self.faults.items()))
        outcome = (
            "ok"
            if self.violation is None
            else f"{self.violation.invariant} violated at step {self.violation.step}"
        )
        return (
            f"seed {self.seed}: {self.steps} steps, {self.runs} runs, {self.checks} checks, "
            f"faults: {faults or 'none'}: {outcome}"
        )

    def failure(self, tail: int = TRACE_TAIL, rerun: str | None = None) -> str:
        """The failure as a reader needs it: the violation, the trace's tail, the rerun.

        Args:
            tail: How many of the trace's last lines to show.
            rerun: The command that reruns the seed (``agentfsm simulate --seed N`` by
                default).
        """
        if self.violation is None:
            return self.summary()
        command = rerun or f"agentfsm simulate --seed {self.seed} --steps {self.steps}"
        lines = self.trace[-tail:]
        skipped = len(self.trace) - len(lines)
        return "\n".join(
            [
                f"simulation seed {self.seed} failed: {self.violation.invariant} violated "
                f"at step {self.violation.step}",
                f"  {self.violation.message}",
                f"trace ({skipped} earlier lines left out):" if skipped else "trace:",
                *(f"  {line}" for line in lines),
                f"rerun: {command}",
            ]
        )

    def raise_if_violated(self, rerun: str | None = None) -> None:
        """Raise `InvariantError` with `failure`'s text if an invariant broke."""
        if self.violation is not None:
            raise InvariantError(self.violation.invariant, "\n" + self.failure(rerun=rerun))
