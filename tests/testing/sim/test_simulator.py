"""The simulator itself: one seed, one trace; broken parts caught with their seed; reruns."""

from __future__ import annotations

import asyncio
import io
import re
import sys
from pathlib import Path

import pytest

from agentfsm.cli import main
from agentfsm.errors import InvariantError, ProcessCrashed, RunBusyError, StoreWriteError
from agentfsm.stores.leases import Lease, LeasePolicy
from agentfsm.stores.memory import MemoryStore
from agentfsm.stores.snapshot import Snapshot
from agentfsm.stores.sqlite import SQLiteStore
from agentfsm.testing.clock import FakeClock
from agentfsm.testing.sim import (
    FaultKind,
    FaultyStore,
    LeasingProcessStore,
    Simulation,
    lease_check,
)
from tests.testing.sim.broken import LosingStore, LyingToolWorld, UnapprovedPayWorld


def test_the_same_seed_gives_the_same_trace_twice() -> None:
    first = Simulation(11, MemoryStore(), steps=80).run()
    second = Simulation(11, MemoryStore(), steps=80).run()

    assert first.trace == second.trace
    assert first.faults == second.faults
    assert sum(first.faults.values()) > 0  # (a trace with faults, not an idle one)


def test_the_same_seed_gives_the_same_trace_over_sqlite_as_over_memory(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "runs.db") as store:
        over_sqlite = Simulation(3, store, steps=40).run()

    assert over_sqlite.trace == Simulation(3, MemoryStore(), steps=40).run().trace


def test_different_seeds_give_different_traces() -> None:
    assert Simulation(1, MemoryStore(), steps=30).run().trace != (
        Simulation(2, MemoryStore(), steps=30).run().trace
    )


def test_a_store_that_loses_an_acknowledged_save_is_caught_with_its_seed() -> None:
    # (other seeds catch it earlier: a listener heard of an event the store does not hold, I11)
    report = Simulation(6, LosingStore(MemoryStore(), lose=10), steps=100).run()

    assert report.violation is not None
    assert report.violation.invariant == "accepted-undone"
    assert "was acknowledged" in report.violation.message
    failure = report.failure()
    assert failure.startswith("simulation seed 6 failed: accepted-undone violated")
    assert failure.endswith("rerun: agentfsm simulate --seed 6 --steps 100")
    rerun = Simulation(6, LosingStore(MemoryStore(), lose=10), steps=100).run()
    assert rerun.violation == report.violation
    assert rerun.trace == report.trace
    with pytest.raises(InvariantError, match="seed 6 failed"):
        report.raise_if_violated()


def test_a_non_idempotent_tool_run_twice_is_caught_with_its_seed() -> None:
    report = Simulation(5, MemoryStore(), steps=100, world=LyingToolWorld()).run()

    assert report.violation is not None
    assert report.violation.invariant == "I11"
    assert "non-idempotent tool body ran again: call 'r2:c1x1'" in report.violation.message


def test_a_tool_body_run_without_its_approval_is_caught_with_its_seed() -> None:
    report = Simulation(0, MemoryStore(), steps=100, world=UnapprovedPayWorld()).run()

    assert report.violation is not None
    assert report.violation.invariant == "I9"
    assert "call 'c1x0' of run 'r2' ran, but its tool needs approval" in report.violation.message


def test_the_seeds_strike_every_kind_of_fault_and_run_approved_bodies() -> None:
    faults: set[str] = set()
    approved: set[str] = set()
    for seed in (1, 9):
        simulation = Simulation(seed, MemoryStore(), steps=100)
        faults |= set(simulation.run().faults)
        approved |= simulation.ledger.approved

    assert faults == {str(kind) for kind in FaultKind}
    assert approved  # (the approval check looked at real approvals)


