"""The Agent's side of run leases: held while a step runs, checked when a busy run is taken up.

While a step of the run runs on a store that keeps leases (`agentfsm.stores.base.leasing`),
the Agent's `Hold` is registered with the store, so that every save of the step takes,
renews or clears the run's lease in its own transaction (`agentfsm.stores.leases`), and the
store's background thread renews it between saves. `take_up` is `Agent.start`'s check of a
restored busy run: refused while another owner's lease is live (`RunBusyError`, or a
bounded wait), and a takeover of an expired one recorded (``lease_taken_over``) before the
claim, in its transaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentfsm.errors import RunBusyError
from agentfsm.states.names import RecordKind, RunState
from agentfsm.stores.base import LeasingStore, leasing, off_loop, writes_behind
from agentfsm.stores.leases import Hold, Lease
from agentfsm.stores.snapshot import Snapshot

if TYPE_CHECKING:
    from agentfsm.agent.core import Agent

POLL = 0.25
"""Seconds between two looks at a live lease while `take_up` waits for it."""


def hold(agent: Agent) -> Hold | None:
    """Register the Agent's hold on its run with its store, as a step begins (no I/O).

    Returns:
        The hold registered (to pass to `release`), or None: no lease is kept.

    Raises:
        RunBusyError: Another Agent of this process, through the same store object, drives
            the run (its hold is live).
    """
    policy = agent._lease
    store = leasing(agent.store) if policy is not None else None
    if store is None or policy is None:
        return None
    held = agent._hold
    if held is None or held.clock is not agent._clock:
        held = agent._hold = policy.hold(agent._clock)
    store.hold(agent.run_id, held)
    return held


def release(agent: Agent, held: Hold | None) -> None:
    """Unregister ``held``, as the step ends (its last save already cleared a lease at rest)."""
    store = None if held is None else leasing(agent.store)
    if store is not None and held is not None:
        store.unhold(agent.run_id, held)


async def _read(store: LeasingStore, run_id: str) -> Lease | None:
    if writes_behind(store):
        return await off_loop(lambda: store.lease(run_id))
    return store.lease(run_id)


async def _load(store: LeasingStore, run_id: str) -> Snapshot | None:
    if writes_behind(store):
        return await off_loop(lambda: store.load(run_id))
    return store.load(run_id)


async def take_up(agent: Agent) -> None:
    """Before a restored busy run is claimed: check its lease, wait if asked, record a takeover.

    A child run (of a sub-agent) waits at least one lease duration: its parent was taken
    over, and the child's lease, renewed by the same dead process, expires soon after.

    Raises:
        RunBusyError: Another owner's lease is live (after the wait, if any). Nothing was
            written, and the Agent is still the restored run (``start`` may be called again).
    """
    store, held, policy = leasing(agent.store), agent._hold, agent._lease
    if store is None or held is None or policy is None:
        return
    run_id = agent.run_id
    wait = policy.wait if agent.parent is None else max(policy.wait, policy.duration)
    deadline = agent._clock() + wait
    while True:
        lease = await _read(store, run_id)
        now = agent._clock()
        if lease is None or lease.owner == held.owner or not lease.live(now):
            break
        if now >= deadline:
            raise RunBusyError(run_id, lease.owner, lease.expires_at)
        await policy.sleep(min(POLL, deadline - now, lease.expires_at - now))
        stored = await _load(store, run_id)
        if stored is not None and stored.version != agent._version:
            # The driver went on meanwhile: the run is taken up as it is stored now.
            agent._restore(stored)
            agent._group()
            if agent.state != RunState.BUSY:
                return
    if lease is None or lease.owner == held.owner:
        return  # no lease to take over (kept by no one), or its own (taken up again)
    agent._note(
        RecordKind.LEASE_TAKEN_OVER,
        {"owner": held.owner, "previous_owner": lease.owner, "expired_at": lease.expires_at},
    )
