"""The simulation's scheduler: every await of the system under test parks at a point.

A simulated process's model, tools and store wait at `Scheduler.point` until the simulation
picks them; everything else runs as plain asyncio on one event loop, with no real time and
no thread. `Scheduler.settle` runs the loop until every task of the simulation waits at a
point or is done, so what happens next is the seed's choice alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass, field

from agentfsm.errors import InvariantError
from agentfsm.testing.sim.faults import FaultKind

SETTLE_ROUNDS = 10_000
"""Loop passes `Scheduler.settle` allows before it says a task waits outside the simulation."""


@dataclass(eq=False, slots=True)
class Parked:
    """A task waiting at a point for the simulation to let it go on."""

    process: str
    """The simulated process it belongs to (``p1#2``: process 1, second life)."""
    label: str
    """Where it waits: ``model``, ``save``, ``tool:book``…"""
    run_id: str
    """The run it works for."""
    future: asyncio.Future[FaultKind | None] = field(repr=False)
    """Resolved by the simulation: with None to go on, or with the fault to strike there."""


class Scheduler:
    """Parks the simulation's tasks at their points and lets them go one at a time."""

    def __init__(self) -> None:
        self.parked: list[Parked] = []
        """The tasks waiting at a point, in the order they arrived."""
        self.tasks: list[asyncio.Task[None]] = []
        """Every task the simulation started that is not done."""

    async def point(self, process: str, label: str, run_id: str) -> FaultKind | None:
        """Wait until the simulation picks this point: the fault to strike there, or None."""
        future: asyncio.Future[FaultKind | None] = asyncio.get_running_loop().create_future()
        entry = Parked(process, label, run_id, future)
        self.parked.append(entry)
        try:
            return await future
        finally:
            if entry in self.parked:
                self.parked.remove(entry)

    def spawn(self, coroutine: Coroutine[object, object, None]) -> asyncio.Task[None]:
        """Start a task of the simulation (it runs at the next `settle`)."""
        task = asyncio.get_running_loop().create_task(coroutine)
        self.tasks.append(task)
        return task

    def release(self, entry: Parked, fault: FaultKind | None = None) -> None:
        """Let ``entry`` go on, striking ``fault`` at its point if one is given."""
        self.parked.remove(entry)
        if not entry.future.done():
            entry.future.set_result(fault)

    async def settle(self) -> None:
        """Run the loop until every task waits at a point or is done.

        Raises:
            InvariantError: A task still runs after `SETTLE_ROUNDS` passes: it awaits
                something the simulation does not drive (real time, a thread, a socket).
        """
        for _ in range(SETTLE_ROUNDS):
            self.tasks = [task for task in self.tasks if not task.done()]
            waiting = sum(1 for entry in self.parked if not entry.future.done())
            if waiting >= len(self.tasks):
                return
            await asyncio.sleep(0)
        raise InvariantError(
            "simulation",
            f"{len(self.tasks)} task(s) run but only {len(self.parked)} wait at a point after "
            f"{SETTLE_ROUNDS} passes of the loop: something awaits outside the simulation",
        )
