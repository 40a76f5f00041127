"""Run leases through the Agent: who drives a busy run (docs/contract.md, Leases).

Time is a fake clock, waits sleep on it: no test sleeps but the renewal one (bounded).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentfsm import Agent, Event, MemoryStore, ScriptedModel, SQLiteStore, replay, tool
from agentfsm.errors import RunBusyError
from agentfsm.states import RunState
from agentfsm.stores import LeasePolicy
from agentfsm.stores.base import LeasingStore
from agentfsm.stores.leases import Hold, Lease, settle
from agentfsm.testing import FakeClock
from agentfsm.testing.lease_conformance import at_state
from agentfsm.verify import check_log

RUN_ID = "run-1"


def fake_sleep(clock: FakeClock, slept: list[float] | None = None) -> LeasePolicy:
    """A policy whose waits advance ``clock`` (and note each sleep in ``slept``)."""

    async def sleep(seconds: float) -> None:
        if slept is not None:
            slept.append(seconds)
        clock.advance(seconds)

    return LeasePolicy(wait=30.0, sleep=sleep)


def interrupted(clock: FakeClock, at: str = "tool_started") -> tuple[list[Event], int]:
    """A whole turn's log, and where a crash right after its first ``at`` event cuts it."""
    done = MemoryStore()
    first = Agent(ScriptedModel().tool_call("slow", x=1).text("done"), [slow_tool()],  # type: ignore[list-item]
                  store=done, run_id=RUN_ID, clock=clock, lease=None)  # fmt: skip
    first.start()
    first.submit("go")
    log = done.events(RUN_ID)
    return log, next(i for i, e in enumerate(log) if e.event == at) + 1


def stored_busy(
    store: LeasingStore, owner: str, clock: FakeClock, at: str = "tool_started"
) -> list[Event]:
    """Store the run busy inside its tool body under ``owner``'s lease (15 s).

    As a driver that died there left it; the whole turn's log is returned.
    """
    log, cut = interrupted(clock, at)
    hold = Hold(owner, 15.0, 5.0, clock)
    store.hold(RUN_ID, hold)
    try:
        store.save(replay(log[:cut]), log[:cut], expected_version=None)
    finally:
        store.unhold(RUN_ID, hold)
    lease = store.lease(RUN_ID)
    assert lease is not None
    assert lease.owner == owner
    return log


def slow_tool(gate: asyncio.Event | None = None, seen: list[object] | None = None) -> object:
    @tool
    async def slow(x: int) -> str:
        """Work slowly."""
        if seen is not None:
            seen.append("ran")
        if gate is not None:
            await gate.wait()
        return f"worked {x}"

    return slow


@pytest.fixture
def two_stores(tmp_path: Path) -> Iterator[tuple[SQLiteStore, SQLiteStore]]:
    """Two store objects on one SQLite file: two processes, as far as the run can tell."""
    with SQLiteStore(tmp_path / "runs.db") as one, SQLiteStore(tmp_path / "runs.db") as two:
        yield one, two


def test_a_second_process_is_refused_while_the_first_works_and_the_first_finishes(
    two_stores: tuple[SQLiteStore, SQLiteStore],
) -> None:
    one, two = two_stores

    async def scenario() -> None:
        gate, seen = asyncio.Event(), []
        model = ScriptedModel().tool_call("slow", x=1).text("done")
        first = Agent(model, [slow_tool(gate, seen)], store=one, run_id=RUN_ID)  # type: ignore[list-item]
        await first.astart()
        turn = asyncio.ensure_future(first.asubmit("go"))
        while not seen:  # the tool body is running
            await asyncio.sleep(0)
        lease = one.lease(RUN_ID)
        assert lease is not None
        assert lease.live(time.time())
        second = Agent(ScriptedModel().text("other"), [slow_tool()], store=two, run_id=RUN_ID)  # type: ignore[list-item]
        assert second.state == RunState.BUSY
        with pytest.raises(RunBusyError) as refused:
            await second.astart()
        assert (refused.value.run_id, refused.value.owner) == (RUN_ID, lease.owner)
        assert refused.value.expires_at == lease.expires_at
        assert "busy" in str(refused.value)
        assert "LeasePolicy(wait=" in str(refused.value)
        gate.set()
        outcome = await turn  # no SnapshotConflictError: nobody took the run from it
        assert (outcome.state, outcome.reply) == ("completed", "done")
        tool_message = first.messages[-2]
        assert tool_message.content == "worked 1"  # not "outcome unknown"
        assert one.lease(RUN_ID) is None  # at rest: no lease

    asyncio.run(scenario())


