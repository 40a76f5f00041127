"""A round of N non-idempotent calls costs N+1 commits on a store that writes behind.

Each call's ``tool_started`` is saved in one transaction with what waited before it (the
model's reply, or the previous call's answer), and told with it, also when the run has
listeners; the round's last answer is saved before the next model call. At most once holds:
the crash tests (tests/stores/test_crash.py) kill a run in and right after such a save.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from agentfsm import Agent, Event, MemoryStore, ScriptedModel, Snapshot, replay, tool
from agentfsm.agent.vocabulary import AgentListener as Listener
from agentfsm.llm.base import FinishReason, ModelResponse
from agentfsm.states import Message, RunState, ToolCall
from agentfsm.states.json import JSONObject
from agentfsm.stores import RunStore
from agentfsm.stores.base import DelegatingStore
from agentfsm.stores.urls import open_store
from agentfsm.tools.hooks import HookContext, HookKind
from tests.stores.durable_support import agent

RUN_ID = "run-1"
CALLS = 3


class Batches(DelegatingStore):
    """Any store (written behind through this wrapper), keeping each save's event names."""

    def __init__(self, inner: RunStore) -> None:
        super().__init__(inner)
        self.batches: list[list[str]] = []

    def save(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        super().save(snapshot, events, expected_version=expected_version)
        self.batches.append([event.event for event in events])


def reply(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
    """A round of `CALLS` calls of ``send`` after each user message, then a text."""
    if messages[-1].role == "user":
        turn = sum(m.role == "user" for m in messages)
        calls = tuple(
            ToolCall(id=f"t{turn}-{n}", name="send", arguments=json.dumps({"n": n}))
            for n in range(CALLS)
        )
        return ModelResponse(tool_calls=calls, finish_reason=FinishReason.TOOL_CALLS)
    return ModelResponse(content="sent")


def sender(store: RunStore, on_send: Callable[[int], None], listener: Listener) -> Agent:
    """An agent whose ``send`` tool calls ``on_send(n)``, heard by ``listener``."""

    @tool
    def send(n: int) -> str:
        """Send a message (not idempotent: sending twice sends two)."""
        on_send(n)
        return f"sent {n}"

    return Agent(
        ScriptedModel(fallback=reply), [send], store=store, run_id=RUN_ID, listeners=[listener]
    )


ROUND = [
    ["model_replied", "tool_started"],
    *[["tool_result", "tool_started"]] * (CALLS - 1),
    ["tool_result", "round_closed", "tools_finished"],
]
"""The saves of one round of `CALLS` calls: the reply with the first start, each answer
with the next start, the last answer with the round's end (before the next model call)."""


def test_a_round_of_n_calls_costs_n_plus_one_commits_with_a_listener(store_url: str) -> None:
    sent: list[int] = []
    with open_store(store_url) as inner:
        store = Batches(inner)
        the_agent = sender(store, sent.append, lambda item: None)
        the_agent.start("Send three")
        the_agent.submit("Send three more")

        assert the_agent.state == RunState.COMPLETED
        assert sent == [*range(CALLS)] * 2
        turn = [*ROUND, ["model_replied", "complete"]]
        assert store.batches == [["start", "submit"], *turn, ["submit"], *turn]
        stored = inner.load(RUN_ID)
        assert stored is not None
        assert stored.version == 1 + 2 * (CALLS + 2) + 1
        replay(inner.events(RUN_ID), expected=stored)


def test_each_body_runs_once_its_start_and_all_before_it_are_stored(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as store:
        stored_then: list[list[str]] = []
        heard: list[str] = []

        def listener(item: object) -> None:
            if isinstance(item, Event):
                heard.append(item.event)

        heard_then: list[list[str]] = []

        def on_send(n: int) -> None:
            stored_then.append([event.event for event in store.events(RUN_ID)])
            heard_then.append(list(heard))

        the_agent = sender(store, on_send, listener)
        the_agent.start("Send three")

        assert len(stored_then) == CALLS
        assert heard_then == stored_then  # told all that is stored, before the body
        for n, events in enumerate(stored_then):
            assert events[-1] == "tool_started"
            assert events.count("tool_result") == n  # the answer before it, stored with it


def test_writing_behind_a_cancel_asked_on_hearing_an_answer_is_taken_after_the_next_call(
    tmp_path: Path,
) -> None:
    """The answer is told with the next call's start: the cancel waits for its boundary.

    On a store that does not write behind (a MemoryStore), the same cancel is taken at the
    boundary right after the answer (tests/stores/test_group_commit.py).
    """
    log = tmp_path / "effects.log"
    with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as store:
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
        # book's start was stored (and told) with weather:Paris's answer: book ran, and the
        # cancel was taken at the boundary after it; Nice never ran
        assert log.read_text().splitlines() == ["weather:Paris", "book:Rome"]
        nice = next(m for m in the_agent.messages if m.tool_call_id == "c3-t1")
        assert "cancelled" in str(nice.content)
        stored = store.load(RUN_ID)
        assert stored is not None
        replay(store.events(RUN_ID), expected=stored)

    memory_log = tmp_path / "memory.log"
    asked.clear()
    the_agent = agent(MemoryStore(), RUN_ID, memory_log, listeners=[listener])
    the_agent.start()
    the_agent.submit("Plan my trip")
    assert memory_log.read_text().splitlines() == ["weather:Paris"]


def test_writing_behind_a_cancel_asked_by_an_after_each_tool_hook_is_taken_before_the_next_call(
    tmp_path: Path,
) -> None:
    """What the docs advise instead of a listener: the hook runs before the boundary."""
    log = tmp_path / "effects.log"
    with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as store:
        the_agent = agent(store, RUN_ID, log, listeners=[lambda item: None])

        @the_agent.hooks.on(HookKind.AFTER_EACH_TOOL)
        def stop(context: HookContext) -> None:
            the_agent.cancel()

        the_agent.start()
        outcome = the_agent.submit("Plan my trip")

        assert outcome.reason == "cancelled"
        assert log.read_text().splitlines() == ["weather:Paris"]  # book never ran
        stored = store.load(RUN_ID)
        assert stored is not None
        assert [e.event for e in store.events(RUN_ID)].count("tool_started") == 1
