"""What the verifier returns: each property's verdict, counterexamples and the totals."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agentfsm.fsm.compiled import CompiledMachine
from agentfsm.verify.diagram import Counterexample, counterexample_dot, write_diagram

Status = Literal["pass", "fail", "warn", "unknown"]
"""``pass``: proved over every reachable configuration; ``fail``: a counterexample was
found; ``warn``: a warning property (`WARNINGS`) found something, and the verification was
not strict; ``unknown``: the exploration stopped early, so it was neither proved nor
refuted."""

Edge = tuple[str, str, str, str]
"""A transition: (machine, event, source, target)."""

PROPERTIES: dict[str, str] = {
    "I1": "shutdown is absorbing: no event leaves it",
    "I2": "shutdown is reachable from everywhere; no dead ends; every wait has an exit "
    "that needs no answer",
    "I3": "every state of both machines is reachable",
    "I4": "an event with no enabled transition raises IllegalTransitionError and changes nothing",
    "I5": "turn grows by exactly one per submit that starts a turn, and never otherwise",
    "I6": "in requires_action, on the Agent's paths, the pending ids are a non-empty set of "
    "calls of the need_action that entered it",
    "I8": "iteration <= max_iterations",
    "determinism": "at most one transition is enabled for any state, event and inputs",
    "bounded-loop": "every TurnLoop path ends in a final state: no loop cycle without a "
    "new iteration, no loop state that cannot end",
    "conformance": "the machines take exactly the spec table's edge (its first row whose "
    "guard holds) for every event, from every state, and none it has no row for",
    "effects": "after every transition the data is what the effect table says (every "
    "other field unchanged)",
    "exceptions": "no guard, effect or enter action raises on any explored input",
    "varied": "every field a guard or effect reads is part of a configuration and takes more "
    "than one value in the exploration",
    "agent-coverage": "every declared transition is taken on a path the Agent can produce",
    "finite": "the exploration ended: every reachable configuration was expanded",
}
"""Every property the verifier checks, in report order, with what it means."""

WARNINGS: frozenset[str] = frozenset({"varied", "agent-coverage"})
"""The properties that only warn (status ``warn``) unless the verification is strict: they
say that a pass proves less than it seems, not that a machine is wrong."""


@dataclass(frozen=True, slots=True)
class PropertyResult:
    """One property's verdict."""

    name: str
    """The property's name, e.g. ``"I2"`` or ``"determinism"``."""
    description: str
    """What it checks."""
    status: Status
    """Whether it holds."""
    counterexample: Counterexample | None = None
    """For a failure, a shortest counterexample."""

    @property
    def passed(self) -> bool:
        """True when the property was proved."""
        return self.status == "pass"


