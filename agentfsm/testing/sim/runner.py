"""`Simulation`: one seed drives processes, their Agents, the store and the faults.

Each step the seed picks one move: let a waiting point go on (perhaps striking a fault
there), start a run, act on a stored run from some process (submit, approve or deny, answer,
cancel, pause, resume, expire, shut down, take a busy run up), fork a run, crash a process,
start a store outage, or move the clock. Then the loop runs until every task waits again,
and the `Checker` checks the store. At the end, faults stop, every busy run is taken up
until it comes to rest, and the store is checked once more.

Over a store that keeps run leases, the Agents hold them, judged by the simulation's clock:
when the clock moves, the live processes renew the leases of the runs they drive (a crashed
process's lease expires, and the next process to take its run up records the takeover); a
process refused with `RunBusyError` (another one's lease is live) is a legal outcome.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field

from agentfsm import _checks
from agentfsm.agent.core import Agent
from agentfsm.errors import (
    AgentFSMError,
    InvariantError,
    ProcessCrashed,
    RunBusyError,
    StoreError,
)
from agentfsm.states.names import RunState
from agentfsm.stores.base import RunStore, leasing
from agentfsm.stores.forking import AddMessage, fork
from agentfsm.testing.clock import FakeClock
from agentfsm.testing.invariants import DurabilityProbe
from agentfsm.testing.sim.checks import Checker, lease_check
from agentfsm.testing.sim.faults import (
    SAVE_FAULTS,
    WORK_FAULTS,
    FaultKind,
    FaultyStore,
    LeasingProcessStore,
)
from agentfsm.testing.sim.report import SimulationReport, Violation
from agentfsm.testing.sim.scheduler import Parked, Scheduler
from agentfsm.testing.sim.world import LEASE_SECONDS, Ledger, Process, World

FAULT_RATE = 0.08
"""The chance that a point the seed lets go on strikes a fault."""
DRAIN_STEPS = 2000
"""Steps the end of a simulation may take to bring every run to rest. A tree of runs taken
up at the end may need hundreds: seed 492 (200 steps) drove a fork's three-level tree for
442 (more than the 400 allowed before, which it reported as a run left busy, I12)."""


@dataclass(slots=True)
class _Life:
    """One life of a simulated process: its Agents and the tasks running them."""

    process: Process
    agents: dict[str, Agent] = field(default_factory=dict)
    tasks: dict[str, list[asyncio.Task[None]]] = field(default_factory=dict)

    def working_on(self, run_id: str) -> bool:
        return any(not task.done() for task in self.tasks.get(run_id, ()))


class Simulation:
    """One seed's simulation of a system of processes over one store.

    Args:
        seed: Decides everything: the processes' moves, the model's answers, the faults.
        store: The shared store (a fresh, empty one): `MemoryStore`, `SQLiteStore`, yours.
        steps: How many moves to make before the end (which brings every run to rest).
        world: Builds each process's Agent (`World` by default: see it to simulate yours).
        processes: How many processes share the store.
        fault_rate: The chance that a point the seed lets go on strikes a fault.
        faults: The kinds of fault the seed may strike (all by default): narrow them to aim
            the search, or to look past a defect that every seed finds first.
    """

    def __init__(
        self,
        seed: int,
        store: RunStore,
        *,
        steps: int = 200,
        world: World | None = None,
        processes: int = 3,
        fault_rate: float = FAULT_RATE,
        faults: Collection[FaultKind] = tuple(FaultKind),
    ) -> None:
        _arguments(seed, store, steps, world, processes, fault_rate, faults)
        self.seed = seed
        self.steps = steps
        self.world = world if world is not None else World()
        self.rng = random.Random(seed)
        self.fault_rate = fault_rate
        self.kinds = frozenset(faults)
        self.clock = FakeClock()
        self.ledger = Ledger()
        self.scheduler = Scheduler()
        self.shared = FaultyStore(store, sync_fault=self._sync_fault, clock=self.clock)
        self.roots: list[str] = []
        self.leases = leasing(store) is not None
        leases = lease_check(store, agents_lease=self.leases)
        self.checker = Checker(self.shared, self.ledger, self.roots, leases)
        self.report = SimulationReport(seed=seed, steps=steps)
        self.lives: list[_Life] = []
        self._generation = [0] * processes
        self._faults_on = True
        self._step = 0
        self._violation: Violation | None = None
        for index in range(processes):
            self.lives.append(self._new_life(index))

    # -- processes ---------------------------------------------------------------------

    def _new_life(self, index: int) -> _Life:
        self._generation[index] += 1
        name = f"p{index + 1}#{self._generation[index]}"
        holder: list[_Life] = []

        async def point(label: str, run_id: str) -> FaultKind | None:
            return await self.scheduler.point(name, label, run_id)

        store = self.shared.handle(name, point, lambda: self._crash(holder[0]))
        sleep = self._lease_sleep if self.leases else None
        process = Process(name, store, self.clock, self.ledger, point, self.seed, sleep)
        life = _Life(process)
        holder.append(life)
        return life

    def _crash(self, life: _Life) -> None:
        """Kill ``life``'s process: its handle dies, its tasks are cancelled; it restarts."""
        if not life.process.alive:
            return
        life.process.store.alive = False
        self.report.count_fault(FaultKind.CRASH)
        self._trace(f"crash {life.process.name}")
        for tasks in life.tasks.values():
            for task in tasks:
                task.cancel()
        life.agents.clear()
        index = self.lives.index(life)
        self.lives[index] = self._new_life(index)

    # -- the trace and violations ----------------------------------------------------

    def _trace(self, line: str) -> None:
        self.report.trace.append(f"{self._step:4d} {line}")

    def _violated(self, error: InvariantError, where: str) -> None:
        if self._violation is None:
            self._violation = Violation(error.invariant, self._step, f"{where}: {error}")

    # -- faults ------------------------------------------------------------------------

    def _sync_fault(self) -> FaultKind | None:
        if not self._faults_on or self.rng.random() >= self.fault_rate:
            return None
        kind = self.rng.choice(SAVE_FAULTS)
        if kind not in self.kinds:
            return None
        self.report.count_fault(kind)
        self._trace(f"  sync save: {kind}")
        return kind

    def _fault_at(self, entry: Parked) -> FaultKind | None:
        if not self._faults_on or self.rng.random() >= self.fault_rate:
            return None
        kind = self.rng.choice(SAVE_FAULTS if entry.label == "save" else WORK_FAULTS)
        return kind if kind in self.kinds else None

    # -- moves -------------------------------------------------------------------------

    def _moves(self) -> list[tuple[str, float]]:
        moves: list[tuple[str, float]] = []
        if self.scheduler.parked:
            moves.append(("release", 10.0))
        if len(self.roots) < 3:
            moves.append(("new_run", 1.0))
        if self.roots:
            moves.append(("act", 3.0))
            moves.append(("fork", 0.3 if len(self.roots) < 6 else 0.0))
        moves.append(("crash", 0.15 if FaultKind.CRASH in self.kinds else 0.0))
        moves.append(("outage", 0.1 if FaultKind.OUTAGE in self.kinds else 0.0))
        moves.append(("clock", 0.5))
        return [(name, weight) for name, weight in moves if weight > 0]

    def _move(self) -> None:
        moves = self._moves()
        names = [name for name, _ in moves]
        move = self.rng.choices(names, weights=[weight for _, weight in moves])[0]
        self.report.actions[move] += 1
        getattr(self, f"_do_{move}")()

    def _do_release(self) -> None:
        entry = self.rng.choice(self.scheduler.parked)
        fault = self._fault_at(entry)
        run = f" ({entry.run_id})" if entry.run_id else ""
        self._trace(f"{entry.process} {entry.label}{run}" + (f" -> {fault}" if fault else ""))
        life = next((life for life in self.lives if life.process.name == entry.process), None)
        if fault is FaultKind.CRASH and life is not None:
            self._crash(life)  # (counted there; the point's task is cancelled with the rest)
            return
        if fault is not None:
            self.report.count_fault(fault)
        self.scheduler.release(entry, fault)

    def _do_new_run(self) -> None:
        run_id = f"r{len(self.roots) + 1}"
        self.roots.append(run_id)
        text = f"task {self.rng.randrange(1000)}"
        self._act(self.rng.choice(self.lives), run_id, f"start({text!r})", _start(text))

    def _do_fork(self) -> None:
        life = self.rng.choice(self.lives)
        origin = self.rng.choice(self.roots)
        new_id = f"f{len(self.roots) + 1}"
        edit = AddMessage("a note from the fork") if self.rng.random() < 0.5 else None
        self._trace(f"{life.process.name} fork {origin} -> {new_id}")
        try:
            fork(life.process.store, origin, new_run_id=new_id, edit=edit, clock=self.clock)
        except (AgentFSMError, ProcessCrashed) as error:
            self._trace(f"  refused: {type(error).__name__}: {str(error)[:120]}")
        if self.shared.inner.load(new_id) is not None:
            self.roots.append(new_id)

    def _do_crash(self) -> None:
        self._crash(self.rng.choice(self.lives))

    def _do_outage(self) -> None:
        steps = self.rng.randint(1, 4)
        self.shared.outage = max(self.shared.outage, steps)
        self.report.count_fault(FaultKind.OUTAGE)
        self._trace(f"outage of {steps} steps")

    def _do_clock(self) -> None:
        seconds = self.rng.choice((30, 90, 200))
        self._advance(seconds)
        self._trace(f"clock +{seconds}s")

    def _advance(self, seconds: float) -> None:
        """Move the clock; the live processes renew the leases of the runs they drive."""
        self.clock.advance(seconds)
        for life in self.lives:
            store = life.process.store
            if store.alive and isinstance(store, LeasingProcessStore):
                store.renew()

    async def _lease_sleep(self, seconds: float) -> None:
        """An Agent's wait for a lease (`LeasePolicy.sleep`): the clock moves as it waits."""
        self._advance(seconds)
        await asyncio.sleep(0)

    def _do_act(self) -> None:
        stored_runs = [self.shared.inner.load(run_id) for run_id in self.roots]
        open_runs = [s for s in stored_runs if s is not None and s.state != RunState.SHUTDOWN]
        if not open_runs:
            self._trace("no run to act on")
            return
        stored = self.rng.choice(open_runs)
        run_id = stored.run_id
        working = [life for life in self.lives if life.working_on(run_id)]
        idle = [life for life in self.lives if not life.working_on(run_id)]
        if working and (not idle or self.rng.random() < 0.3):
            life = self.rng.choice(working)
            name = self.rng.choice(("cancel", "pause"))
            self._act(life, run_id, f"{name} (while working)", _call(name), concurrent=True)
            return
        # (while another process works on it, too: the store decides who wins)
        life = self.rng.choice(idle)
        name, call = self._choose_call(stored.state)
        self._act(life, run_id, name, call)

    def _choose_call(self, state: str) -> tuple[str, _Call]:
        rng = self.rng
        if state == RunState.REQUIRES_ACTION:
            options = ["resolve"] * 6 + ["cancel", "expire", "pause"]
        elif state == RunState.INPUT_REQUIRED:
            options = ["provide_input"] * 6 + ["cancel", "expire", "pause"]
        elif state in (RunState.READY, RunState.COMPLETED, RunState.FAILED):
            options = ["submit"] * 6 + ["pause", "shutdown"]
        elif state == RunState.PAUSED:
            options = ["resume"] * 4 + ["shutdown"]
        else:  # busy: take it up (its process died, or races another one)
            options = ["take_up"]
        name = rng.choice(options)
        if name == "resolve":
            words = [rng.choice(("approve", "approve", "deny")) for _ in range(4)]
            return f"resolve({words})", _resolve(words)
        if name == "submit":
            text = f"more {rng.randrange(1000)}"
            return f"submit({text!r})", _simple("asubmit", text)
        if name == "provide_input":
            return "provide_input('yes')", _simple("aprovide_input", "yes")
        return name, _call(name)

    # -- acting on a run -----------------------------------------------------------------

    def _act(
        self, life: _Life, run_id: str, what: str, call: _Call, *, concurrent: bool = False
    ) -> None:
        self._trace(f"{life.process.name} {run_id} {what}")
        task = self.scheduler.spawn(self._run_call(life, run_id, what, call, concurrent))
        life.tasks.setdefault(run_id, []).append(task)

    async def _run_call(
        self, life: _Life, run_id: str, what: str, call: _Call, concurrent: bool
    ) -> None:
        process = life.process
        if what.startswith("take_up"):
            life.agents.pop(run_id, None)  # (taking a run up is building its Agent afresh)
        agent = life.agents.get(run_id)
        before = -1 if agent is None else agent.snapshot().version
        try:
            if agent is None:
                agent = self.world.make_agent(process, run_id)
                agent.add_listener(DurabilityProbe(self.shared.inner, run_id))
                life.agents[run_id] = agent
                if agent.state != RunState.CREATED:
                    await agent.astart()  # take the stored run up (a claim)
            await call(agent)
        except BaseException as error:  # judged below; nothing escapes the simulation
            self._ended(life, run_id, what, agent, error)
            return
        self._answered(life, run_id, what, agent, concurrent or agent.snapshot().version == before)

    def _ended(
        self, life: _Life, run_id: str, what: str, agent: Agent | None, error: BaseException
    ) -> None:
        if not life.process.alive:
            return  # (a dead process: whatever it raised reached no one)
        life.agents.pop(run_id, None)  # (take the run up afresh next time)
        name = type(error).__name__
        if isinstance(error, InvariantError):
            self._violated(error, f"{life.process.name} {run_id} {what}")
            return
        if not isinstance(error, AgentFSMError):
            self._violated(
                InvariantError("I12", f"{name} escaped the Agent: {error}"),
                f"{life.process.name} {run_id} {what}",
            )
            return
        self._trace(f"  {life.process.name} {run_id} {what}: {name}")
        if isinstance(error, RunBusyError):
            return  # (another process drives the run: refused, a legal outcome)
        if isinstance(error, StoreError) and agent is not None:
            stored = self.shared.inner.load(run_id)
            held = None if stored is None else (stored.state, stored.turn, stored.messages)
            live = (agent.state, agent.turn, agent.messages)
            if stored is not None and live != held and not _behind(agent, stored.version):
                self._violated(
                    InvariantError(
                        "I12",
                        f"after a refused save the Agent is {live[:2]} with {len(live[2])} "
                        f"messages, the store holds {held[:2] if held else None}",
                    ),
                    f"{life.process.name} {run_id} {what}",
                )

    def _answered(self, life: _Life, run_id: str, what: str, agent: Agent, unsaved: bool) -> None:
        """The call returned: what it acknowledged (when it saved anything) is stored."""
        if not life.process.alive:
            return
        self._trace(f"  {life.process.name} {run_id} {what} -> {agent.state}")
        if unsaved or agent.state == RunState.BUSY:
            return
        stored = self.shared.inner.load(run_id)
        held = None if stored is None else (stored.state, stored.turn, stored.messages)
        if held != (agent.state, agent.turn, agent.messages):
            self._violated(
                InvariantError(
                    "I11",
                    f"the call returned {agent.state!r} (turn {agent.turn}), but the store "
                    f"holds {held[:2] if held else None}: an acknowledged step is not stored",
                ),
                f"{life.process.name} {run_id} {what}",
            )

    # -- the run -----------------------------------------------------------------------

    def run(self) -> SimulationReport:
        """Run the simulation on a new event loop; the report says what happened."""
        asyncio.run(self._main())
        return self.report

    async def _main(self) -> None:
        try:
            for step in range(self.steps):
                self._step = step
                self.shared.outage = max(0, self.shared.outage - 1)
                self._move()
                if await self._settle_and_check():
                    return
            await self._drain()
        finally:
            for life in self.lives:  # (the end: nothing still running reaches the store)
                life.process.store.alive = False
            self.report.violation = self._violation
            self.report.runs = len(self.shared.inner.list_runs())
            self.report.checks = self.checker.checks
            for task in self.scheduler.tasks:
                task.cancel()
            await asyncio.gather(*self.scheduler.tasks, return_exceptions=True)

    async def _settle_and_check(self) -> bool:
        """Run to the next quiet point, check the store; whether a violation ended it."""
        try:
            await self.scheduler.settle()
            if self._violation is None:
                self.checker.check()
        except InvariantError as error:
            self._violated(error, "check")
        return self._violation is not None

    async def _drain(self) -> None:
        """No more faults: let every point go on, take up every busy run, then check."""
        self._faults_on = False
        self.shared.outage = 0
        where = "at the end"
        for step in range(self.steps, self.steps + DRAIN_STEPS):
            self._step = step
            if self.scheduler.parked:
                self._do_release()
            elif not self._take_up_busy():
                break
            if await self._settle_and_check():
                return
        else:  # (every step of the end taken, and a run was still moving)
            where = f"at the end (it ran out of its {DRAIN_STEPS} steps)"
        try:
            self.checker.check_at_rest()
        except InvariantError as error:
            self._violated(error, where)

    def _take_up_busy(self) -> bool:
        busy = [
            root
            for root in self.roots
            if (stored := self.shared.inner.load(root)) is not None
            and stored.state == RunState.BUSY
        ]
        if not busy:
            return False
        run_id = busy[0]
        lease = self.shared.inner.lease(run_id) if self.leases else None  # type: ignore[attr-defined]
        if lease is not None and lease.live(self.clock()):
            self._advance(LEASE_SECONDS)  # (its driver is gone: let its lease expire)
            self._trace(f"clock +{LEASE_SECONDS:g}s (a lease to expire)")
        life = self.lives[0]
        life.agents.pop(run_id, None)
        self._act(life, run_id, "take_up (end)", _call("take_up"))
        return True