def test_an_expired_lease_is_taken_over_and_the_takeover_is_in_the_log() -> None:
    store, clock = MemoryStore(), FakeClock(1000.0)
    stored_busy(store, "dead-process", clock)
    second = Agent(ScriptedModel().text("resumed"), [slow_tool()], store=store, run_id=RUN_ID,  # type: ignore[list-item]
                   clock=clock)  # fmt: skip
    with pytest.raises(RunBusyError) as refused:
        second.start()
    assert refused.value.owner == "dead-process"
    assert [e.event for e in store.events(RUN_ID)][-1] != "lease_taken_over"  # nothing written
    clock.advance(15.0)
    outcome = second.start()
    assert (outcome.state, outcome.reply) == ("completed", "resumed")
    log = store.events(RUN_ID)
    taken = [e for e in log if e.event == "lease_taken_over"]
    assert len(taken) == 1
    assert taken[0].data["previous_owner"] == "dead-process"
    assert taken[0].data["expired_at"] == 1015.0
    assert (taken[0].source, taken[0].target) == ("busy", "busy")
    assert store.lease(RUN_ID) is None
    final = store.load(RUN_ID)
    assert final is not None
    replay(log, expected=final)  # I10 with the record
    assert check_log(log).ok


@pytest.mark.parametrize("call", ["cancel", "pause"])
def test_cancelling_or_pausing_a_restored_busy_run_respects_its_lease(call: str) -> None:
    store, clock = MemoryStore(), FakeClock(1000.0)
    stored_busy(store, "dead-process", clock, at="model_replied")  # at a step boundary
    other = Agent(ScriptedModel().text("x"), store=store, run_id=RUN_ID, clock=clock)
    with pytest.raises(RunBusyError):
        getattr(other, call)()  # its driver may be alive: nothing is written
    stored = store.load(RUN_ID)
    assert stored is not None
    assert stored.state == "busy"
    clock.advance(15.0)
    taker = Agent(ScriptedModel().text("x"), store=store, run_id=RUN_ID, clock=clock)
    assert getattr(taker, call)().state == ("failed" if call == "cancel" else "paused")
    events = [e.event for e in store.events(RUN_ID)]
    assert events.count("lease_taken_over") == 1
    assert events.index("lease_taken_over") < events.index(call)
    assert store.lease(RUN_ID) is None


def test_a_wait_takes_over_once_the_lease_expires() -> None:
    store, clock, slept = MemoryStore(), FakeClock(1000.0), []
    stored_busy(store, "dead-process", clock)
    second = Agent(ScriptedModel().text("resumed"), store=store, run_id=RUN_ID, clock=clock,
                   lease=fake_sleep(clock, slept))  # fmt: skip
    assert second.start().state == "completed"
    assert clock() == pytest.approx(1015.0)  # it waited exactly until the lease expired
    assert sum(slept) == pytest.approx(15.0)
    assert len(slept) == 60
    assert [e.event for e in store.events(RUN_ID)].count("lease_taken_over") == 1


def test_a_wait_is_bounded() -> None:
    store, clock = MemoryStore(), FakeClock(1000.0)
    stored_busy(store, "live-process", clock)
    policy = LeasePolicy(wait=5.0, sleep=fake_sleep(clock).sleep)
    second = Agent(ScriptedModel().text("x"), store=store, run_id=RUN_ID, clock=clock,
                   lease=policy)  # fmt: skip
    with pytest.raises(RunBusyError):
        second.start()
    assert clock() == pytest.approx(1005.0)
    assert second.state == RunState.BUSY  # still the restored run: start may be called again


def test_a_run_that_comes_to_rest_during_the_wait_is_taken_up_as_stored(
    two_stores: tuple[SQLiteStore, SQLiteStore],
) -> None:
    one, two = two_stores
    clock = FakeClock(1000.0)
    log = stored_busy(one, "live-process", clock)
    cut = len(one.events(RUN_ID))

    async def sleep(seconds: float) -> None:  # meanwhile the driver ends its turn
        clock.advance(seconds)
        if one.lease(RUN_ID) is not None:
            hold = Hold("live-process", 15.0, 5.0, clock)
            one.hold(RUN_ID, hold)
            whole = replay(log).model_copy(update={"version": 2})
            one.save(whole, log[cut:], expected_version=1)
            one.unhold(RUN_ID, hold)

    second = Agent(ScriptedModel().text("x"), store=two, run_id=RUN_ID, clock=clock,
                   lease=LeasePolicy(wait=10.0, sleep=sleep))  # fmt: skip
    outcome = second.start()
    assert (outcome.state, outcome.reply) == (RunState.COMPLETED, "done")
    assert "lease_taken_over" not in [e.event for e in two.events(RUN_ID)]
    assert two.lease(RUN_ID) is None


def test_two_agents_of_one_process_do_not_drive_one_run_at_once() -> None:
    store = MemoryStore()

    async def scenario() -> None:
        gate, seen = asyncio.Event(), []
        model = ScriptedModel().tool_call("slow", x=1).text("done")
        first = Agent(model, [slow_tool(gate, seen)], store=store, run_id=RUN_ID)  # type: ignore[list-item]
        await first.astart()
        second = Agent(ScriptedModel().text("other"), store=store, run_id=RUN_ID)  # ready, too
        turn = asyncio.ensure_future(first.asubmit("go"))
        while not seen:
            await asyncio.sleep(0)
        with pytest.raises(RunBusyError):
            await second.asubmit("me too")  # refused before anything is written
        gate.set()
        assert (await turn).state == "completed"

    asyncio.run(scenario())


