"""A save the store refuses leaves the Agent at exactly what the store holds (I12).

An outage refuses loads too, so the Agent cannot read the stored run back: it goes back to
the last snapshot it saved, drops what it did not save, and the same call succeeds once the
store is back. A refused call never saves anything. A save that committed but whose answer
was lost (the store holds the newer version) is found by the next call, which reads the
store first: no decision is applied twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agentfsm import ScriptedModel
from agentfsm.agent import Agent
from agentfsm.errors import IllegalTransitionError, StoreError, StoreWriteError
from agentfsm.llm.base import ModelResponse
from agentfsm.states import Event, Message
from agentfsm.states.json import JSONObject
from agentfsm.stores import MemoryStore, SQLiteStore
from agentfsm.stores.base import DelegatingStore, RunStore, writes_behind
from agentfsm.stores.snapshot import Snapshot
from agentfsm.tools import tool
from tests.agent.agent_support import answer, calls

RAN: list[str] = []


@tool(policy="require_approval")
def refund(amount: float) -> str:
    """Refund an amount (approved by a human)."""
    RAN.append(f"refund:{amount}")
    return "refunded"


@pytest.fixture(autouse=True)
def _clear_spy() -> None:
    RAN.clear()


class OutageStore(MemoryStore):
    """A MemoryStore whose server can go down (every call raises) or lose a save's answer."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.lose_answer = False
        """The next save commits, then raises as if the connection dropped before its ack."""
        self.down_at = 0
        """The server goes down at this save from now on (0: it stays up)."""

    def _reachable(self) -> None:
        if self.down:
            raise StoreError("cannot use the run store 'memory': the server is not reachable")

    def save(self, snapshot: Snapshot, events: Any, *, expected_version: int | None) -> None:
        if self.down_at:
            self.down_at -= 1
            self.down = self.down_at == 0
        self._reachable()
        super().save(snapshot, events, expected_version=expected_version)
        if self.lose_answer:
            self.lose_answer = False
            self.down = True  # the connection went with the answer
            raise StoreWriteError(snapshot.run_id, "memory", "the connection was lost")

    def load(self, run_id: str) -> Snapshot | None:
        self._reachable()
        return super().load(run_id)

    def events(self, run_id: str, after_seq: int = 0) -> list[Event]:
        self._reachable()
        return super().events(run_id, after_seq)


def waiting(store: OutageStore) -> Agent:
    """A run on ``store`` waiting for the approval of one refund."""
    model = ScriptedModel([calls(("c1", "refund", {"amount": 5.0})), answer("done")])
    agent = Agent(model, [refund], store=store, run_id="r")
    assert agent.start("refund me").state == "requires_action"
    return agent


def held(store: OutageStore) -> Snapshot:
    down, store.down = store.down, False
    try:
        snapshot = store.load("r")
    finally:
        store.down = down
    assert snapshot is not None
    return snapshot


def log(store: OutageStore) -> list[str]:
    down, store.down = store.down, False
    try:
        return [event.event for event in store.events("r")]
    finally:
        store.down = down


class TestAnOutageDuringADecision:
    def test_the_agent_waits_as_stored_and_the_same_call_succeeds_later(self) -> None:
        store = OutageStore()
        agent = waiting(store)
        before, events = held(store), log(store)
        store.down = True
        with pytest.raises(StoreError):
            agent.resolve_action({"c1": "approve"})
        assert agent.state == "requires_action"
        assert agent.snapshot() == before  # exactly what the store holds
        assert [call.id for call in agent.pending] == ["c1"]
        assert log(store) == events
        store.down = False
        outcome = agent.resolve_action({"c1": "approve"})
        assert (outcome.state, outcome.reply) == ("completed", "done")
        assert RAN == ["refund:5.0"]
        stored = log(store)
        assert stored.count("resolve_action") == 1
        assert stored.count("tool_started") == 1
        assert "fail" not in stored
        assert "abort" not in stored

    @pytest.mark.parametrize("call", ["pause", "start", "cancel"])
    def test_another_call_after_the_outage_acts_on_the_waiting_run(self, call: str) -> None:
        store = OutageStore()
        agent = waiting(store)
        store.down = True
        with pytest.raises(StoreError):
            agent.resolve_action({"c1": "approve"})
        store.down = False
        events = log(store)
        if call == "start":  # refused (the run is started), and nothing is saved
            with pytest.raises(IllegalTransitionError, match="requires_action"):
                agent.start()
            assert log(store) == events
            assert agent.snapshot() == held(store)
            assert agent.resolve_action({"c1": "approve"}).state == "completed"
        elif call == "pause":
            assert agent.pause().state == "paused"
            assert agent.resume().state == "requires_action"
            assert agent.resolve_action({"c1": "approve"}).state == "completed"
        else:
            assert agent.cancel().state == "failed"
            assert RAN == []
        assert "tool_started" not in log(store) or RAN == ["refund:5.0"]
        assert held(store).state == agent.state

    def test_a_call_refused_during_the_outage_changes_nothing(self) -> None:
        store = OutageStore()
        agent = waiting(store)
        store.down = True
        with pytest.raises(StoreError):
            agent.resolve_action({"c1": "approve"})
        with pytest.raises(StoreError):
            agent.resolve_action({"c1": "approve"})  # still down: refused again, as stored
        assert agent.snapshot() == held(store)
        store.down = False
        assert agent.resolve_action({"c1": "deny"}).state == "completed"
        assert RAN == []


