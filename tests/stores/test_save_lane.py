"""Write-behind hops: a `Hop` made by a store's own `Lane` thread, awaited or waited for."""

from __future__ import annotations

import asyncio
import gc
import os
import threading
from collections.abc import Iterator
from concurrent.futures import CancelledError
from pathlib import Path
from typing import cast

import pytest

from agentfsm.stores import RunStore, SQLiteStore
from agentfsm.stores._lane import Hop, Lane
from agentfsm.stores.base import start_saves
from agentfsm.testing.store_conformance import make_events, make_snapshot
from tests.stores.durable_support import agent

WAIT = 10.0


class Gate:
    """A hop's saves that wait until the test opens them, and say when they began."""

    def __init__(self) -> None:
        self.began = threading.Event()
        self.opened = threading.Event()

    def __call__(self) -> None:
        self.began.set()
        assert self.opened.wait(WAIT)


@pytest.fixture
def lane() -> Iterator[Lane]:
    made = Lane()
    yield made
    made.close()


def test_a_lane_makes_its_hops_in_order_and_gives_each_outcome(lane: Lane) -> None:
    made: list[int] = []
    failure = ValueError("the disk is full")

    def fails() -> None:
        raise failure

    hops = [lane.submit(Hop(), lambda n=n: made.append(n)) for n in range(5)]
    failed = lane.submit(Hop(), fails)
    assert [hop.result(WAIT) for hop in hops] == [(None, None)] * 5
    assert failed.result(WAIT) == (None, failure)  # (the outcome: raised by the run, not here)
    assert made == [0, 1, 2, 3, 4]
    assert all(hop.done() and not hop.cancelled() for hop in [*hops, failed])


def test_a_hop_cancelled_before_it_begins_never_runs(lane: Lane) -> None:
    gate, made = Gate(), []
    first = lane.submit(Hop(), gate)
    second = lane.submit(Hop(), lambda: made.append("second"))
    assert gate.began.wait(WAIT)
    assert not first.cancel()  # (begun: it cannot be stopped)
    assert second.cancel()
    assert second.cancel()
    assert second.cancelled()
    assert second.done()
    gate.opened.set()
    assert first.result(WAIT) == (None, None)
    with pytest.raises(CancelledError):
        second.result(WAIT)
    assert lane.submit(Hop(), lambda: None).result(WAIT) == (None, None)  # (after it)
    assert made == []
    assert not first.cancel()  # (ended)


def test_waiting_for_a_hop_that_does_not_end_times_out(lane: Lane) -> None:
    gate = Gate()
    hop = lane.submit(Hop(), gate)
    with pytest.raises(TimeoutError, match=r"did not end within 0\.01 seconds"):
        hop.result(0.01)
    gate.opened.set()
    assert hop.result(WAIT) == (None, None)


def test_a_hop_is_awaited_without_blocking_the_loop(lane: Lane) -> None:
    gate = Gate()

    async def main() -> tuple[object, object, bool]:
        hop = lane.submit(Hop(), gate)
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while not gate.opened.is_set():
                ticks += 1
                if ticks == 3:
                    gate.opened.set()
                await asyncio.sleep(0.001)

        ticking = asyncio.ensure_future(tick())
        outcome = await hop
        await ticking
        again = await hop  # (ended: at once)
        return outcome, again, ticks >= 3

    assert asyncio.run(asyncio.wait_for(main(), WAIT)) == ((None, None), (None, None), True)


def test_a_task_cancelled_while_awaiting_cancels_a_hop_not_begun(lane: Lane) -> None:
    gate, made = Gate(), []
    first = lane.submit(Hop(), gate)
    second = lane.submit(Hop(), lambda: made.append("second"))

    async def main() -> None:
        task = asyncio.ensure_future(_await(second))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(main(), WAIT))
    gate.opened.set()
    assert first.result(WAIT) == (None, None)
    assert second.cancelled()
    assert lane.submit(Hop(), lambda: None).result(WAIT) == (None, None)
    assert made == []


async def _await(hop: Hop) -> object:
    return await hop


def test_awaiting_a_hop_cancelled_before_raises_cancelled(lane: Lane) -> None:
    gate = Gate()
    lane.submit(Hop(), gate)
    hop = lane.submit(Hop(), lambda: None)
    assert hop.cancel()
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(_await(hop))
    gate.opened.set()


def test_a_hop_ending_after_its_loop_closed_keeps_its_outcome(lane: Lane) -> None:
    gate = Gate()
    hop = lane.submit(Hop(), gate)
    loop = asyncio.new_event_loop()
    task = loop.create_task(_await(hop))
    loop.run_until_complete(asyncio.sleep(0.01))  # (the task awaits the hop)
    assert not task.done()
    loop.close()  # (no call_soon_threadsafe can reach it any more)
    gate.opened.set()
    assert hop.result(WAIT) == (None, None)
    task._log_destroy_pending = False  # type: ignore[attr-defined]  # (closed on purpose)


def test_a_closed_lane_makes_what_it_was_given_first_and_closing_twice_is_harmless() -> None:
    lane, made = Lane(), []
    lane.close()  # (never used: nothing to end)
    hop = lane.submit(Hop(), lambda: made.append(1))
    lane.close()
    assert made == [1]
    assert hop.done()
    lane.close()
    assert lane.submit(Hop(), lambda: made.append(2)).result(WAIT) == (None, None)  # (again)
    lane.close()


def test_a_lane_dropped_unclosed_ends_its_thread() -> None:
    lane = Lane()
    assert lane.submit(Hop(), lambda: None).result(WAIT) == (None, None)
    thread = lane._thread
    assert thread is not None
    assert thread.is_alive()
    del lane
    gc.collect()
    thread.join(WAIT)
    assert not thread.is_alive()


def test_a_lane_closed_from_its_own_thread_does_not_wait_for_itself() -> None:
    lane = Lane()
    assert lane.submit(Hop(), lane.close).result(WAIT) == (None, None)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # (3.12+: fork with threads)
def test_a_forked_child_makes_its_hops_in_a_thread_of_its_own(lane: Lane) -> None:
    assert lane.submit(Hop(), lambda: None).result(WAIT) == (None, None)  # (the parent's)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child (its coverage is not collected)
        try:
            code = 0 if lane.submit(Hop(), lambda: None).result(WAIT) == (None, None) else 1
        except BaseException:
            code = 2
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert lane.submit(Hop(), lambda: None).result(WAIT) == (None, None)  # (still the parent's)


def test_sqlite_writes_behind_in_its_own_lane_and_close_makes_them_first(tmp_path: Path) -> None:
    threads: list[str] = []

    class Recording(SQLiteStore):
        def save_many(self, saves: object) -> None:
            threads.append(threading.current_thread().name)
            super().save_many(saves)  # type: ignore[arg-type]

    store = Recording(tmp_path / "runs.db")
    save = (make_snapshot("r1", 2, 1), make_events("r1", 1, 2), None)
    hop = start_saves(cast(RunStore, store), [save])
    store.close()  # (waits for the hop given before)
    assert hop.done()
    assert hop.result() == (None, None)
    with SQLiteStore(tmp_path / "runs.db") as reopened:
        assert reopened.events("r1") == list(save[1])
    durable = Recording(tmp_path / "agent.db")
    run = agent(durable, "run-1")
    run.start()
    run.submit("hello")
    durable.close()
    assert threads
    assert set(threads) == {"agentfsm-store-lane"}
