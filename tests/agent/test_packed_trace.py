"""A run with no store keeps its trace packed; nobody can tell, but the collector.

A hypothesis property runs each generated script (tool calls that succeed, fail, are
refused or ask the user; model calls with and without usage) three ways: with no store and
a listener, with no store and no listener, and on a `MemoryStore` (whose runs keep their
entries as they are, since every save reads the whole trace). Everything a reader sees is
the same: what the listener is told, `Agent.trace` entry by entry (fields given included),
`Agent.snapshot()`, `context_usage`, and what a store set in the middle of the run holds.
"""

from __future__ import annotations

import gc
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentfsm import Agent, MemoryStore, ScriptedModel, Tool
from agentfsm.fsm.trace import ToolExecutionTrace
from agentfsm.llm.base import ModelResponse, Usage
from agentfsm.states.names import RunState
from agentfsm.stores import RunStore
from tests.agent.agent_support import answer, calls

RUN_ID = "run-packed"
NOW = 1_700_000_000.0


def echo(text: str) -> str:
    """Say it back."""
    return text


def broken(text: str) -> str:
    """Fail."""
    raise RuntimeError(f"broken on {text}")


def listing(text: str) -> list[str]:
    """An output that is JSON, not text."""
    return [text, text]


CALLS = {
    "echo": ("echo", {"text": "hi"}),
    "broken": ("broken", {"text": "x"}),
    "listing": ("listing", {"text": "y"}),
    "unknown": ("nowhere", {}),
    "invalid": ("echo", {"text": 3}),
}


def script(rounds: list[list[str]], usage: list[bool], ask: bool) -> list[ModelResponse]:
    replies = []
    for i, kinds in enumerate(rounds):
        reply = calls(*((f"c{i}_{k}", *CALLS[kind]) for k, kind in enumerate(kinds)))
        if usage[i % len(usage)]:
            counts = Usage(prompt_tokens=10 + i, completion_tokens=2, total_tokens=12 + i)
            reply = reply.model_copy(update={"usage": counts})
        replies.append(reply)
    last = calls(("q", "ask_user", {"question": "Which?"})) if ask else answer("done")
    return [*replies, last]


def build(
    replies: list[ModelResponse], told: list[object] | None, store: RunStore | None
) -> Agent:
    return Agent(
        ScriptedModel(replies),
        [Tool(echo), Tool(broken), Tool(listing)],
        ask_user=True,
        listeners=[] if told is None else [told.append],
        run_id=RUN_ID,
        clock=lambda: NOW,
        timer=lambda: 1.0,
        store=store,
        max_turns=2,
    )


def seen(agent: Agent, told: list[object] | None) -> Any:
    """What a reader can see of the run's trace (and what it was told)."""
    trace = agent.trace
    return (
        None if told is None else [_dumped(item) for item in told],
        [entry.model_dump() for entry in trace],
        [entry.model_fields_set for entry in trace],
        [e.result.model_fields_set for e in trace if isinstance(e, ToolExecutionTrace)],
        agent.snapshot().model_dump(exclude={"version"}),
        agent.context_usage,
    )


def _dumped(item: object) -> object:
    dump = getattr(item, "model_dump", None)
    return item if dump is None else dump()


round_kinds = st.lists(st.sampled_from(sorted(CALLS)), min_size=1, max_size=3)


@settings(max_examples=40, deadline=None)
@given(
    rounds=st.lists(round_kinds, max_size=3),
    usage=st.lists(st.booleans(), min_size=1, max_size=3),
    ask=st.booleans(),
)
def test_a_packed_trace_reads_as_the_stored_runs(
    rounds: list[list[str]], usage: list[bool], ask: bool
) -> None:
    views = []
    for store, listening in ((None, True), (None, False), (MemoryStore(), True)):
        told: list[object] | None = [] if listening else None
        agent = build(script(rounds, usage, ask), told, store)
        outcome = agent.start("go")
        assert outcome.state == (RunState.INPUT_REQUIRED if ask else RunState.COMPLETED)
        assert agent._packed is (store is None)  # (the first model call's entry, at least)
        views.append(seen(agent, told))
    packed, silent, stored = views
    assert packed == stored
    assert silent[1:] == stored[1:]  # the same trace, with no listener to tell


def test_a_store_set_in_the_middle_of_a_run_finds_its_trace_unpacked() -> None:
    first = script([["echo", "listing"]], [True], False)
    replies = [*first, *script([["broken"]], [False], False)]
    agent = build(replies, [], None)
    agent.start("first")
    gc.collect()
    # the echo call's entry is strings and numbers: untracked; the model call's holds its
    # usage and the listing's its list output, which the collector walks
    packed = [item for item in agent._trace if type(item) is tuple]
    assert [gc.is_tracked(item) for item in packed] == [True, False, True, False]
    before = [entry.model_dump() for entry in agent.trace]

    # A store set since: the next step begins by unpacking the trace, as each save's
    # snapshot reads it whole (`_group` is that beginning, called here on its own).
    agent.store = MemoryStore()
    agent._group()

    assert not agent._packed
    assert all(type(item) is not tuple for item in agent._trace)
    assert [entry.model_dump() for entry in agent.trace] == before
    assert list(agent.snapshot().trace) == list(agent.trace)


def test_a_packed_trace_is_built_once_for_its_readers() -> None:
    replies = [*script([["echo"]], [False], False), *script([["echo", "broken"]], [True], False)]
    agent = build(replies, [], None)
    agent.start("first")
    first = agent.trace
    assert agent.trace == first
    assert all(a is b for a, b in zip(agent.trace, first, strict=True))  # built once each
    assert list(agent.snapshot().trace) == list(first)

    agent.submit("second")

    later = agent.trace
    assert len(later) > len(first)
    assert all(a is b for a, b in zip(later, first, strict=False))  # the older ones kept
    packed = [type(item) is tuple for item in agent._trace]
    assert packed == [entry.kind != "user_input" for entry in later]  # still packed
    reset_view = build(list(replies), [], None)
    reset_view.start("first")
    reset_view.submit("second")
    assert [e.model_dump() for e in reset_view.trace] == [e.model_dump() for e in later]