class TestALostAcknowledgement:
    """The save committed; its answer was lost (and the server with it, for a while)."""

    def test_the_next_call_finds_the_decision_stored_and_does_not_apply_it_twice(self) -> None:
        store = OutageStore()
        agent = waiting(store)
        store.lose_answer = True
        with pytest.raises(StoreWriteError):
            agent.resolve_action({"c1": "approve"})
        assert RAN == []  # the tool never ran: its call's input was not known stored
        store.down = False
        assert held(store).state == "busy"  # the decision is stored
        with pytest.raises(IllegalTransitionError, match="busy"):
            agent.resolve_action({"c1": "approve"})  # read from the store first: refused
        assert agent.snapshot() == held(store)
        outcome = agent.start()  # takes the stored busy run up where it is
        assert (outcome.state, outcome.reply) == ("completed", "done")
        # Its start was stored before the body could run, so (not idempotent) it is answered
        # as a call whose outcome is unknown (I11), not run: the approval is used once.
        assert RAN == []
        assert "unknown" in str(agent.messages[-2].content)
        stored = log(store)
        assert stored.count("resolve_action") == 1
        assert stored.count("tool_started") == 1

    def test_a_store_back_at_once_is_read_when_the_save_fails(self) -> None:
        store = OutageStore()
        agent = waiting(store)
        store.lose_answer = True
        original = store.save

        def save(snapshot: Snapshot, events: Any, *, expected_version: int | None) -> None:
            try:
                original(snapshot, events, expected_version=expected_version)
            finally:
                store.down = False  # a blip: the store answers the read-back

        store.save = save  # type: ignore[method-assign]
        with pytest.raises(StoreWriteError):
            agent.resolve_action({"c1": "approve"})
        assert agent.state == "busy"  # what the store holds, read back at once
        assert agent.snapshot() == held(store)
        assert agent.start().state == "completed"
        assert RAN == []  # (its start was stored: outcome unknown, I11)
        assert log(store).count("resolve_action") == 1


def test_an_outage_under_a_nested_approval_leaves_the_tree_as_stored() -> None:
    """The approval of a child's call, addressed by its path: the same edge, one level down."""
    from agentfsm.agent import agent_tool
    from agentfsm.testing import assert_tree_valid

    def respond(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
        if messages[-1].role == "user":  # (a pure function: a child taken up anew answers alike)
            return calls(("c1", "refund", {"amount": 2.0}))
        return answer("child done")

    def helper() -> Agent:
        return Agent(ScriptedModel(fallback=respond), [refund])

    store = OutageStore()
    model = ScriptedModel([calls(("h1", "helper", {"task": "refund"})), answer("all done")])
    tool_ = agent_tool(helper, name="helper", description="Refunds.")
    agent = Agent(model, [tool_], store=store, run_id="r")
    waiting = agent.start("go")
    [path] = [call.id for call in waiting.pending]
    before = held(store)
    for down_at in (1, 2):  # at the parent's save, then at its child's
        store.down_at = down_at
        with pytest.raises(StoreError):
            agent.resolve_action({path: "approve"})
        store.down = False
        assert agent.snapshot() == held(store)
    # The first outage refused the parent's save: it waited as before. The second came after
    # the parent's save (the decision, stored), at its child's: the parent is busy as stored,
    # and `start` takes the stored turn up, giving the child the stored decision.
    assert before.state == "requires_action"
    assert agent.state == "busy"
    assert RAN == []
    outcome = agent.start()
    assert (outcome.state, outcome.reply) == ("completed", "all done")
    assert RAN == ["refund:2.0"]
    assert_tree_valid(store, "r")


class Unreachable(DelegatingStore):
    """Any store behind a connection that can go down (every call then raises)."""

    down = False

    def _reachable(self) -> None:
        if self.down:
            raise StoreError("cannot use the run store: the server is not reachable")

    def save(self, snapshot: Snapshot, events: Any, *, expected_version: int | None) -> None:
        self._reachable()
        super().save(snapshot, events, expected_version=expected_version)

    def load(self, run_id: str) -> Snapshot | None:
        self._reachable()
        return super().load(run_id)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_an_outage_during_a_decision_on_each_store(kind: str, tmp_path: Path) -> None:
    """On SQLite the saves are written behind, in worker threads: the same edge, in flight."""
    inner: RunStore = MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / "runs.db")
    store = Unreachable(inner)
    assert writes_behind(store) == (kind == "sqlite")
    model = ScriptedModel([calls(("c1", "refund", {"amount": 5.0})), answer("done")])
    agent = Agent(model, [refund], store=store, run_id="r")
    assert agent.start("refund me").state == "requires_action"
    waiting = inner.load("r")
    store.down = True
    with pytest.raises(StoreError):
        agent.resolve_action({"c1": "approve"})
    assert agent.snapshot() == waiting
    assert RAN == []
    store.down = False
    assert agent.resolve_action({"c1": "approve"}).reply == "done"
    assert RAN == ["refund:5.0"]
    assert [e.event for e in inner.events("r")].count("resolve_action") == 1
    inner.close()


def test_a_run_another_process_moved_is_taken_up_after_an_outage_refused_a_stale_call() -> None:
    """Simulation seed 80: an Agent behind the store (another process cancelled the run).

    The outage refuses its save and its read-back, so it stays at the last snapshot it knew
    stored, unsure; its next call reads the store first and acts on what the store holds.
    """
    store = OutageStore()
    stale = waiting(store)
    other = Agent(ScriptedModel([answer("unused")]), [refund], store=store, run_id="r")
    assert other.cancel().state == "failed"
    store.down = True
    with pytest.raises(StoreError):
        stale.resolve_action({"c1": "approve"})
    assert stale.state == "requires_action"  # what it was before the call: nothing kept
    store.down = False
    with pytest.raises(IllegalTransitionError):
        stale.resolve_action({"c1": "approve"})
    assert stale.snapshot() == held(store)  # it took up what the store holds first
    assert RAN == []
