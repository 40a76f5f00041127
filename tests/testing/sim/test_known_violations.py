"""Seeds whose simulation finds a defect of the current code, each kept until it is fixed.

Each is ``xfail(strict=True, raises=InvariantError)`` with the defect as its reason, and
checks that the violation it finds is that defect's (another one fails the test outright).
When the fix merges, the seed passes, the strict xfail fails, and the seed becomes a plain
test of ``test_simulation.py``. Rerun one with ``agentfsm simulate --seed N --steps K``
(``--world`` and the fault kinds as the parameters say).
"""

from __future__ import annotations

import re

import pytest

from agentfsm.errors import InvariantError
from agentfsm.stores.memory import MemoryStore
from agentfsm.testing.sim import FaultKind, Simulation, World


class FlatWorld(World):
    """No sub-agents: the seeds find what is left without trees."""

    max_depth = 1


ALL = tuple(FaultKind)
NO_OUTAGE = tuple(kind for kind in FaultKind if kind is not FaultKind.OUTAGE)
"""Without outages (a narrower search, for seeds that need it)."""

AGENT_AHEAD = (
    "an Agent already behind the store (another process moved the run since it last read "
    "it) whose save an outage refuses, and its read-back too, stays at the last snapshot it "
    "knew stored, unsure, as docs/contract.md says; its next call reads the store first "
    "(tests/agent/test_store_outage.py pins it). The simulation's I12 check (runner._ended) "
    "still asks it to equal the store it could not read: the check must accept that case"
)


def _known(
    seed: int, steps: int, world: type[World], faults: tuple[FaultKind, ...], found: str, why: str
) -> object:
    return pytest.param(
        seed, steps, world, faults, found,
        marks=pytest.mark.xfail(strict=True, raises=InvariantError, reason=why),
        id=f"seed{seed}-{world.__name__}-{'all' if faults == ALL else 'no-outage'}",
    )  # fmt: skip


KNOWN = [
    _known(80, 100, World, ALL, r"I12 .*after a refused save the Agent is", AGENT_AHEAD),
]  # fmt: skip


@pytest.mark.parametrize(("seed", "steps", "world", "faults", "found"), KNOWN)
def test_known_violation_seed_holds(
    seed: int, steps: int, world: type[World], faults: tuple[FaultKind, ...], found: str
) -> None:
    report = Simulation(seed, MemoryStore(), steps=steps, world=world(), faults=faults).run()

    violation = report.violation
    if violation is not None and not re.search(
        found, f"{violation.invariant} {violation.message}"
    ):
        pytest.fail(f"seed {seed} finds another violation than the known one:\n{report.failure()}")
    report.raise_if_violated()
