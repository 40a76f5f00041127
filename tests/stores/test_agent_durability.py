"""An Agent with a store: saved before delivered (I11), restored anywhere, resumed once."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentfsm import Agent, Event, MemoryStore, Message, ScriptedModel, SQLiteStore, replay, tool
from agentfsm.errors import ModelCallError, SnapshotConflictError, StoreWriteError
from agentfsm.states import LoopState, RunState
from agentfsm.stores import RunStore, Snapshot
from agentfsm.testing import assert_history_valid
from agentfsm.tools import ToolPolicy
from tests.stores.durable_support import agent

RUN_ID = "run-1"


def test_every_event_is_stored_before_any_listener_sees_it(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    seen: list[int] = []
    with SQLiteStore(db) as store, SQLiteStore(db) as reader:

        def listener(item: object) -> None:
            if isinstance(item, Event):
                # another connection, as another process would read it
                stored = reader.load(RUN_ID)
                assert stored is not None
                # stored with its batch (group commit): the snapshot may be a few events on
                assert stored.seq >= item.seq
                assert reader.events(RUN_ID, after_seq=item.seq - 1)[0] == item
                seen.append(item.seq)

        the_agent = agent(store, RUN_ID, listeners=[listener])
        the_agent.start()
        the_agent.submit("Plan my trip")

        assert seen == list(range(1, len(seen) + 1))
        assert len(seen) > 10  # transitions and the conversation's records
        assert store.load(RUN_ID) == the_agent.snapshot().model_copy(
            update={"version": store.load(RUN_ID).version}  # type: ignore[union-attr]
        )


def approval_agent(store: RunStore, model: ScriptedModel, ran: list[str]) -> Agent:
    @tool(policy=ToolPolicy.REQUIRE_APPROVAL)
    def pay(amount: int) -> str:
        """Pay an amount."""
        ran.append(f"pay:{amount}")
        return f"paid {amount}"

    @tool
    def lookup(city: str) -> str:
        """Look a city up."""
        ran.append(f"lookup:{city}")
        return f"{city} is nice"

    return Agent(model, [pay, lookup], store=store, run_id=RUN_ID, max_iterations=4, ask_user=True)


def script(skip: int = 0) -> ScriptedModel:
    """The story's model; ``skip`` answers already given (a new process' copy of it)."""
    model = (
        ScriptedModel()
        .tool_call("lookup", city="Oslo")
        .tool_call("pay", amount=30)
        .tool_call("ask_user", question="Window or aisle?")
        .text("Booked, aisle.")
        .text("Anything else?")
    )
    for _ in range(skip):
        asyncio.run(model.complete([], []))
    return model


Step = Callable[[Agent], object]
STOPS: dict[str, tuple[list[Step], str]] = {
    "ready": ([lambda a: a.start()], RunState.READY),
    "requires_action": (
        [lambda a: a.start(), lambda a: a.submit("Book Oslo")],
        RunState.REQUIRES_ACTION,
    ),
    "input_required": (
        [
            lambda a: a.start(),
            lambda a: a.submit("Book Oslo"),
            lambda a: a.resolve_action({c.id: "approve" for c in a.pending}),
        ],
        RunState.INPUT_REQUIRED,
    ),
    "paused": (
        [lambda a: a.start(), lambda a: a.submit("Book Oslo"), lambda a: a.pause()],
        RunState.PAUSED,
    ),
    "completed": (
        [
            lambda a: a.start(),
            lambda a: a.submit("Book Oslo"),
            lambda a: a.resolve_action({c.id: "approve" for c in a.pending}),
            lambda a: a.provide_input("aisle"),
        ],
        RunState.COMPLETED,
    ),
}


def finish(the_agent: Agent) -> None:
    """Drive the approval story to its end from wherever it is."""
    for _ in range(6):
        if the_agent.state == RunState.PAUSED:
            the_agent.resume()
        elif the_agent.state == RunState.REQUIRES_ACTION:
            the_agent.resolve_action({c.id: "approve" for c in the_agent.pending})
        elif the_agent.state == RunState.INPUT_REQUIRED:
            the_agent.provide_input("aisle")
        elif the_agent.state == RunState.READY:
            the_agent.submit("Book Oslo")
        else:
            return


@pytest.mark.parametrize("stop", STOPS)
def test_a_run_restores_exactly_where_it_stopped_and_goes_on_as_if_never_stopped(
    stop: str,
) -> None:
    steps, state = STOPS[stop]
    twin_ran: list[str] = []
    twin = approval_agent(MemoryStore(), script(), twin_ran)
    for step in steps:
        step(twin)
    finish(twin)

    store, ran = MemoryStore(), []
    first = approval_agent(store, script(), ran)
    for step in steps:
        step(first)
    assert first.state == state
    stored = store.load(RUN_ID)
    assert stored is not None

    seen: list[object] = []
    used = len([r for r in first.trace if type(r).__name__ == "LLMCallTrace"])
    again = approval_agent(store, script(used), ran)  # a new process' model
    again.add_listener(seen.append)
    assert (again.state, again.loop_state, again.turn, again.iteration) == (
        first.state,
        first.loop_state,
        first.turn,
        first.iteration,
    )
    assert (again.messages, again.pending, again.question, again.reason, again.trace) == (
        first.messages,
        first.pending,
        first.question,
        first.reason,
        first.trace,
    )
    again.start()  # takes the run up: nothing re-entered, no transition
    assert [s for s in seen if isinstance(s, Event)] == []
    assert (again.state, again.iteration) == (first.state, first.iteration)
    assert store.load(RUN_ID).version == stored.version + 1  # type: ignore[union-attr]

    finish(again)

    assert again.messages == twin.messages
    assert ran == twin_ran
    assert_history_valid(again.messages)
    replay(store.events(RUN_ID), expected=store.load(RUN_ID))


def test_a_failed_run_restores_failed_with_its_reason() -> None:
    store = MemoryStore()
    model = ScriptedModel().fail(
        ModelCallError("HTTP 503", model="scripted", reason="http_status", status_code=503)
    )
    first = Agent(model, store=store, run_id=RUN_ID)
    first.start()
    first.submit("hi")
    assert (first.state, first.reason) == ("failed", "error")

    again = Agent(ScriptedModel().text("Back."), store=store, run_id=RUN_ID)
    again.start()

    assert (again.state, again.reason, again.messages) == ("failed", "error", first.messages)
    assert again.submit("retry").reply == "Back."


def test_a_turn_paused_mid_way_resumes_in_another_agent_where_it_stopped() -> None:
    store = MemoryStore()
    ran: list[str] = []
    first = approval_agent(store, script(), ran)
    first.start()

    @first.on("after_each_tool")
    async def pause_after_lookup(context: object) -> None:
        await first.apause()  # busy: takes effect at the next boundary

    first.submit("Book Oslo")
    assert (first.state, first.loop_state, first.iteration) == ("paused", "thinking", 2)
    assert ran == ["lookup:Oslo"]

    again = approval_agent(store, script(1), ran)
    again.start()
    assert again.state == "paused"
    outcome = again.resume()

    assert outcome.state == "requires_action"
    assert [c.name for c in outcome.pending] == ["pay"]
    assert ran == ["lookup:Oslo"]  # the finished round did not run again
    assert_history_valid(again.messages, open_round=True)


def stored_run(db: Path, ran: list[str], steps: list[Step]) -> None:
    """The approval story taken through ``steps`` in a SQLite file, by an Agent now gone."""
    with SQLiteStore(db) as store:
        first = approval_agent(store, script(), ran)
        for step in steps:
            step(first)


def test_of_two_agents_on_two_connections_resuming_one_run_exactly_one_wins(
    tmp_path: Path,
) -> None:
    db, ran = tmp_path / "runs.db", []
    stored_run(db, ran, [*STOPS["input_required"][0], lambda a: a.pause()])
    with SQLiteStore(db) as one, SQLiteStore(db) as two:
        a = approval_agent(one, script(3), ran)
        b = approval_agent(two, script(3), ran)
        a.start()
        with pytest.raises(SnapshotConflictError):
            b.start()
        a.resume()
        a.provide_input("aisle")
        assert a.state == "completed"
        # the loser never acts on the run: each attempt is refused before anything runs
        with pytest.raises(SnapshotConflictError):
            b.resume()
    assert ran == ["lookup:Oslo", "pay:30"]


def test_two_resumers_deciding_the_same_approval_run_the_tool_once(tmp_path: Path) -> None:
    db, ran = tmp_path / "runs.db", []
    stored_run(db, ran, STOPS["requires_action"][0])
    with SQLiteStore(db) as one, SQLiteStore(db) as two:
        a = approval_agent(one, script(2), ran)
        b = approval_agent(two, script(2), ran)
        a.resolve_action({c.id: "approve" for c in a.pending})
        with pytest.raises(SnapshotConflictError):
            b.resolve_action({c.id: "approve" for c in b.pending})
        # the loser now is what the store holds: the winner's run
        assert (b.state, b.messages) == (a.state, a.messages)
    assert ran == ["lookup:Oslo", "pay:30"]


class Crash(BaseException):
    """Stands for the process dying inside a tool body (the SIGKILL tests do it for real)."""


class DyingStore(MemoryStore):
    """A store whose process dies: once ``dead``, no save reaches it (each raises `Crash`).

    A run settles whatever escapes a step (I12); a dead process cannot, so from the crash
    on, the store keeps what it held when the process died.
    """

    dead = False

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.dead:
            raise Crash
        super().save(*args, **kwargs)


@pytest.mark.parametrize("idempotent", [True, False])
def test_a_call_that_started_without_a_stored_result_runs_again_only_if_idempotent(
    idempotent: bool,
) -> None:
    store, ran = DyingStore(), []

    def tools(crash: bool) -> list[object]:
        @tool(idempotent=idempotent)
        def charge(amount: int) -> str:
            """Charge a card."""
            ran.append(f"charge:{amount}")
            if crash:
                store.dead = True
                raise Crash
            return f"charged {amount}"

        return [charge]

    model = ScriptedModel().tool_call("charge", amount=5).text("Charged.")
    # (no lease: the crash leaves none to wait for; tests/stores/test_lease_processes.py
    # kills a run that holds one)
    first = Agent(model, tools(crash=True), store=store, run_id=RUN_ID, lease=None)  # type: ignore[arg-type]
    first.start()
    with pytest.raises(Crash):
        first.submit("charge me")
    stored = store.load(RUN_ID)
    assert stored is not None
    assert (stored.state, stored.loop_state, len(stored.started)) == ("busy", "acting", 1)

    again = Agent(ScriptedModel().text("Done."), tools(crash=False), store=store, run_id=RUN_ID)  # type: ignore[arg-type]
    store.dead = False
    outcome = again.start()

    assert outcome.state == "completed"
    answer = again.messages[-2]
    if idempotent:
        assert ran == ["charge:5", "charge:5"]
        assert answer.content == "charged 5"
    else:
        assert ran == ["charge:5"]
        assert "ToolOutcomeUnknown" in str(answer.content)
    assert_history_valid(again.messages)


def test_a_full_disk_fails_the_step_keeps_the_stored_run_and_reports_nothing(
    tmp_path: Path,
) -> None:
    opened: list[sqlite3.Connection] = []

    def connect(path: Path) -> sqlite3.Connection:
        opened.append(sqlite3.connect(path, isolation_level=None, check_same_thread=False))
        return opened[-1]

    seen: list[Event] = []
    with SQLiteStore(tmp_path / "runs.db", connect=connect) as store:
        the_agent = Agent(
            ScriptedModel().text("First.").text("Second."),
            store=store,
            run_id=RUN_ID,
            listeners=[lambda e: seen.append(e) if isinstance(e, Event) else None],
        )
        the_agent.start()
        the_agent.submit("one")
        before: Snapshot | None = store.load(RUN_ID)
        delivered = len(seen)
        (pages,) = opened[0].execute("PRAGMA page_count").fetchone()
        opened[0].execute(f"PRAGMA max_page_count = {pages}")  # the disk is now full

        with pytest.raises(StoreWriteError):
            the_agent.submit("x" * 200_000)

        assert store.load(RUN_ID) == before
        assert len(seen) == delivered  # the unsaved transition was never reported
        assert before is not None
        assert (the_agent.state, the_agent.turn, the_agent.messages) == (
            before.state,
            before.turn,
            before.messages,
        )
        opened[0].execute("PRAGMA max_page_count = 1073741823")  # space again
        assert the_agent.submit("two").reply == "Second."
    with SQLiteStore(tmp_path / "runs.db") as again:
        restored = Agent(ScriptedModel(), store=again, run_id=RUN_ID)
        assert [m.content for m in restored.messages] == ["one", "First.", "two", "Second."]


def test_a_reset_and_a_system_prompt_replay_too() -> None:
    store = MemoryStore()
    the_agent = Agent(
        ScriptedModel().text("A.").text("B."),
        system_prompt="Be brief.",
        store=store,
        run_id=RUN_ID,
    )
    the_agent.start()
    the_agent.submit("one")
    the_agent.reset()
    the_agent.submit("two")

    rebuilt = replay(store.events(RUN_ID), expected=store.load(RUN_ID))

    assert rebuilt.messages == (
        Message.system("Be brief."),
        Message.user("two"),
        Message.assistant("B."),
    )
    assert rebuilt.loop_state == LoopState.ANSWERED


def test_an_idempotent_call_run_again_then_crashing_again_still_replays() -> None:
    # (simulation seed 32: the call run again records a second tool_started)
    store, ran = DyingStore(), []

    @tool(idempotent=True)
    def charge(amount: int) -> str:
        """Charge a card."""
        ran.append(f"charge:{amount}")
        store.dead = True
        raise Crash

    model = ScriptedModel().tool_call("charge", amount=5)
    first = Agent(model, [charge], store=store, run_id=RUN_ID, lease=None)
    first.start()
    with pytest.raises(Crash):  # the first process dies in the body...
        first.submit("charge me")
    store.dead = False
    with pytest.raises(Crash):  # ...and so does the one taking it up, running it again
        Agent(model, [charge], store=store, run_id=RUN_ID, lease=None).start()

    stored = store.load(RUN_ID)
    assert stored is not None
    assert (ran, stored.state, stored.started) == (["charge:5", "charge:5"], "busy", ("call_1",))
    replay(store.events(RUN_ID), expected=stored)


class PausingStore(DyingStore):
    """Its async saves wait once ``held`` is set, until the test lets them on (a slow disk)."""

    held: asyncio.Event | None = None

    async def asave(self, snapshot: Snapshot, events: Any, *, expected_version: Any) -> None:
        if self.held is not None:
            reached, self.held = self.held, None
            reached.set()
            await asyncio.sleep(0)
        self.save(snapshot, events, expected_version=expected_version)


@pytest.mark.parametrize("request_", ["cancel", "pause"])
def test_a_request_while_a_restored_run_settles_an_unknown_call_replays(request_: str) -> None:
    # (simulation seed 79: the request was taken before the unknown call was answered)
    store = PausingStore()

    @tool
    def charge(amount: int) -> str:
        """Charge a card."""
        store.dead = True
        raise Crash

    first = Agent(ScriptedModel().tool_call("charge", amount=5), [charge], store=store,
                  run_id=RUN_ID, lease=None)  # fmt: skip
    first.start()
    with pytest.raises(Crash):
        first.submit("charge me")
    store.dead = False
    seen: list[object] = []  # (a listener: the take-up tells before the round's calls)
    again = Agent(ScriptedModel().text("Done."), [charge], store=store, run_id=RUN_ID,
                  lease=None, listeners=[seen.append])  # fmt: skip

    async def take_up_then_request() -> object:
        store.held = reached = asyncio.Event()
        taking_up = asyncio.ensure_future(again.astart())
        await reached.wait()  # the take-up waits for its first save: a request comes in
        await getattr(again, f"a{request_}")()
        return await taking_up

    asyncio.run(take_up_then_request())

    stored = store.load(RUN_ID)
    assert stored is not None
    assert stored.state == ("failed" if request_ == "cancel" else "paused")
    assert "ToolOutcomeUnknown" in str(stored.model_dump())  # answered first, not cancelled
    replay(store.events(RUN_ID), expected=stored)
