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

REQUEST_LEAVES_GRANDCHILD_BUSY = (
    "a cancel of a middle run of a tree (taken up after crashes, during an outage) stores it "
    "failed while its own child, the grandchild, is left busy (I14; 1 of 300 seeds)"
)


def _known(
    seed: int, steps: int, world: type[World], faults: tuple[FaultKind, ...], found: str, why: str
) -> object:
    return pytest.param(
        seed, steps, world, faults, found,
        marks=pytest.mark.xfail(strict=True, raises=InvariantError, reason=why),
        id=f"seed{seed}-{world.__name__}-{'all' if faults == ALL else 'no-outage'}",
    )  # fmt: skip


BUSY_CHILD = r"I14 .*run '[^']+' is {} while its child '[^']+' is busy"
KNOWN = [
    _known(24, 100, World, ALL, BUSY_CHILD.format("failed"), REQUEST_LEAVES_GRANDCHILD_BUSY),
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