@dataclass(frozen=True, slots=True)
class VerificationReport:
    """The verifier's result: every property, and how much was explored.

    Its `str` is the table of properties followed by each counterexample.
    """

    run: str
    """The RunLifecycle class verified (its name)."""
    loop: str
    """The TurnLoop class verified (its name)."""
    properties: tuple[PropertyResult, ...]
    """Every property, in `PROPERTIES` order."""
    configurations: int
    """Reachable configurations explored."""
    transitions: int
    """Distinct transitions between them."""
    sends: int
    """Events sent to the machines, accepted or refused."""
    seconds: float
    """Wall time of the exploration and the checks."""
    machines: tuple[CompiledMachine, CompiledMachine] = field(repr=False, compare=False)
    """The compiled machines, for the counterexample diagrams."""
    covered: frozenset[Edge] = frozenset()
    """Every declared transition that some explored step took. One never taken is one the
    domains never enabled, so nothing was proved about it: extend the domains."""
    stopped: bool = False
    """True when ``fail_fast`` stopped the exploration at a failure: the properties it had
    not refuted by then (``finite`` too) are ``unknown``."""
    replayed: int = 0
    """Steps not sent again: the same move from a configuration holding the same values in
    every field an earlier step of it depended on (`agentfsm.verify.memo`), whose outcome
    was replayed. Every step explored is sent or replayed."""

    @property
    def declared(self) -> frozenset[Edge]:
        """Every transition the two machines declare."""
        return frozenset(
            (compiled.name.value, t.event, t.source, t.target)
            for compiled in self.machines
            for by_event in compiled.dispatch.values()
            for transitions in by_event.values()
            for t in transitions
        )

    @property
    def ok(self) -> bool:
        """True when every property was proved, or only warns (`WARNINGS`, not strict)."""
        return not self.failures

    @property
    def failures(self) -> tuple[PropertyResult, ...]:
        """The properties that failed, or are unknown."""
        return tuple(r for r in self.properties if r.status in ("fail", "unknown"))

    @property
    def warnings(self) -> tuple[PropertyResult, ...]:
        """The warning properties that found something (status ``warn``)."""
        return tuple(r for r in self.properties if r.status == "warn")

    def __getitem__(self, name: str) -> PropertyResult:
        for result in self.properties:
            if result.name == name:
                return result
        raise KeyError(f"no property {name!r}; properties: {', '.join(PROPERTIES)}")

    def table(self) -> str:
        """The properties as a text table, with the totals underneath."""
        width = max(len(name) for name in PROPERTIES)
        lines = [f"{'property':<{width}}  result   what it checks"]
        for result in self.properties:
            lines.append(f"{result.name:<{width}}  {result.status:<7}  {result.description}")
        lines.append(
            f"{self.configurations} configurations, {self.transitions} transitions, "
            f"{self.sends} events sent, {self.replayed} steps replayed, in {self.seconds:.2f} s"
        )
        if self.stopped:
            lines.append("stopped at the first failure (fail_fast): unknown is not explored")
        declared = self.declared
        lines.append(
            f"declared transitions taken: {len(declared & self.covered)} of {len(declared)}"
        )
        lines += [
            f"  never taken: {machine} {event} {source} → {target}"
            for machine, event, source, target in sorted(declared - self.covered)
        ]
        return "\n".join(lines)

    def __str__(self) -> str:
        verdict = "all properties hold" if self.ok else f"{len(self.failures)} failed"
        if self.warnings:
            verdict += f", {len(self.warnings)} warned"
        parts = [f"agentfsm verify: {self.run} and {self.loop}: {verdict}", self.table()]
        parts += [str(r.counterexample) for r in self._found() if r.counterexample]
        return "\n\n".join(parts)

    def dot(self, name: str | None = None) -> str:
        """The counterexample of a failed property as Graphviz DOT, its path highlighted.

        Args:
            name: The property; the first failed one when None.

        Raises:
            ValueError: That property has no counterexample (it passed).
        """
        return counterexample_dot(*self.machines, self._counterexample(name))

    def write_dot(self, path: str | Path) -> list[Path]:
        """Write each counterexample's diagram; also as SVG when Graphviz's ``dot`` runs.

        The first failed property's diagram goes to ``path``; each further one to the same
        name with the property inserted (``cex.dot`` → ``cex.I2.dot``).

        Returns:
            The files written (none when every property passed).
        """
        target = Path(path)
        written: list[Path] = []
        with_examples = [r for r in self._found() if r.counterexample is not None]
        for number, result in enumerate(with_examples):
            where = target.with_name(f"{target.stem}.{result.name}{target.suffix}")
            where = target if number == 0 else where
            written += write_diagram(self.dot(result.name), where)
        return written

    def _found(self) -> tuple[PropertyResult, ...]:
        return self.failures + self.warnings

    def _counterexample(self, name: str | None) -> Counterexample:
        results = self._found() if name is None else (self[name],)
        for result in results:
            if result.counterexample is not None:
                return result.counterexample
        raise ValueError(f"no counterexample for {name or 'any property'}: it passed")
