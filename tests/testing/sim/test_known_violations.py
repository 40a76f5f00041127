"""Seeds whose simulation finds a defect of the current code, each kept until it is fixed.

Each is ``xfail(strict=True)`` with the defect as its reason: when the fix merges, the seed
passes, the strict xfail fails, and the seed becomes a plain test of
``test_simulation.py``. Rerun one with ``agentfsm simulate --seed N --steps K``.
"""

from __future__ import annotations

import pytest

from agentfsm.stores.memory import MemoryStore
from agentfsm.testing.sim import Simulation, World


class FlatWorld(World):
    """No sub-agents: the seeds find what is left without trees."""

    max_depth = 1


CHILD_SAVE_FAILED = (
    "edges-agent: a save of a child run that fails before its commit (StoreWriteError) is "
    "recorded as the child's failure (SubAgentError) though the child is not even stored: "
    "the parent comes to rest with its child absent (I14)"
)
CHILD_ACK_LOST = (
    "edges-agent: a child run's save whose acknowledgement is lost (it committed) is recorded "
    "as the child's failure: the child answered (or is left busy) while its parent holds a "
    "SubAgentError for it (I14)"
)
CANCELLED_DELEGATION = (
    "edges-agent (tree checker vs recorder): a parent cancelled after its 'delegated' was "
    "stored but before its child was (a crash in between) answers the call 'cancelled' and "
    "never stores the child; assert_tree_valid wants the child to exist (I14)"
)
FORKED_NESTED_WAIT = (
    "edges-stores: a fork of a run waiting on its child's approval keeps the pending "
    "addresses of its origin ('r2/c1x0/…' in fork 'f6'): not calls of the fork (I6)"
)
CANCEL_MID_CALL = (
    "a cancel asked for while a restored run settles a call whose outcome is unknown is "
    "recorded right after the call's tool_started, not at a step boundary: the log does not "
    "replay (I10)"
)
RELOAD_FAILED = (
    "edges-agent: a save refused during a store outage, whose reload fails too, leaves the "
    "Agent ahead of the store (a new turn 'busy' in memory, 'failed' turn 1 stored): not "
    "what the store holds (I12), so what it does next (an approval) can be lost"
)
STARTED_TWICE = (
    "an idempotent call run again after a crash is recorded with two tool_started records; "
    "replaying them gives started=('c1x0', 'c1x0'), the stored snapshot has ('c1x0',) (I10)"
)

KNOWN = [
    pytest.param(2, 100, World, marks=pytest.mark.xfail(strict=True, reason=CHILD_SAVE_FAILED),
                 id="seed2-child-save-failed"),
    pytest.param(14, 100, World, marks=pytest.mark.xfail(strict=True, reason=CHILD_ACK_LOST),
                 id="seed14-child-ack-lost"),
    pytest.param(4, 100, World, marks=pytest.mark.xfail(strict=True, reason=CHILD_ACK_LOST),
                 id="seed4-child-left-busy"),
    pytest.param(13, 100, World, marks=pytest.mark.xfail(strict=True, reason=CANCELLED_DELEGATION),
                 id="seed13-cancelled-delegation"),
    pytest.param(16, 150, World, marks=pytest.mark.xfail(strict=True, reason=FORKED_NESTED_WAIT),
                 id="seed16-forked-nested-wait"),
    pytest.param(42, 150, FlatWorld, marks=pytest.mark.xfail(strict=True, reason=CANCEL_MID_CALL),
                 id="seed42-flat-cancel-mid-call"),
    pytest.param(73, 100, World, marks=pytest.mark.xfail(strict=True, reason=RELOAD_FAILED),
                 id="seed73-outage-agent-ahead"),
    pytest.param(51, 100, World, marks=pytest.mark.xfail(strict=True, reason=STARTED_TWICE),
                 id="seed51-started-twice"),
]  # fmt: skip


@pytest.mark.parametrize(("seed", "steps", "world"), KNOWN)
def test_known_violation_seed_holds(seed: int, steps: int, world: type[World]) -> None:
    report = Simulation(seed, MemoryStore(), steps=steps, world=world()).run()
    report.raise_if_violated()
