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
    "a save refused during a store outage, whose reload fails too, leaves the Agent ahead "
    "of the store (not what the store holds, I12), so what it does next can be lost "
    "(with run leases simulated: 7 of 300 seeds)"
)
REQUEST_LEAVES_CHILD_BUSY = (
    "a parent taken up after a crash, cancelled or paused before it takes its busy child up "
    "again, comes to rest (failed, paused) with the stored child left busy (I14; with run "
    "leases simulated: 6 of 300 seeds)"
)
REQUEST_MID_CALL = (
    "a cancel or pause asked for while a restored run settles a call whose outcome is "
    "unknown is recorded right after the call's tool_started, not at a step boundary: the "
    "log does not replay (I10; with run leases simulated: 1 of 300 seeds)"
)
STARTED_TWICE = (
    "an idempotent call run again after a crash is recorded with two tool_started records; "
    "replaying them gives started=('c1x0', 'c1x0'), the stored snapshot has ('c1x0',) (I10; "
    "with run leases simulated, most often in a child taken over: 16 of 300 seeds)"
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
    _known(80, 100, World, ALL, r"I12 .*after a refused save the Agent is", AGENT_AHEAD),
    _known(117, 100, World, ALL, BUSY_CHILD.format("failed"), REQUEST_LEAVES_CHILD_BUSY),
    _known(24, 100, World, ALL, BUSY_CHILD.format("paused"), REQUEST_LEAVES_CHILD_BUSY),
    _known(216, 100, World, ALL, r"I10 .*event '(cancel|pause)' is not allowed in state 'busy'",
           REQUEST_MID_CALL),
    _known(11, 100, World, ALL, r"I10 .*started is \('c1x0', 'c1x0'\)", STARTED_TWICE),
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