def test_the_lease_is_renewed_while_a_tool_body_runs(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    renewed = []

    with SQLiteStore(tmp_path / "runs.db") as store:

        @tool
        def long_tool() -> str:
            """Work long (blocks the event loop: a sync body)."""
            first = store.lease(RUN_ID)
            assert first is not None
            clock.advance(100.0)  # far past the first expiry, as a long tool would
            deadline = time.monotonic() + 5.0
            while time.monotonic() < deadline:  # the renewing thread extends it meanwhile
                now = store.lease(RUN_ID)
                if now is not None and now.expires_at > first.expires_at:
                    renewed.append(now)
                    break
                time.sleep(0.005)
            return "done"

        policy = LeasePolicy(duration=1.0, renew_every=0.02)
        the_agent = Agent(ScriptedModel().tool_call("long_tool").text("ok"), [long_tool],
                          store=store, run_id=RUN_ID, clock=clock, lease=policy)  # fmt: skip
        the_agent.start()
        assert the_agent.submit("go").state == "completed"
    assert renewed
    assert renewed[0].expires_at == pytest.approx(1101.0)


def renewers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "agentfsm-leases"]


def test_the_renewing_thread_runs_only_while_a_run_holds_a_lease() -> None:
    clock = FakeClock(1000.0)
    store = MemoryStore()
    during: list[int] = []

    @tool
    def look() -> str:
        """Count the renewing threads while the step holds the run's lease."""
        during.append(len(renewers()))
        return "seen"

    for run_id in ("run-a", "run-b"):  # the second run starts the thread again
        model = ScriptedModel().tool_call("look").text("ok")
        the_agent = Agent(model, [look], store=store, run_id=run_id, clock=clock)
        the_agent.start()
        assert the_agent.submit("go").state == "completed"
        settle()  # (with no hold left it would end by itself within leases.IDLE)
        assert renewers() == []  # (no hold left: the thread has ended)
    assert during == [1, 1]


def test_no_lease_with_lease_none_and_bad_policies_are_refused() -> None:
    store = MemoryStore()
    seen: list[Lease | None] = []

    @tool
    def look() -> str:
        """Look at the lease."""
        seen.append(store.lease(RUN_ID))
        return "ok"

    plain = Agent(ScriptedModel().tool_call("look").text("x"), [look], store=store,
                  run_id=RUN_ID, lease=None)  # fmt: skip
    plain.start()
    plain.submit("go")
    assert seen == [None]
    with pytest.raises(TypeError, match="lease"):
        Agent("scripted:demo", lease=30)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="renew_every must be below duration"):
        LeasePolicy(duration=5.0, renew_every=5.0)
    with pytest.raises(ValueError, match="duration"):
        LeasePolicy(duration=0)
    with pytest.raises(ValueError, match="wait"):
        LeasePolicy(wait=-1)


# No run is busy in the store without a live lease of its driver: checked at every event a
# listener hears (stored first) and inside every tool body, over random turns.
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rounds=st.lists(st.lists(st.integers(0, 2), max_size=3), min_size=1, max_size=3))
def test_no_run_is_busy_without_a_live_lease(rounds: list[list[int]]) -> None:
    store, clock = MemoryStore(), FakeClock(1000.0)
    owners: set[str] = set()

    def check(_: object = None) -> None:
        stored, lease = store.load(RUN_ID), store.lease(RUN_ID)
        if stored is not None and stored.state == RunState.BUSY:
            assert lease is not None
            assert lease.live(clock())
            owners.add(lease.owner)
        else:
            assert lease is None

    @tool
    def work(n: int) -> str:
        """Work."""
        check()
        clock.advance(n)
        return str(n)

    model = ScriptedModel()
    for turn in rounds:
        for n in turn:
            model = model.tool_call("work", n=n)
        model = model.text("done")
    the_agent = Agent(model, [work], store=store, run_id=RUN_ID, clock=clock,
                      listeners=[check])  # fmt: skip
    the_agent.start()
    for _ in rounds:
        assert the_agent.submit("go").state == "completed"
        check()
    assert len(owners) == 1  # one driver, one owner id


def test_the_takeover_record_is_a_known_event_kind() -> None:
    from agentfsm.states import RecordKind
    from agentfsm.testing.injector import fault_points

    assert RecordKind("lease_taken_over") is RecordKind.LEASE_TAKEN_OVER
    points = fault_points(Agent("scripted:demo", store=MemoryStore()))
    assert "listener:conversation.lease_taken_over" in points
    event = Event(seq=1, run_id="r", machine="conversation", event="lease_taken_over",
                  source="busy", target="busy", at=0.0, data={})  # fmt: skip
    assert event.event == "lease_taken_over"
    assert at_state("r", RunState.BUSY, 1).state == RunState.BUSY
