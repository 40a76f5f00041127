"""End to end: a tree of three agents over the real `openai` client and a real SQLite file.

The root delegates to a planner, which asks the user a question, then delegates to a payer,
whose transfer needs approval. The process "dies" right after each save of the whole tree
in turn (the store writes the save, then every later write fails, as in a killed process),
and between every two calls into the API the tree is rebuilt from the store by the root's
run id alone, with a new store connection and new model clients. Whatever the point, the
run ends as an uninterrupted one does: the same conversation, the same model calls (none
made twice), the transfer run once; and each run's log replays to its stored snapshot
(I10), the root's carrying the planner's answer without running the planner again.

The dead process leaves the runs it drove busy under its leases: the tree shares a fake
clock, moved past their expiry at the death, and the next process takes each such run
over, recording ``lease_taken_over`` (docs/deployment.md, who may drive a run).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from agentfsm import Agent, Event, OpenAIModel, ToolCall, replay, tool
from agentfsm.agent.children import agent_tool, child_run_id
from agentfsm.llm import RetryPolicy
from agentfsm.stores import LeasePolicy, RunStore, Snapshot
from agentfsm.stores.base import DelegatingStore
from agentfsm.stores.sqlite import SQLiteStore
from agentfsm.testing import (
    FakeClock,
    LoopbackOpenAIServer,
    RecordedRequest,
    Reply,
    assert_history_valid,
)

ROOT = "root"
PLANNER = child_run_id(ROOT, 1, 1, "r1")
PAYER = child_run_id(PLANNER, 1, 2, "p2")
QUESTION = "How much should I pay?"
PAID: list[int] = []


@tool(policy="require_approval")
def transfer(amount: int) -> str:
    """Pay an amount."""
    PAID.append(amount)
    return f"paid {amount}"


def _call(call_id: str, name: str, **arguments: object) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=json.dumps(arguments))


def _respond(request: RecordedRequest) -> Reply:
    """Each agent's next reply, from its tools and how many tool messages it was sent.

    A reply never depends on how many requests came before: a resumed run asks its model
    again for a reply its dead process never stored.
    """
    agent, answered = _asked(request)
    return SCRIPT[agent][answered]


def _asked(request: RecordedRequest) -> tuple[str, int]:
    """Which agent asks (known by its tools), and how many tool messages it sends."""
    tools = json.dumps(request.tools)
    answered = sum(1 for m in request.messages if isinstance(m, dict) and m["role"] == "tool")
    agent = "root" if '"planner"' in tools else "planner" if '"payer"' in tools else "payer"
    return agent, answered


SCRIPT = {
    "root": (
        Reply(tool_calls=(_call("r1", "planner", task="Settle the invoice"),)),
        Reply("Done: the invoice is settled."),
    ),
    "planner": (
        Reply(tool_calls=(_call("p1", "ask_user", question=QUESTION),)),
        Reply(tool_calls=(_call("p2", "payer", task="Pay 42"),)),
        Reply("The invoice is settled: 42 paid."),
    ),
    "payer": (
        Reply(tool_calls=(_call("x1", "transfer", amount=42),)),
        Reply("Paid 42."),
    ),
}
MODEL_CALLS = 7
"""Model calls in an uninterrupted run: two of the root, three of the planner, two of the payer."""


class Died(BaseException):
    """The process died (not an Exception: nothing may treat it as a tool's failure)."""


class DyingStore(DelegatingStore):
    """Writes its first ``lives`` saves, then dies: that save and every later one raise."""

    def __init__(self, inner: RunStore, lives: int | None) -> None:
        super().__init__(inner)
        self.lives = lives
        self.saves = 0

    def save(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        if self.lives is not None and self.saves >= self.lives:
            raise Died
        self.saves += 1
        super().save(snapshot, events, expected_version=expected_version)


def _model(url: str) -> OpenAIModel:
    return OpenAIModel(
        "loopback-model", base_url=url, api_key="test-key", retry=RetryPolicy(max_attempts=1)
    )


def _tree(store: RunStore, url: str, clock: FakeClock) -> Agent:
    """The root agent (restored from ``store`` if it holds the run), a fresh process's view."""

    def payer() -> Agent:
        return Agent(_model(url), [transfer], ask_user=False, clock=clock)

    def planner() -> Agent:
        payer_tool = agent_tool(payer, name="payer", description="Pays.")
        return Agent(_model(url), [payer_tool], clock=clock)

    tools = [agent_tool(planner, name="planner", description="Plans and pays.")]
    return Agent(_model(url), tools, run_id=ROOT, store=store, clock=clock)


def _left_busy(path: Path) -> dict[str, str]:
    """The owner of each run the dead process left busy (its lease, not yet expired)."""
    store = SQLiteStore(path)
    try:
        owners = {}
        for run_id in (ROOT, PLANNER, PAYER):
            snapshot, lease = store.load(run_id), store.lease(run_id)
            if snapshot is not None and snapshot.state == "busy":
                assert lease is not None, run_id  # (busy only under its driver's lease)
                owners[run_id] = lease.owner
        return owners
    finally:
        store.close()


def _check_the_takeovers(path: Path, left_busy: dict[str, str]) -> None:
    """Each run left busy was taken over once, from the dead owner; no other run was."""
    store = SQLiteStore(path)
    try:
        for run_id in (ROOT, PLANNER, PAYER):
            taken = [e.data for e in store.events(run_id) if e.event == "lease_taken_over"]
            if run_id in left_busy:
                assert [t["previous_owner"] for t in taken] == [left_busy[run_id]], run_id
            else:
                assert taken == [], run_id
    finally:
        store.close()


def _answer(root: Agent) -> None:
    """One call into the API that moves the waiting root on."""
    outcome = root.outcome()
    if outcome.state == "input_required":
        assert outcome.question == QUESTION
        assert [c.id for c in outcome.pending] == [f"{ROOT}/r1/{PLANNER}/p1"]
        root.provide_input("42")
    elif outcome.state == "requires_action":
        assert [(c.id, c.name) for c in outcome.pending] == [
            (f"{ROOT}/r1/{PLANNER}/p2/{PAYER}/x1", "transfer")
        ]
        root.resolve_action({outcome.pending[0].id: "approve"})
    else:  # (a failed turn would be a bug: it is not an answer)
        raise AssertionError(f"the root is {outcome.state!r}: {outcome}")


def _run_to_the_end(path: Path, url: str, lives: int | None) -> int:
    """Run the tree, dying after ``lives`` saves, restarting between every two calls."""
    clock = FakeClock()
    dying = DyingStore(SQLiteStore(path), lives)
    try:
        root = _tree(dying, url, clock)
        root.start()
        root.submit("Settle the invoice")
        while root.state != "completed":
            _answer(root)
    except Died:
        pass
    saves = dying.saves
    left_busy = _left_busy(path)
    clock.advance(LeasePolicy().duration + 1.0)  # the dead process's leases expire
    for _ in range(10):  # a new process for every call, until the run is completed
        store = SQLiteStore(path)
        root = _tree(store, url, clock)
        root.start()
        if root.state == "completed":
            store.close()
            _check_the_takeovers(path, left_busy)
            return saves
        if root.state == "ready":  # it died before the submit was stored
            root.submit("Settle the invoice")
        else:
            _answer(root)
        store.close()
    raise AssertionError("the run never completed")


@pytest.fixture
def server() -> Iterator[LoopbackOpenAIServer]:
    with LoopbackOpenAIServer(responder=_respond) as running:
        yield running


def _check_the_finished_tree(path: Path) -> list[str]:
    store = SQLiteStore(path)
    try:
        snapshots = {run_id: store.load(run_id) for run_id in (ROOT, PLANNER, PAYER)}
        for run_id, snapshot in snapshots.items():
            assert snapshot is not None, run_id
            assert snapshot.state == "completed", run_id
            assert_history_valid(snapshot.messages)
            replayed = replay(store.events(run_id), snapshot)  # I10, for every run of the tree
            assert replayed.messages == snapshot.messages
        starts = {run_id: store.events(run_id)[0].data for run_id in (PLANNER, PAYER)}
        assert (starts[PLANNER]["parent_run"], starts[PLANNER]["parent_call"]) == (ROOT, "r1")
        assert (starts[PAYER]["parent_run"], starts[PAYER]["parent_call"]) == (PLANNER, "p2")
        root = snapshots[ROOT]
        assert root is not None
        tool_messages = [m.content for m in root.messages if m.role == "tool"]
        assert tool_messages == ["The invoice is settled: 42 paid."]
        results = [e for e in store.events(ROOT) if e.event == "tool_result"]
        assert len(results) == 1  # the planner's answer consumed exactly once
        return [str(m.content) for m in root.messages]
    finally:
        store.close()


def _bodies(server: LoopbackOpenAIServer) -> list[tuple[str, int]]:
    return [_asked(request) for request in server.requests]


def test_a_three_level_tree_ends_as_an_uninterrupted_one_whenever_the_process_dies(
    tmp_path: Path, server: LoopbackOpenAIServer
) -> None:
    PAID.clear()
    total = _run_to_the_end(tmp_path / "whole.db", server.url, None)
    expected = _check_the_finished_tree(tmp_path / "whole.db")
    assert PAID == [42]
    assert expected[-1] == "Done: the invoice is settled."
    assert len(server.requests) == MODEL_CALLS
    uninterrupted = _bodies(server)
    assert total > 10
    for lives in range(total):
        PAID.clear()
        with LoopbackOpenAIServer(responder=_respond) as fresh:
            path = tmp_path / f"died-after-{lives}.db"
            _run_to_the_end(path, fresh.url, lives)
            assert _check_the_finished_tree(path) == expected, lives
            made = _bodies(fresh)
        # The same model calls: at most the one whose reply died with the process is made
        # again; no run that had come to rest (a child that answered) runs again.
        assert set(made) == set(uninterrupted), lives
        assert len(made) - len(uninterrupted) <= 1, lives
        assert PAID == [42], lives