def test_a_crashed_process_reaches_the_store_no_more() -> None:
    crashed: list[str] = []

    async def point(label: str, run_id: str) -> FaultKind | None:
        return None

    shared = FaultyStore(MemoryStore())
    handle = shared.handle("p1#1", point, lambda: crashed.append("p1#1"))
    handle.alive = False
    with pytest.raises(ProcessCrashed, match="p1#1 crashed"):
        handle.load("r1")
    shared.outage = 2
    with pytest.raises(StoreWriteError, match="outage"):
        shared.handle("p2#1", point, lambda: None).load("r1")
    asyncio.run(asyncio.sleep(0))  # (nothing parked: the handles never awaited)


def test_simulate_command_reports_a_seed_that_holds() -> None:
    out = io.StringIO()
    sys.stdout, saved = out, sys.stdout
    try:
        code = main(["simulate", "--seed", "0", "--steps", "30"])
    finally:
        sys.stdout = saved

    assert code == 0
    assert out.getvalue().startswith("seed 0: 30 steps, ")
    assert out.getvalue().rstrip().endswith(": ok")


def test_simulate_command_reruns_a_failing_seed_to_the_same_failure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    command = ["simulate", "--seed", "5", "--steps", "100", "--world",
               "tests.testing.sim.broken:LyingToolWorld"]  # fmt: skip
    outputs = []
    for _ in range(2):
        assert main(command) == 1
        outputs.append(capsys.readouterr().out)

    assert outputs[0] == outputs[1]
    lines = outputs[0].splitlines()
    assert lines[1] == "simulation seed 5 failed: I11 violated at step 60"
    assert lines[-1] == (
        "rerun: agentfsm simulate --seed 5 --steps 100 --world "
        "tests.testing.sim.broken:LyingToolWorld"
    )


def test_simulate_command_refuses_a_store_that_holds_runs(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as store:
        Simulation(0, store, steps=5).run()
    err = io.StringIO()
    sys.stderr, saved = err, sys.stderr
    try:
        code = main(["simulate", "--seed", "0", "--store", f"sqlite:///{path}"])
    finally:
        sys.stderr = saved

    assert code == 1
    assert "the simulation needs an empty store" in err.getvalue()


class _Seeds:
    """A pytest plugin that notes the seeds the collected tests run for."""

    def __init__(self) -> None:
        self.seeds: list[tuple[int, str]] = []

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            callspec = getattr(item, "callspec", None)
            if callspec is not None:
                self.seeds.append((callspec.params["sim_seed"], item.name))


def test_the_pytest_option_reruns_one_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "test_mine.py").write_text(
        "import pytest\n"
        "@pytest.mark.agentfsm_seeds(range(3), nightly=range(3, 9))\n"
        "def test_seed(sim_seed, sim_steps):\n"
        "    pass\n"
    )
    monkeypatch.delenv("HYPOTHESIS_PROFILE", raising=False)

    def seeds(*options: str) -> list[int]:
        collector = _Seeds()
        arguments = [str(tmp_path), "-q", "--collect-only", "-p", "no:cacheprovider", *options]
        assert pytest.main(arguments, plugins=[collector]) == 0
        return [seed for seed, _ in collector.seeds]

    assert seeds() == [0, 1, 2]
    assert seeds("--agentfsm-seed", "417") == [417]
    assert seeds("--agentfsm-nightly") == list(range(9))
    assert seeds("--hypothesis-profile=agentfsm-nightly") == list(range(9))
    monkeypatch.setenv("HYPOTHESIS_PROFILE", "nightly")
    assert seeds() == list(range(9))