def _arguments(
    seed: object,
    store: object,
    steps: object,
    world: object,
    processes: object,
    fault_rate: object,
    faults: object,
) -> None:
    """Refuse a `Simulation`'s arguments of the wrong kind or out of range, naming them."""
    if not _checks.is_whole(seed):
        _checks.refuse_type("seed", seed, "an int")
    if not isinstance(store, RunStore):
        _checks.refuse_type("store", store, "a RunStore (MemoryStore(), SQLiteStore(path)…)")
    _checks.whole("steps", steps, minimum=0)
    _checks.whole("processes", processes, minimum=1)
    if world is not None and not isinstance(world, World):
        _checks.refuse_type("world", world, "a World (or a subclass of it), or None")
    if not _checks.is_number(fault_rate) or not 0 <= fault_rate <= 1:  # type: ignore[operator]
        raise ValueError(
            f"fault_rate must be a number from 0 to 1, not {_checks.given(fault_rate)}"
        )
    kinds = list(faults) if isinstance(faults, (list, tuple, set, frozenset)) else None
    if kinds is None or not all(isinstance(kind, FaultKind) for kind in kinds):
        allowed = ", ".join(f"FaultKind.{kind.name}" for kind in FaultKind)
        raise ValueError(f"faults must be a collection of FaultKind ({allowed}), not {faults!r}")


