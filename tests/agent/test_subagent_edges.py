"""Sub-agent trees at their edges: a conflict, a child that never existed, a cycle (I14).

- Two processes take up the same tree: the one whose claim on a child conflicts gets
  `SnapshotConflictError`, and its parent records nothing (a conflict is never a result).
- A factory that raises, returns a non-Agent or an Agent with a store of its own: the call's
  result is a `SubAgentError`, and `assert_tree_valid` agrees (the child never existed).
- An agent tool whose agent has itself as a tool nests only ``max_depth`` levels deep.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from agentfsm import Agent, MemoryStore, replay, tool
from agentfsm.agent import agent_tool, child_run_id
from agentfsm.agent.children import DEFAULT_MAX_DEPTH
from agentfsm.errors import GuardFailedError, RunBusyError, SnapshotConflictError
from agentfsm.llm.base import ModelResponse
from agentfsm.llm.scripted import ScriptedModel
from agentfsm.states import Message
from agentfsm.states.json import JSONObject
from agentfsm.stores.base import DelegatingStore, RunStore
from agentfsm.stores.leases import LeasePolicy
from agentfsm.stores.snapshot import Snapshot
from agentfsm.testing import assert_tree_valid
from tests.agent.agent_support import answer, calls


def responder(tool_name: str, reply: str) -> ScriptedModel:
    """A model that calls ``tool_name`` on each user input and answers ``reply`` after it.

    A pure function of the conversation, so that any process taking the run up gets the
    same answers.
    """

    def respond(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
        if messages[-1].role == "user":
            return calls((f"{tool_name}_{len(messages)}", tool_name, {"task": "tidy"}))
        return answer(reply)

    return ScriptedModel(fallback=respond)


# -- a conflict is never a child's result ----------------------------------------------------

TOP = "top"
MIDDLE = child_run_id(TOP, 1, 1, "helper_1")
BOTTOM = child_run_id(MIDDLE, 1, 1, "worker_1")


class Process:
    """One process's view of the shared store: its claim of ``held`` waits for ``go``."""

    def __init__(self, store: RunStore, held: str) -> None:
        self.store = _Gate(store, held)


class _Gate(DelegatingStore):
    def __init__(self, inner: RunStore, held: str) -> None:
        super().__init__(inner)
        self.held = held
        self.waiting = asyncio.Event()
        self.go = asyncio.Event()

    async def asave(
        self, snapshot: Snapshot, events: Sequence[Any], *, expected_version: int | None
    ) -> None:
        if snapshot.run_id == self.held and not events:  # its claim of the held run
            self.waiting.set()
            await self.go.wait()
        self.save(snapshot, events, expected_version=expected_version)


