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
"""Without outages, which find the Agent-ahead defect first in most seeds."""

CHILD_CONFLICT = (
    "edges-agent: a conflict on a child run's save (another process wrote the child, or "
    "an injected one) is recorded as the child's failure (SubAgentError): the parent holds "
    "an error for a child that answered, or rests while its child is busy or absent (I14)"
)
CHILD_ACK_LOST = (
    "edges-agent: a child run's save whose acknowledgement is lost (it committed) is recorded "
    "as the child's failure: the parent completes while its child is left busy (I14)"
)
CHILD_SAVE_FAILED = (
    "edges-agent: a child run's first save failing before its commit is recorded as the "
    "child's failure, and the parent comes to rest with its child absent (I14)"
)
CANCELLED_DELEGATION = (
    "edges-agent (tree checker vs recorder): a parent cancelled after its 'delegated' was "
    "stored but before its child was (a crash in between) answers the call 'cancelled' and "
    "never stores the child, while assert_tree_valid wants the child to exist (I14)"
)
AGENT_AHEAD = (
    "edges-agent: a save refused during a store outage, whose reload fails too, leaves the "
    "Agent ahead of the store (not what the store holds, I12), so what it does next (an "
    "approval) can be lost"
)
REQUEST_LEAVES_CHILD_BUSY = (
    "edges-agent: a parent taken up after a crash, cancelled or paused before it takes its "
    "busy child up again, comes to rest (failed, paused) with the stored child left busy (I14)"
)
FORKED_NESTED_WAIT = (
    "edges-stores: a fork of a run waiting on its child's approval keeps the pending "
    "addresses of its origin ('r1/c1x1/…' in fork 'f5'): not calls of the fork (I6)"
)
REQUEST_MID_CALL = (
    "a cancel or pause asked for while a restored run settles a call whose outcome is unknown is "
    "recorded right after the call's tool_started, not at a step boundary: the log does not "
    "replay (I10)"
)
STARTED_TWICE = (
    "an idempotent call run again after a crash is recorded with two tool_started records; "
    "replaying them gives started=('c1x0', 'c1x0'), the stored snapshot has ('c1x0',) (I10)"
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
ABSENT_CHILD = r"I14 .*is at rest, child '[^']+' absent"
KNOWN = [
    _known(4, 100, World, ALL, r"I14 .*child '[^']+' answered '[^']*', but its result is",
           CHILD_CONFLICT),
    _known(19, 100, World, ALL, BUSY_CHILD.format("requires_action"), CHILD_CONFLICT),
    _known(57, 100, World, ALL, ABSENT_CHILD, CHILD_CONFLICT),
    _known(25, 100, World, ALL, BUSY_CHILD.format("completed"), CHILD_ACK_LOST),
    _known(40, 100, World, ALL, ABSENT_CHILD, CHILD_SAVE_FAILED),
    _known(40, 100, World, NO_OUTAGE, ABSENT_CHILD, CANCELLED_DELEGATION),
    _known(3, 100, World, ALL, r"I12 .*after a refused save the Agent is", AGENT_AHEAD),
    _known(99, 100, World, ALL, BUSY_CHILD.format("failed"), REQUEST_LEAVES_CHILD_BUSY),
    _known(50, 100, World, ALL, BUSY_CHILD.format("paused"), REQUEST_LEAVES_CHILD_BUSY),
    _known(13, 100, World, ALL, r"I6 .*run 'f5': pending \['r1/", FORKED_NESTED_WAIT),
    _known(7, 100, World, ALL, r"I10 .*event 'pause' is not allowed in state 'busy'",
           REQUEST_MID_CALL),
    _known(11, 150, FlatWorld, NO_OUTAGE, r"I10 .*event '(cancel|pause)' is not allowed",
           REQUEST_MID_CALL),
    _known(51, 100, World, ALL, r"I10 .*started is \('c1x0', 'c1x0'\)", STARTED_TWICE),
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