def test_the_steps_option_sets_sim_steps(tmp_path: Path) -> None:
    (tmp_path / "test_steps.py").write_text(
        "from pathlib import Path\n"
        "def test_steps(sim_seed, sim_steps):\n"
        "    (Path(__file__).parent / 'ran.txt').write_text(f'{sim_seed} {sim_steps}')\n"
    )
    arguments = [str(tmp_path), "-q", "-p", "no:cacheprovider", "--agentfsm-seed", "417"]

    assert pytest.main([*arguments, "--agentfsm-steps", "7"]) == 0
    assert (tmp_path / "ran.txt").read_text() == "417 7"
    assert pytest.main(arguments) == 0
    assert (tmp_path / "ran.txt").read_text() == "417 100"


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"seed": "7"}, TypeError, "seed must be an int, not '7'"),
        ({"store": "memory:"}, TypeError, "store must be a RunStore"),
        ({"steps": -1}, ValueError, "steps must be a whole number >= 0, not -1"),
        ({"processes": 0}, ValueError, "processes must be a whole number >= 1, not 0"),
        ({"world": object()}, TypeError, "world must be a World"),
        ({"fault_rate": 2}, ValueError, "fault_rate must be a number from 0 to 1, not 2"),
        ({"faults": ["crash"]}, ValueError, "faults must be a collection of FaultKind"),
    ],
    ids=["seed", "store", "steps", "processes", "world", "fault_rate", "faults"],
)
def test_a_simulation_refuses_bad_arguments_naming_them(
    arguments: dict[str, object], error: type[Exception], message: str
) -> None:
    given: dict[str, object] = {"seed": 1, "store": MemoryStore(), **arguments}
    with pytest.raises(error, match=re.escape(message)):
        Simulation(**given)  # type: ignore[arg-type]


def test_the_lease_hook_finds_a_busy_run_without_a_lease() -> None:
    assert lease_check(MemoryStore(), agents_lease=False) is None  # (the Agents take none)
    check = lease_check(MemoryStore())
    assert check is not None
    busy = Snapshot(run_id="r1", state="busy", loop_state="thinking", turn=1)

    with pytest.raises(InvariantError, match="run 'r1' is busy without a lease"):
        check(MemoryStore(), [busy])


def test_a_process_handle_saves_through_its_hold_and_a_crashed_one_renews_no_more() -> None:
    clock = FakeClock()
    store = MemoryStore()
    shared = FaultyStore(store, clock=clock)
    handle = shared.handle("p1#1", _no_fault, lambda: None)
    assert isinstance(handle, LeasingProcessStore)
    hold = LeasePolicy(duration=15, owner="p1#1/a1").hold(clock)
    handle.hold("r1", hold)
    busy = Snapshot(run_id="r1", state="busy", loop_state="thinking", turn=1)
    handle.save(busy, [], expected_version=None)
    assert store.lease("r1") == Lease("r1", "p1#1/a1", clock() + 15)
    clock.advance(10)
    handle.renew()  # (the simulation's clock moved: the live process renews)
    assert store.lease("r1") == Lease("r1", "p1#1/a1", clock() + 15)

    other = shared.handle("p2#1", _no_fault, lambda: None)
    with pytest.raises(RunBusyError):  # (a save without a hold, while p1's lease is live)
        other.save(busy.model_copy(update={"version": 2}), [], expected_version=1)
    handle.alive = False
    clock.advance(20)
    handle.renew()  # (a crashed process renews nothing)
    with pytest.raises(ProcessCrashed):
        handle.renew_lease("r1", "p1#1/a1", clock() + 15)
    lease = store.lease("r1")
    assert lease is not None
    assert not lease.live(clock())  # (expired, not renewed: a takeover may come)


def test_a_simulation_over_a_leasing_store_takes_crashed_runs_over_and_refuses_busy_ones() -> None:
    store = MemoryStore()
    simulation = Simulation(9, store, steps=100)
    report = simulation.run()

    assert report.violation is None
    assert simulation.checker.leases is not None  # (the lease check is on)
    takeovers = [
        event
        for run in store.list_runs()
        for event in store.events(run.run_id)
        if event.event == "lease_taken_over"
    ]
    assert takeovers  # (a crashed driver's lease expired, and another process took over)
    assert any(line.endswith(": RunBusyError") for line in report.trace)


async def _no_fault(label: str, run_id: str) -> FaultKind | None:
    return None