def tree(
    store: RunStore,
    entered: asyncio.Event,
    go_on: asyncio.Event,
    lease: LeasePolicy | None = None,
) -> Agent:
    """The tree top -> helper (middle) -> worker (bottom), whose ``delete`` needs approval.

    With ``lease=None`` (no run holds a lease) two processes can drive it at once; with a
    `LeasePolicy` the second is refused while the first drives it.
    """

    @tool(policy="require_approval")
    async def delete(path: str) -> str:
        """Delete a file."""
        entered.set()
        await go_on.wait()
        return "deleted"

    def bottom() -> Agent:
        def respond(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
            if messages[-1].role == "user":
                return calls(("del_1", "delete", {"path": "a.txt"}))
            return answer("Deleted a.txt.")

        return Agent(ScriptedModel(fallback=respond), [delete], lease=lease)

    def middle() -> Agent:
        worker = agent_tool(bottom, name="worker", description="Works.")
        return Agent(responder("worker", "Middle done."), [worker], lease=lease)

    helper = agent_tool(middle, name="helper", description="Helps.")
    return Agent(responder("helper", "All tidy."), [helper], store=store, run_id=TOP, lease=lease)


def test_a_conflict_on_a_child_propagates_and_the_parent_records_nothing() -> None:
    """Without leases, two processes drive the tree at once: the loser records nothing."""

    async def scenario() -> None:
        store = MemoryStore()  # (saved from the event loop: the gate below orders the saves)
        entered, go_on = asyncio.Event(), asyncio.Event()
        first = tree(store, entered, go_on)
        waiting = await first.astart("Tidy my folder")
        assert waiting.state == "requires_action"
        [path] = [call.id for call in waiting.pending]
        # Process 1 approves; its bottom run's tool body waits for `go_on`.
        one = asyncio.ensure_future(first.aresolve_action({path: "approve"}))
        await asyncio.wait_for(entered.wait(), 10)
        # Process 2 restores the busy top run and calls start(), as the docs suggest; its
        # claim on the middle run waits until process 1 has moved the middle run on.
        second = Process(store, held=MIDDLE)
        two = asyncio.ensure_future(tree(second.store, asyncio.Event(), go_on).astart())
        await asyncio.wait_for(second.store.waiting.wait(), 10)
        go_on.set()
        with pytest.raises(SnapshotConflictError):
            await asyncio.wait_for(
                one, 10
            )  # process 2 claimed the top run meanwhile: process 1 loses it
        second.store.go.set()
        with pytest.raises(SnapshotConflictError):
            await asyncio.wait_for(
                two, 10
            )  # its claim on the middle run conflicts: nothing is recorded
        middle = store.load(MIDDLE)
        assert middle is not None
        assert middle.state == "completed"
        top = store.load(TOP)
        assert top is not None
        assert top.state == "busy"  # no result recorded for the middle run
        assert not any(e.event == "tool_result" for e in store.events(TOP))
        # Whoever takes the top run up next records the middle run's real answer.
        third = tree(store, asyncio.Event(), go_on)
        outcome = await third.astart()
        assert (outcome.state, outcome.reply) == ("completed", "All tidy.")
        assert [m.content for m in third.messages if m.role == "tool"] == ["Middle done."]
        assert_tree_valid(store, TOP)

    asyncio.run(scenario())


def test_with_leases_the_second_process_is_refused_before_it_claims_anything() -> None:
    async def scenario() -> None:
        store = MemoryStore()
        entered, go_on = asyncio.Event(), asyncio.Event()
        first = tree(store, entered, go_on, LeasePolicy())
        waiting = await first.astart("Tidy my folder")
        [path] = [call.id for call in waiting.pending]
        one = asyncio.ensure_future(first.aresolve_action({path: "approve"}))
        await asyncio.wait_for(entered.wait(), 10)
        versions = {run: _version(store, run) for run in (TOP, MIDDLE, BOTTOM)}
        second = tree(store, asyncio.Event(), go_on, LeasePolicy())
        with pytest.raises(RunBusyError) as refused:
            await second.astart()  # the top run's lease is live: refused, nothing written
        assert refused.value.run_id == TOP
        assert {run: _version(store, run) for run in (TOP, MIDDLE, BOTTOM)} == versions
        go_on.set()
        outcome = await asyncio.wait_for(one, 10)
        assert (outcome.state, outcome.reply) == ("completed", "All tidy.")
        assert_tree_valid(store, TOP)

    asyncio.run(scenario())


# -- a child that never existed --------------------------------------------------------------

CHILD = child_run_id("parent", 1, 1, "helper_1")


def _raises() -> Agent:
    raise RuntimeError("the factory broke")


FACTORIES: dict[str, tuple[Callable[[], Any], str]] = {
    "raises": (_raises, "RuntimeError"),
    "not an agent": (lambda: "not an agent", "must return a new Agent"),
    "own store": (lambda: Agent("scripted:demo", store=MemoryStore()), "store of its own"),
}


LEASED = LeasePolicy()


def _parent_of(
    factory: Callable[[], Any], store: RunStore, lease: LeasePolicy | None = LEASED
) -> Agent:
    helper = agent_tool(factory, name="helper", description="Helps.")
    return Agent(
        responder("helper", "Done anyway."), [helper], store=store, run_id="parent", lease=lease
    )


@pytest.mark.parametrize("failure", sorted(FACTORIES))
def test_a_child_that_never_existed_is_an_error_result_the_tree_checker_accepts(
    failure: str,
) -> None:
    factory, said = FACTORIES[failure]
    store = MemoryStore()
    parent = _parent_of(factory, store)
    outcome = parent.start("Tidy")
    assert (outcome.state, outcome.reply) == ("completed", "Done anyway.")
    [message] = [str(m.content) for m in parent.messages if m.role == "tool"]
    assert message.startswith("[error] SubAgentError")
    assert said in message
    assert store.load(CHILD) is None  # it never existed
    assert any(e.event == "delegated" for e in store.events("parent"))
    assert_tree_valid(store, "parent")


def test_the_tree_checker_still_catches_a_child_gone_missing_after_it_answered() -> None:
    store = MemoryStore()
    parent = _parent_of(lambda: Agent(ScriptedModel().text("Tidied.")), store)
    assert parent.start("Tidy").state == "completed"
    assert_tree_valid(store, "parent")
    store.delete(CHILD)  # its answer is recorded, but the child is gone
    with pytest.raises(AssertionError, match="never stored"):
        assert_tree_valid(store, "parent")


# -- a sub-agent that calls itself -----------------------------------------------------------


def _looping(store: RunStore | None = None, **limit: int) -> Agent:
    """An agent whose one tool is an agent tool of itself (each call nests one level more)."""

    def again() -> Agent:
        return _looping(**limit)

    myself = agent_tool(again, name="myself", description="Asks myself.", **limit)
    run_id = "root" if store is not None else None
    return Agent(responder("myself", "Done."), [myself], store=store, run_id=run_id)


def _depths(store: MemoryStore) -> dict[int, str]:
    """Each stored run's depth (0 for the root), and its run id."""
    return {run.run_id.count(".myself_"): run.run_id for run in store.list_runs()}


def test_a_sub_agent_calling_itself_nests_max_depth_levels_then_its_call_is_refused() -> None:
    store = MemoryStore()
    root = _looping(store)
    outcome = root.start("Go")
    assert (outcome.state, outcome.reply) == ("completed", "Done.")
    depths = _depths(store)
    assert sorted(depths) == list(range(DEFAULT_MAX_DEPTH + 1))  # the root and 8 levels
    deepest = store.load(depths[DEFAULT_MAX_DEPTH])
    assert deepest is not None
    assert deepest.state == "completed"
    [refused] = [str(m.content) for m in deepest.messages if m.role == "tool"]
    assert refused.startswith("[error] SubAgentDepthError")
    assert "depth 9" in refused
    assert "max_depth of 8" in refused
    assert_tree_valid(store, "root")
    for run in store.list_runs():  # every log replays to its snapshot (I10)
        replay(store.events(run.run_id), store.load(run.run_id))


def test_max_depth_is_set_per_agent_tool() -> None:
    store = MemoryStore()
    assert _looping(store, max_depth=2).start("Go").state == "completed"
    assert sorted(_depths(store)) == [0, 1, 2]
    shallow = MemoryStore()
    root = _looping(shallow, max_depth=1)
    root.start("Go")
    assert sorted(_depths(shallow)) == [0, 1]


@pytest.mark.parametrize(
    ("value", "error"), [(0, ValueError), (-1, ValueError), (2.5, TypeError), (True, TypeError)]
)
def test_a_bad_max_depth_is_refused(value: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="max_depth must be a whole number >= 1"):
        agent_tool(lambda: Agent("scripted:demo"), name="h", description="H.", max_depth=value)  # type: ignore[arg-type]


class _Crash(BaseException):
    """The process dies: nothing it does afterwards reaches the store."""


class _Dying(DelegatingStore):
    """Dies at the first save of ``run_id``: that save and every later one never happen."""

    def __init__(self, inner: RunStore, run_id: str) -> None:
        super().__init__(inner)
        self.run_id, self.dead = run_id, False

    def save(
        self, snapshot: Snapshot, events: Sequence[Any], *, expected_version: int | None
    ) -> None:
        self.dead = self.dead or snapshot.run_id == self.run_id
        if self.dead:
            raise _Crash
        super().save(snapshot, events, expected_version=expected_version)


def test_a_parent_cancelled_before_its_child_was_ever_stored_leaves_a_valid_tree() -> None:
    """A crash after the parent stored 'delegated', before its child's first save.

    The crashed process held no lease (with one, the next process waits for it to expire).
    """
    store = MemoryStore()
    dying = _Dying(store, CHILD)
    parent = _parent_of(lambda: Agent(ScriptedModel().text("Tidied."), lease=None), dying, None)
    with pytest.raises(_Crash):
        parent.start("Tidy")
    held = store.load("parent")
    assert held is not None
    assert (held.state, held.loop_state) == ("busy", "delegating")
    assert store.load(CHILD) is None
    # Another process takes the parent up and cancels it before it takes its child up.
    again = _parent_of(lambda: Agent(ScriptedModel().text("Tidied.")), store)
    assert again.cancel().state == "failed"
    assert store.load(CHILD) is None  # the child never existed, and nothing waits on it
    assert_tree_valid(store, "parent")


def test_a_parent_taken_up_and_paused_at_once_pauses_the_child_it_left_busy() -> None:
    """A crash while the child works; another process pauses the tree, then resumes it.

    The crashed process held no lease (with one, the next process waits for it to expire).
    """
    store = MemoryStore()
    dying = _Dying(store, "nobody")

    def crashing(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
        dying.dead = True  # the process dies during the child's model call
        raise _Crash

    def tidied(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
        return answer("Tidied.")

    with pytest.raises(_Crash):
        _parent_of(lambda: Agent(ScriptedModel(fallback=crashing), lease=None), dying, None).start(
            "Tidy"
        )
    child = store.load(CHILD)
    assert child is not None
    assert child.state == "busy"
    again = _parent_of(lambda: Agent(ScriptedModel(fallback=tidied)), store)
    assert again.pause().state == "paused"
    child = store.load(CHILD)
    assert child is not None
    assert child.state == "paused"  # at rest with its parent (I14)
    assert_tree_valid(store, "parent")
    outcome = again.resume()
    assert (outcome.state, outcome.reply) == ("completed", "Done anyway.")
    assert [m.content for m in again.messages if m.role == "tool"] == ["Tidied."]
    assert_tree_valid(store, "parent")


def _version(store: RunStore, run_id: str) -> int | None:
    snapshot = store.load(run_id)
    return None if snapshot is None else snapshot.version


class _Watching(DelegatingStore):
    """Lets a request in at the first save; notes each parent at rest stored over a busy child."""

    def __init__(self, inner: RunStore) -> None:
        super().__init__(inner)
        self.reached: asyncio.Event | None = None
        self.broken: list[str] = []

    async def asave(
        self, snapshot: Snapshot, events: Sequence[Any], *, expected_version: int | None
    ) -> None:
        if self.reached is not None and snapshot.run_id == "parent":
            self.reached.set()
            self.reached = None
            await asyncio.sleep(0)
        self.save(snapshot, events, expected_version=expected_version)

    def save(
        self, snapshot: Snapshot, events: Sequence[Any], *, expected_version: int | None
    ) -> None:
        super().save(snapshot, events, expected_version=expected_version)
        child = self.load(CHILD)
        at_rest = snapshot.run_id == "parent" and snapshot.state != "busy"
        if at_rest and child is not None and child.state == "busy":
            self.broken.append(f"parent stored {snapshot.state} over a busy child")


@pytest.mark.parametrize("request_", ["cancel", "pause"])
def test_a_parent_taken_up_then_asked_to_stop_brings_its_busy_child_to_rest_first(
    request_: str,
) -> None:
    """Simulation seeds 11, 22: the request comes in while the take-up runs (I14)."""
    store = MemoryStore()
    dying = _Dying(store, "nobody")

    def crashing(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
        dying.dead = True  # the process dies during the child's model call
        raise _Crash

    def tidied(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
        return answer("Tidied.")

    with pytest.raises(_Crash):
        _parent_of(lambda: Agent(ScriptedModel(fallback=crashing), lease=None), dying, None).start(
            "Tidy"
        )
    watching = _Watching(store)
    helper = agent_tool(
        lambda: Agent(ScriptedModel(fallback=tidied)), name="helper", description="Helps."
    )
    seen: list[object] = []  # (a listener: the take-up tells before it takes the child up)
    again = Agent(responder("helper", "Done anyway."), [helper], store=watching,
                  run_id="parent", lease=None, listeners=[seen.append])  # fmt: skip

    async def take_up_then_request() -> object:
        watching.reached = reached = asyncio.Event()
        taking_up = asyncio.ensure_future(again.astart())
        await reached.wait()  # the take-up waits for its first save: the request comes in
        await getattr(again, f"a{request_}")()
        return await taking_up

    asyncio.run(take_up_then_request())

    child = store.load(CHILD)
    assert child is not None
    assert (again.state, child.state) == (
        ("failed", "failed") if request_ == "cancel" else ("paused", "paused")
    )
    assert watching.broken == []
    assert_tree_valid(store, "parent")


def test_a_stale_process_whose_expiry_is_refused_leaves_the_child_as_stored() -> None:
    """Simulation seed 285: a refused save undoes the closing of the turn, its child's too (I12).

    Process 1 holds the tree waiting on the child's approval; process 2 pauses it meanwhile.
    Process 1's next call finds the wait overdue and expires it: that save conflicts, so
    process 1 goes back to what the store holds, and the child the expiry would have
    cancelled is left as stored (its parent, paused, still waits on it).
    """
    store = MemoryStore()
    now = [1_700_000_000.0]

    @tool(policy="require_approval")
    def delete(task: str) -> str:
        """Delete files."""
        return "deleted"

    def child() -> Agent:
        return Agent(responder("delete", "Deleted."), [delete])

    def parent() -> Agent:
        helper = agent_tool(child, name="helper", description="Helps.")
        return Agent(responder("helper", "Done."), [helper], store=store, run_id="parent",
                     lease=None, action_timeout=30.0, clock=lambda: now[0])  # fmt: skip

    first = parent()
    assert first.start("Tidy").state == "requires_action"
    second = parent()
    assert second.pause().state == "paused"
    before = store.load(CHILD)
    assert before is not None
    assert before.state == "requires_action"
    now[0] += 60.0  # the wait is overdue
    with pytest.raises(SnapshotConflictError):
        first.submit("And the rest")
    held = store.load("parent")
    assert held is not None
    assert held.state == "paused"
    assert (first.state, first.snapshot().version) == (held.state, held.version)
    after = store.load(CHILD)
    assert after is not None
    assert (after.state, after.version) == ("requires_action", before.version)
    assert_tree_valid(store, "parent")


def test_a_pause_the_grandchild_refuses_leaves_the_whole_tree_busy_as_taken_over() -> None:
    """Simulation seed 24: the middle run's takeover is no reason to fail it (I14).

    Process 1 dies while the bottom run's tool body runs, its leases expire, and process 2
    pauses the top run: the bottom run cannot pause (its call's outcome is unknown), so the
    pause is refused and nothing is paused or failed on the way; `start` then goes on.
    """
    store = MemoryStore()
    now = [1_700_000_000.0]
    dying = _Dying(store, "nobody")

    @tool
    def book(task: str) -> str:
        """Book it."""
        if dying.dead is False and now[0] < 1_700_000_100.0:
            dying.dead = True  # the process dies while the tool body runs
            raise _Crash
        return "booked"

    def level(name: str, tools: list[Any], owner: str, run_store: RunStore | None) -> Agent:
        return Agent(
            responder(name, "Done."), tools, store=run_store, clock=lambda: now[0],
            lease=LeasePolicy(owner=owner), run_id="top" if run_store else None,
        )  # fmt: skip

    def top(owner: str, run_store: RunStore) -> Agent:
        def bottom() -> Agent:
            return level("book", [book], owner, None)

        def middle() -> Agent:
            return level("worker", [agent_tool(bottom, name="worker", description="W.")],
                         owner, None)  # fmt: skip

        helper = agent_tool(middle, name="helper", description="Helps.")
        return level("helper", [helper], owner, run_store)

    with pytest.raises(_Crash):
        top("one", dying).start("Tidy")
    middle_id = child_run_id("top", 1, 1, "helper_1")
    bottom_id = child_run_id(middle_id, 1, 1, "worker_1")
    tree_ids = ("top", middle_id, bottom_id)
    assert [getattr(store.load(run), "state", None) for run in tree_ids] == ["busy"] * 3
    now[0] += 100.0  # process 1's leases have expired
    again = top("two", store)
    with pytest.raises(GuardFailedError):
        again.pause()
    assert [getattr(store.load(run), "state", None) for run in tree_ids] == ["busy"] * 3
    assert_tree_valid(store, "top")
    assert again.start().state == "completed"
    assert_tree_valid(store, "top")
