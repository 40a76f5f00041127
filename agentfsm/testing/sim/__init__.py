"""Deterministic simulation: one seed drives processes, a store and faults (FoundationDB-style).

Several simulated processes, each with its own Agents, share one store; a model answers from
the stored conversation; tools write a ledger; runs delegate to sub-agents, fork, pause,
resume, cancel, wait for approvals and answers, from several processes at once. One
``random.Random(seed)`` picks every move and every fault (a crash, a save that fails before
its commit or whose acknowledgement is lost, a conflict, a timeout, a store outage), on one
event loop with no real time and no thread. After every step the store is checked (I1-I14,
replay, nothing accepted undone, no non-idempotent tool body run twice, no busy run without a
lease: over a store that keeps run leases, the Agents hold them on the simulation's clock, and
a crashed process's run is taken over once its lease expires). A failure prints its
seed and the tail of its trace; the same seed replays it exactly::

    report = Simulation(seed=7, store=MemoryStore(), steps=200).run()
    report.raise_if_violated()

or ``agentfsm simulate --seed 7``, or ``pytest --agentfsm-seed 7``. Subclass `World` to
simulate your own agent and tools (docs/simulation.md).
"""

from __future__ import annotations

from agentfsm.testing.sim.checks import Checker, lease_check
from agentfsm.testing.sim.faults import (
    FaultKind,
    FaultyStore,
    LeasingProcessStore,
    ProcessStore,
)
from agentfsm.testing.sim.report import SimulationReport, Violation
from agentfsm.testing.sim.runner import Simulation
from agentfsm.testing.sim.scheduler import Scheduler
from agentfsm.testing.sim.world import ConversationModel, Ledger, Process, World, ledger_tool

__all__ = [
    "Checker",
    "ConversationModel",
    "FaultKind",
    "FaultyStore",
    "LeasingProcessStore",
    "Ledger",
    "Process",
    "ProcessStore",
    "Scheduler",
    "Simulation",
    "SimulationReport",
    "Violation",
    "World",
    "lease_check",
    "ledger_tool",
]
