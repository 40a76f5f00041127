"""A cancel or pause asked for while a run is taken up mid-round, after its process died.

The round taken up first settles what the crash left open (I10, I11, I14), and only then
takes the request, at its next step boundary:

- an idempotent call that started with no stored answer runs again first, even when it is
  not the round's first call (a stop asked between two calls is no boundary before it);
- a child run left busy that cannot pause at once (a call of its was running) is taken up,
  with the pause, by its parent's call: it pauses at its next boundary, and its parent with
  it, never stored at rest over it (simulation seed 5, 200 steps);
- a store that refuses the save bringing that child to rest fails no run: the parent is
  what the store holds, and the error reaches the caller (simulation seed 441, 200 steps).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from agentfsm import Agent, MemoryStore, replay, tool
from agentfsm.agent import agent_tool, child_run_id
from agentfsm.errors import StoreWriteError
from agentfsm.llm.base import ModelResponse
from agentfsm.llm.scripted import ScriptedModel
from agentfsm.states import Message
from agentfsm.states.json import JSONObject
from agentfsm.stores.base import DelegatingStore, RunStore
from agentfsm.stores.leases import LeasePolicy
from agentfsm.stores.snapshot import Snapshot
from agentfsm.testing import assert_tree_valid
from tests.agent.agent_support import answer, calls

TOP = "top"
CHILD = child_run_id(TOP, 1, 1, "helper_2")


class _Crash(BaseException):
    """The process dies: nothing it does afterwards reaches the store."""


class _Shared(DelegatingStore):
    """One process's handle on the shared store.

    Once ``dead``, no save reaches the store (the process died); while ``reached`` is set,
    the next save of ``TOP`` waits one turn of the loop, so that a request comes in while the
    take-up runs; every parent stored at rest over a busy child is noted (I14).
    """

    def __init__(self, inner: RunStore) -> None:
        super().__init__(inner)
        self.dead = False
        self.reached: asyncio.Event | None = None
        self.broken: list[str] = []

    async def asave(
        self, snapshot: Snapshot, events: Sequence[Any], *, expected_version: int | None
    ) -> None:
        if self.reached is not None and snapshot.run_id == TOP:
            self.reached.set()
            self.reached = None
            await asyncio.sleep(0)
        self.save(snapshot, events, expected_version=expected_version)

    def save(
        self, snapshot: Snapshot, events: Sequence[Any], *, expected_version: int | None
    ) -> None:
        if self.dead:
            raise _Crash
        super().save(snapshot, events, expected_version=expected_version)
        child = self.load(CHILD)
        at_rest = snapshot.run_id == TOP and snapshot.state != "busy"
        if at_rest and child is not None and child.state == "busy":
            self.broken.append(f"{TOP} stored {snapshot.state} over a busy child")


def _twice(tool_name: str, reply: str, second: str | None = None) -> ScriptedModel:
    """A model calling ``tool_name``, then ``second`` (or ``tool_name`` again), then replying.

    A pure function of the conversation: a process taking the run up gets the same answers.
    """

    def respond(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
        if messages[-1].role == "user":
            size = len(messages)
            return calls(
                (f"{tool_name}_{size}", tool_name, {"task": "a"}),
                (f"{second or tool_name}_{size + 1}", second or tool_name, {"task": "b"}),
            )
        return answer(reply)

    return ScriptedModel(fallback=respond)


def _jot(store: _Shared, ran: list[str]) -> Any:
    """An idempotent tool whose first call with task ``b`` kills the process mid-body."""

    @tool(idempotent=True)
    def jot(task: str) -> str:
        """Jot a note down."""
        ran.append(task)
        if task == "b" and ran.count("b") == 1:
            store.dead = True
            raise _Crash
        return f"jotted {task}"

    return jot


async def _take_up_then(agent: Agent, store: _Shared, request: str) -> None:
    """``agent.astart()`` taking its stored busy run up, and ``request`` while it saves."""
    store.reached = reached = asyncio.Event()
    taking_up = asyncio.ensure_future(agent.astart())
    await reached.wait()  # the take-up waits for its first save: the request comes in
    await getattr(agent, f"a{request}")()
    await taking_up


@pytest.mark.parametrize("request_", ["cancel", "pause"])
def test_a_request_waits_for_an_idempotent_call_run_again_after_an_answered_one(
    request_: str,
) -> None:
    store, ran = MemoryStore(), []
    dying = _Shared(store)
    first = Agent(_twice("jot", "Done."), [_jot(dying, ran)], store=dying, run_id=TOP,
                  lease=None)  # fmt: skip
    with pytest.raises(_Crash):
        first.start("Jot both")
    assert ran == ["a", "b"]
    again_store = _Shared(store)
    seen: list[object] = []  # (a listener: the take-up tells before the round's calls)
    again = Agent(_twice("jot", "Done."), [_jot(again_store, ran)], store=again_store,
                  run_id=TOP, listeners=[seen.append])  # fmt: skip

    asyncio.run(_take_up_then(again, again_store, request_))

    stored = store.load(TOP)
    assert stored is not None
    replay(store.events(TOP), expected=stored)  # the request at a step boundary (I10)
    assert stored.state == ("failed" if request_ == "cancel" else "paused")
    assert ran == ["a", "b", "b"]  # run again before the request was taken


def test_a_parent_paused_while_taken_up_pauses_with_the_busy_child_it_takes_up() -> None:
    """Simulation seed 5: the child cannot pause at once (its call was running)."""
    store, ran = MemoryStore(), []
    seen: list[object] = []  # (a listener: the take-up tells before the round's calls)

    def process(shared: _Shared, lease: LeasePolicy | None) -> Agent:
        @tool
        def note(task: str) -> str:
            """Note it."""
            return "noted"

        def child() -> Agent:
            return Agent(_twice("jot", "Tidied."), [_jot(shared, ran)], lease=lease)

        helper = agent_tool(child, name="helper", description="Helps.")
        return Agent(_twice("note", "All done.", second="helper"), [note, helper],
                     store=shared, run_id=TOP, lease=lease, listeners=[seen.append])  # fmt: skip

    with pytest.raises(_Crash):
        process(_Shared(store), None).start("Tidy")  # dies in the child's second call
    assert [getattr(store.load(run), "state", None) for run in (TOP, CHILD)] == ["busy"] * 2
    shared = _Shared(store)
    again = process(shared, LeasePolicy())  # (the dead process held no lease)

    asyncio.run(_take_up_then(again, shared, "pause"))

    assert shared.broken == []  # never stored at rest over its busy child (I14)
    assert [getattr(store.load(run), "state", None) for run in (TOP, CHILD)] == ["paused"] * 2
    assert ran == ["a", "b", "b"]  # the child's call ran again, then the child paused
    assert_tree_valid(store, TOP)
    for run in (TOP, CHILD):
        replay(store.events(run), expected=store.load(run))
    outcome = again.resume()
    assert (outcome.state, outcome.reply) == ("completed", "All done.")
    assert [m.content for m in again.messages if m.role == "tool"] == ["noted", "Tidied."]
    assert_tree_valid(store, TOP)


class _Refusing(_Shared):
    """`_Shared`, whose next save of ``refused`` fails (`StoreWriteError`: nothing written)."""

    refused: str | None = None

    def save(
        self, snapshot: Snapshot, events: Sequence[Any], *, expected_version: int | None
    ) -> None:
        if snapshot.run_id == self.refused:
            self.refused = None
            raise StoreWriteError(snapshot.run_id, "runs.db", "disk I/O error")
        super().save(snapshot, events, expected_version=expected_version)


@pytest.mark.parametrize("when", ["while taken up", "at once"])
def test_a_refused_save_of_the_child_a_pause_brings_to_rest_fails_no_run(when: str) -> None:
    """Simulation seed 441: the store's error is no failure of the parent (§2, I12, I14)."""
    store, now = MemoryStore(), [1_700_000_000.0]
    seen: list[object] = []

    def process(shared: _Shared, owner: str) -> Agent:
        def crashing(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
            if owner == "one":
                shared.dead = True  # the process dies during the child's model call
                raise _Crash
            return answer("Tidied.")

        def child() -> Agent:
            return Agent(ScriptedModel(fallback=crashing), clock=lambda: now[0],
                         lease=LeasePolicy(owner=owner))  # fmt: skip

        helper = agent_tool(child, name="helper", description="Helps.")
        return Agent(_twice("note", "All done.", second="helper"), [_note(), helper],
                     store=shared, run_id=TOP, clock=lambda: now[0],
                     lease=LeasePolicy(owner=owner), listeners=[seen.append])  # fmt: skip

    with pytest.raises(_Crash):
        process(_Shared(store), "one").start("Tidy")
    now[0] += 100.0  # process one's leases have expired
    shared = _Refusing(store)
    again = process(shared, "two")
    shared.refused = CHILD  # the save that pauses the child fails

    def pause() -> None:
        if when == "at once":
            again.pause()
        else:
            asyncio.run(_take_up_then(again, shared, "pause"))

    with pytest.raises(StoreWriteError):
        pause()

    assert shared.broken == []  # never stored at rest over its busy child (I14)
    assert [getattr(store.load(run), "state", None) for run in (TOP, CHILD)] == ["busy"] * 2
    assert again.state == "busy"  # what the store holds (I12), to take up again
    assert_tree_valid(store, TOP)
    outcome = again.start()
    assert (outcome.state, outcome.reply) == ("completed", "All done.")
    assert_tree_valid(store, TOP)


def _note() -> Any:
    @tool
    def note(task: str) -> str:
        """Note it."""
        return "noted"

    return note
