"""Group commit and async saves: a batch per external effect, stored before it is told."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentfsm import Agent, Event, MemoryStore, Message, ScriptedModel, SQLiteStore
from agentfsm.llm.base import ModelResponse
from agentfsm.states import RunState
from agentfsm.states.json import JSONObject
from agentfsm.stores import AsyncRunStore, RunStore, Snapshot
from agentfsm.stores.base import off_loop
from agentfsm.stores.postgres import PostgresStore
from tests.stores.durable_support import ROUND, agent, respond, side_effects

RUN_ID = "run-1"


class BatchLog(MemoryStore):
    """A MemoryStore that keeps the events of each save."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[tuple[int, ...]] = []

    def save(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        super().save(snapshot, events, expected_version=expected_version)
        self.batches.append(tuple(event.seq for event in events))


class Gated(SQLiteStore):
    """A SQLiteStore whose saves wait, in their thread, until ``gate`` is set."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.gate = threading.Event()
        self.entered = threading.Event()

    def save(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        self.entered.set()
        if not self.gate.wait(10):
            raise AssertionError("the gate was never opened: the event loop was blocked")
        super().save(snapshot, events, expected_version=expected_version)


def held(store: RunStore, the_agent: Agent) -> bool:
    """Whether the store holds every event the agent has produced."""
    stored = store.load(RUN_ID)
    return stored is not None and stored.seq == the_agent.snapshot().seq


def test_the_events_between_two_external_effects_are_saved_in_one_transaction() -> None:
    store = BatchLog()
    effects: list[tuple[str, bool]] = []

    def checked(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
        effects.append(("model", held(store, the_agent)))
        return respond(messages, tools)

    tools = side_effects(None, lambda line: effects.append((line, held(store, the_agent))))
    the_agent = Agent(ScriptedModel(fallback=checked), tools, store=store, run_id=RUN_ID)
    the_agent.start()
    saves_at_start = len(store.batches)
    the_agent.submit("Plan my trip")

    assert [held_then for _, held_then in effects] == [True] * len(effects)
    assert len(effects) == 2 + len(ROUND)  # the model twice, every body once
    assert held(store, the_agent)  # and at the return to the caller
    # One save per external effect and one at the return: not one per event.
    assert len(store.batches) - saves_at_start == len(effects) + 1
    stored = [seq for batch in store.batches for seq in batch]
    assert stored == list(range(1, the_agent.snapshot().seq + 1))
    assert max(len(batch) for batch in store.batches) > 1


def test_with_listeners_an_idempotent_body_runs_before_its_start_is_stored() -> None:
    store = BatchLog()
    stored_then: dict[str, list[str]] = {}

    def on_run(line: str) -> None:
        stored_then[line] = [e.event for e in store.events(RUN_ID)]

    the_agent = agent(store, RUN_ID, on_run=on_run, listeners=[lambda item: None])
    the_agent.start()
    the_agent.submit("Plan my trip")

    # The step boundary before each call stored (and told) all but the call's own start:
    # an idempotent body may run again after a crash (I11), so its start waits for the
    # next commit; book's is stored before it runs.
    assert stored_then["weather:Paris"][-1] == "model_replied"
    assert stored_then["book:Rome"][-1] == "tool_started"
    assert stored_then["weather:Nice"][-1] == "tool_result"
    assert stored_then["weather:Nice"].count("tool_started") == 2
    assert [e.event for e in store.events(RUN_ID)].count("tool_started") == len(ROUND)


def test_a_resumed_run_is_claimed_before_an_idempotent_body_runs() -> None:
    first = BatchLog()
    crashed = MemoryStore()

    def on_run(line: str) -> None:
        if line == "weather:Nice" and crashed.load(RUN_ID) is None:
            # what a process killed in the round's last body leaves behind: the round open,
            # Nice started (stored with book's answer), run again on resume (idempotent)
            stored = first.load(RUN_ID)
            assert stored is not None
            crashed.save(
                stored.model_copy(update={"version": 1}),
                first.events(RUN_ID),
                expected_version=None,
            )

    dying = agent(first, RUN_ID, on_run=on_run)
    dying.start()
    dying.submit("Plan my trip")
    restored = crashed.load(RUN_ID)
    assert restored is not None
    assert restored.state == RunState.BUSY
    versions: list[int] = []

    def version_at_body(line: str) -> None:
        stored = crashed.load(RUN_ID)
        assert stored is not None
        versions.append(stored.version)

    resumer = agent(crashed, RUN_ID, on_run=version_at_body)
    resumer.start()

    assert resumer.state == RunState.COMPLETED
    # the run was claimed (stored as version 2) before weather:Nice ran again, though no
    # answer waited: of two resumers, the second fails on the claim before running anything
    assert versions == [2]


def test_a_listener_hears_each_event_once_stored_and_in_order(tmp_path: Path) -> None:
    store = BatchLog()
    told: list[object] = []

    def listener(item: object) -> None:
        if isinstance(item, Event):
            assert item.seq <= max(seq for batch in store.batches for seq in batch if batch)
        told.append(item)

    the_agent = agent(store, RUN_ID, listeners=[listener])
    the_agent.start()
    the_agent.submit("Plan my trip")

    events = [item.seq for item in told if isinstance(item, Event)]
    assert events == list(range(1, the_agent.snapshot().seq + 1))
    # the trace entries are told among the events, in the order they were made
    assert [item for item in told if not isinstance(item, Event)] == list(the_agent.trace)


def test_a_cancel_asked_by_a_listener_between_two_calls_is_taken_there(tmp_path: Path) -> None:
    log = tmp_path / "effects.log"
    store = BatchLog()
    asked: list[int] = []

    def listener(item: object) -> None:
        if isinstance(item, Event) and item.event == "tool_result" and not asked:
            asked.append(item.seq)
            the_agent.cancel()  # from inside the step: taken at the next boundary

    the_agent = agent(store, RUN_ID, log, listeners=[listener])
    the_agent.start()
    outcome = the_agent.submit("Plan my trip")

    assert outcome.state == RunState.FAILED
    assert outcome.reason == "cancelled"
    assert log.read_text().splitlines() == ["weather:Paris"]  # book never ran
    assert held(store, the_agent)


def test_an_agent_awaits_a_sqlite_save_without_blocking_the_event_loop(tmp_path: Path) -> None:
    with Gated(tmp_path / "runs.db") as store:
        assert isinstance(store, AsyncRunStore)
        the_agent = agent(store, RUN_ID)

        async def open_the_gate() -> None:
            # Runs only if the loop is free while the save waits in its thread.
            await asyncio.to_thread(store.entered.wait, 10)
            store.gate.set()

        async def both() -> None:
            await asyncio.gather(the_agent.astart(), open_the_gate())

        asyncio.run(both())
        assert the_agent.state == RunState.READY
        assert held(store, the_agent)


def test_a_cancelled_save_finishes_before_the_cancellation_is_raised(tmp_path: Path) -> None:
    with Gated(tmp_path / "runs.db") as store:
        source = MemoryStore()
        the_agent = agent(source, RUN_ID)
        the_agent.start()
        snapshot, events = the_agent.snapshot(), source.events(RUN_ID)

        async def cancel_mid_save() -> None:
            saving = asyncio.ensure_future(store.asave(snapshot, events, expected_version=None))
            await asyncio.to_thread(store.entered.wait, 10)
            saving.cancel()
            for _ in range(3):
                await asyncio.sleep(0)
            assert not saving.done()  # the write is still running in its thread
            store.gate.set()
            with pytest.raises(asyncio.CancelledError):
                await saving

        asyncio.run(cancel_mid_save())
        assert store.load(RUN_ID) == snapshot  # the write finished: its outcome is known


def test_an_agent_cancelled_during_a_save_is_what_the_store_holds(tmp_path: Path) -> None:
    with Gated(tmp_path / "runs.db") as store:
        store.gate.set()
        the_agent = agent(store, RUN_ID)
        the_agent.start()
        store.gate.clear()
        store.entered.clear()

        async def cancel_mid_save() -> None:
            turn = asyncio.ensure_future(the_agent.asubmit("Plan my trip"))
            await asyncio.to_thread(store.entered.wait, 10)
            turn.cancel()
            store.gate.set()
            with pytest.raises(asyncio.CancelledError):
                await turn

        asyncio.run(cancel_mid_save())
        stored = store.load(RUN_ID)
        assert stored is not None
        assert the_agent.snapshot().model_dump(exclude={"version"}) == stored.model_dump(
            exclude={"version"}
        )


def test_sqlite_aload_is_load(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "runs.db") as store:
        the_agent = agent(store, RUN_ID)
        the_agent.start()
        assert asyncio.run(store.aload(RUN_ID)) == store.load(RUN_ID)
        assert asyncio.run(store.aload("no-such-run")) is None


def test_postgres_asave_and_aload(postgres_url: str) -> None:
    with PostgresStore(postgres_url) as store:
        assert isinstance(store, AsyncRunStore)
        source = MemoryStore()
        the_agent = agent(source, RUN_ID)
        the_agent.start()
        snapshot, events = the_agent.snapshot(), source.events(RUN_ID)
        asyncio.run(store.asave(snapshot, events, expected_version=None))
        assert asyncio.run(store.aload(RUN_ID)) == snapshot


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # (3.12+: fork with threads)
def test_a_forked_child_awaits_its_saves_in_threads_of_its_own() -> None:
    asyncio.run(off_loop(lambda: 1))  # the parent has a worker, idle
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child, which exits without returning here
        code = 1
        try:
            code = 0 if asyncio.run(asyncio.wait_for(off_loop(lambda: 2), 10)) == 2 else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