_Call = Callable[[Agent], Awaitable[object]]


def _start(text: str) -> _Call:
    async def call(agent: Agent) -> object:
        return await agent.astart(text)

    return call


def _simple(method: str, text: str) -> _Call:
    async def call(agent: Agent) -> object:
        function: Callable[[str], Awaitable[object]] = getattr(agent, method)
        return await function(text)

    return call


def _resolve(words: list[str]) -> _Call:
    async def call(agent: Agent) -> object:
        decisions = {c.id: words[index % len(words)] for index, c in enumerate(agent.pending)}
        return await agent.aresolve_action(decisions)

    return call


def _call(name: str) -> _Call:
    async def call(agent: Agent) -> object:
        if name == "take_up":
            return agent.outcome()  # (the take-up in `_run_call` did it)
        method: Callable[[], Awaitable[object]] = getattr(agent, f"a{name}")
        return await method()

    return call


def _behind(agent: Agent, stored_version: int | None) -> bool:
    """Whether ``agent`` is behind the store, unsure, after its read-back failed too (I12).

    docs/contract.md allows it: it holds the last snapshot it knew stored, and its next call
    reads the store first, so nothing it does is lost or applied twice. Never ahead of it.
    """
    version = agent.snapshot().version
    unsure: bool = getattr(agent, "_unsure", False)  # agentfsm.agent.rollback
    return (
        unsure and version is not None and stored_version is not None and version < stored_version
    )
