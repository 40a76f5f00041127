"""`start(text)`: a run started with its first input in one call.

It is ``start()`` then ``submit(text)``, with no return to the caller between them: a
hypothesis property runs each generated script both ways, without a store and on a
`MemoryStore`, and compares everything a listener, the hooks, the trace, the conversation,
the outcome and the store show. A bad ``text`` changes nothing and stores nothing; a restored
run takes ``text`` only where ``start()`` leaves it ready.
"""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentfsm import Agent, MemoryStore, ScriptedModel, Tool
from agentfsm.errors import GuardFailedError, IllegalTransitionError
from agentfsm.llm.base import ModelResponse
from agentfsm.states.events import Event
from agentfsm.states.names import InputPolicy, RunState
from agentfsm.stores import RunStore
from agentfsm.tools import HookContext, HookKind, Hooks
from tests.agent.agent_support import answer, calls

RUN_ID = "run-start"
NOW = 1_700_000_000.0


def echo(text: str) -> str:
    """Say it back."""
    return text


def script(rounds: int, ask: bool) -> list[ModelResponse]:
    """``rounds`` rounds of one echo call each, then an answer (or a question)."""
    replies = [calls((f"c{i}", "echo", {"text": f"r{i}"})) for i in range(rounds)]
    last = calls(("q", "ask_user", {"question": "Which?"})) if ask else answer("done")
    return [*replies, last]


def build(
    replies: list[ModelResponse],
    told: list[object],
    *,
    store: RunStore | None = None,
    system_prompt: str | None = None,
    max_turns: int | None = None,
    policy: InputPolicy = InputPolicy.REJECT,
) -> Agent:
    hooks = Hooks()

    def hook(context: HookContext) -> None:
        call = context.pending_tool
        told.append(("hook", context.kind, None if call is None else call.id))

    for kind in (HookKind.BEFORE_LLM, HookKind.AFTER_LLM, HookKind.BEFORE_EACH_TOOL):
        hooks.add(kind, hook)
    return Agent(
        ScriptedModel(replies),
        [Tool(echo)],
        ask_user=True,
        hooks=hooks,
        listeners=[told.append],
        run_id=RUN_ID,
        clock=lambda: NOW,
        timer=lambda: 1.0,
        store=store,
        system_prompt=system_prompt,
        max_turns=max_turns,
        input_policy=policy,
    )


def shown(agent: Agent, told: list[object], outcome: object, store: RunStore | None) -> object:
    """Everything observable of a run (the stored snapshot without its save count)."""
    items = [item.model_dump() if hasattr(item, "model_dump") else item for item in told]
    stored = None
    if store is not None:
        snapshot = store.load(RUN_ID)
        assert snapshot is not None
        stored = (
            snapshot.model_dump(exclude={"version"}),
            [event.model_dump() for event in store.events(RUN_ID)],
        )
    return (
        outcome,
        items,
        [entry.model_dump() for entry in agent.trace],
        agent.messages,
        stored,
    )


def both_ways(text: str, one_call: bool, **options: object) -> object:
    rounds, ask = options.pop("rounds", 1), options.pop("ask", False)
    with_store = options.pop("with_store", False)
    store = MemoryStore() if with_store else None
    told: list[object] = []
    agent = build(script(int(str(rounds)), bool(ask)), told, store=store, **options)  # type: ignore[arg-type]
    if one_call:
        outcome = agent.start(text)
    else:
        agent.start()
        outcome = agent.submit(text)
    return shown(agent, told, outcome, store)


@settings(max_examples=40, deadline=None)
@given(
    text=st.text(min_size=1, max_size=12).filter(str.strip),
    rounds=st.integers(0, 3),
    ask=st.booleans(),
    with_store=st.booleans(),
    system_prompt=st.none() | st.text(max_size=8),
    max_turns=st.none() | st.integers(1, 3),
    policy=st.sampled_from(list(InputPolicy)),
)
def test_start_with_text_is_start_then_submit(
    text: str,
    rounds: int,
    ask: bool,
    with_store: bool,
    system_prompt: str | None,
    max_turns: int | None,
    policy: InputPolicy,
) -> None:
    options = {
        "rounds": rounds,
        "ask": ask,
        "with_store": with_store,
        "system_prompt": system_prompt,
        "max_turns": max_turns,
        "policy": policy,
    }
    one = both_ways(text, True, **dict(options))
    two = both_ways(text, False, **dict(options))
    assert one == two


def test_the_async_form_and_the_sync_one_agree() -> None:
    told_async: list[object] = []
    told_sync: list[object] = []
    run_async = build(script(2, False), told_async)
    run_sync = build(script(2, False), told_sync)
    outcome_async = asyncio.run(run_async.astart("hello"))
    outcome_sync = run_sync.start("hello")
    assert outcome_async == outcome_sync
    assert outcome_sync.state == RunState.COMPLETED
    assert outcome_sync.reply == "done"
    assert shown(run_async, told_async, None, None) == shown(run_sync, told_sync, None, None)


def test_without_text_start_only_opens_the_run() -> None:
    told: list[object] = []
    agent = build(script(0, False), told)
    assert agent.start(None).state == RunState.READY
    assert [item.event for item in told if isinstance(item, Event)] == ["start"]


@pytest.mark.parametrize("with_store", [False, True])
@pytest.mark.parametrize("bad", ["", "   ", "\n"])
def test_a_blank_input_is_refused_and_changes_nothing(bad: str, with_store: bool) -> None:
    store = MemoryStore() if with_store else None
    told: list[object] = []
    agent = build(script(0, False), told, store=store)
    with pytest.raises(GuardFailedError) as refused:
        agent.start(bad)
    assert refused.value.event == "submit"
    assert refused.value.state == "created"
    assert "submit_allowed" in str(refused.value)
    assert agent.state == RunState.CREATED
    assert agent.turn == 0
    assert told == []
    assert agent.trace == ()
    assert agent.messages == ()
    if store is not None:
        assert store.load(RUN_ID) is None
        assert store.list_runs() == []
    assert agent.start("now").state == RunState.COMPLETED  # the run is still to be started


@pytest.mark.parametrize("bad", [b"hi", 1, ["hi"]])
def test_an_input_of_the_wrong_type_is_refused_and_changes_nothing(bad: object) -> None:
    store = MemoryStore()
    told: list[object] = []
    agent = build(script(0, False), told, store=store)
    with pytest.raises(TypeError, match="text"):
        agent.start(bad)  # type: ignore[arg-type]
    assert agent.state == RunState.CREATED
    assert told == []
    assert store.load(RUN_ID) is None


def test_a_started_run_refuses_it_and_changes_nothing() -> None:
    told: list[object] = []
    agent = build(script(0, False), told)
    agent.start()
    before = list(told)
    with pytest.raises(IllegalTransitionError) as refused:
        agent.start("again")
    assert refused.value.event == "start"
    assert refused.value.state == "ready"
    assert told == before
    assert agent.state == RunState.READY
    assert agent.messages == ()


def test_a_listener_of_start_is_told_only_once_start_is_stored() -> None:
    store = MemoryStore()
    stored_when_told: list[tuple[str, int]] = []

    def listener(item: object) -> None:
        if isinstance(item, Event):
            snapshot = store.load(RUN_ID)
            stored_when_told.append((item.event, 0 if snapshot is None else snapshot.seq))

    agent = build(script(0, False), [], store=store)
    agent.add_listener(listener)
    agent.start("hi")
    first, second = stored_when_told[:2]
    assert first[0] == "start"
    assert second[0] == "submit"
    assert first[1] >= 2
    assert second[1] >= 2


@pytest.mark.parametrize("with_store", [False, True])
def test_a_pause_a_listener_of_start_asks_for_is_taken_at_the_first_boundary(
    with_store: bool,
) -> None:
    store = MemoryStore() if with_store else None
    agent = build(script(0, False), [], store=store)

    def pause_on_start(item: object) -> None:
        if isinstance(item, Event) and item.event == "start":
            agent.pause()

    agent.add_listener(pause_on_start)
    outcome = agent.start("hi")
    assert outcome.state == RunState.PAUSED
    assert [entry.kind for entry in agent.trace] == ["user_input"]  # no model call yet
    assert agent.loop_state == "thinking"  # paused busy, before its first model call
    assert [m.content for m in agent.messages] == ["hi"]
    assert agent.resume().state == RunState.COMPLETED


def _refuse_start(item: object) -> None:
    """A listener that raises on ``start``."""
    if isinstance(item, Event) and item.event == "start":
        raise RuntimeError("no")


def test_a_listener_of_start_that_raises_without_a_store_leaves_the_run_ready() -> None:
    """As start() then submit(): start raises, so the input is never submitted."""
    agent = build(script(0, False), [])
    agent.add_listener(_refuse_start)
    with pytest.raises(RuntimeError, match="no"):
        agent.start("hi")
    assert agent.state == RunState.READY
    assert agent.messages == ()
    assert agent.turn == 0


def test_a_listener_of_start_that_raises_on_a_store_fails_the_turn_it_hears_of_late() -> None:
    """Group commit: it is told of ``start`` after the input is stored, mid-turn (I12)."""
    store = MemoryStore()
    agent = build(script(0, False), [], store=store)
    agent.add_listener(_refuse_start)
    with pytest.raises(RuntimeError, match="no"):
        agent.start("hi")
    assert (agent.state, agent.reason) == (RunState.FAILED, "error")
    stored = store.load(RUN_ID)
    assert stored is not None
    assert stored.state == RunState.FAILED
    assert [m.content for m in stored.messages] == ["hi"]


def restored(store: MemoryStore, told: list[object], replies: list[ModelResponse]) -> Agent:
    return build(replies, told, store=store)


def test_a_restored_ready_run_takes_text_with_its_claim_in_one_save() -> None:
    store = MemoryStore()
    build(script(0, False), [], store=store).start()
    version = store.load(RUN_ID).version  # type: ignore[union-attr]
    told: list[object] = []
    again = restored(store, told, script(0, False))
    saves: list[list[str]] = []
    original = store.save

    def counted(snapshot, events, *, expected_version):  # type: ignore[no-untyped-def]
        saves.append([str(event.event) for event in events])
        original(snapshot, events, expected_version=expected_version)

    store.save = counted  # type: ignore[method-assign]
    outcome = again.start("hi")
    assert outcome.state == RunState.COMPLETED
    assert outcome.reply == "done"
    assert saves[0][0] == "submit"  # the claim and the input: one save
    assert store.load(RUN_ID).version == version + len(saves)  # type: ignore[union-attr]
    assert next(item.event for item in told if isinstance(item, Event)) == "submit"


@pytest.mark.parametrize("where", ["completed", "paused", "input_required"])
def test_a_restored_run_not_left_ready_by_start_refuses_text_and_stores_nothing(
    where: str,
) -> None:
    store = MemoryStore()
    first = build(script(0, where == "input_required"), [], store=store)
    first.start()
    if where == "paused":
        first.pause()
    else:
        first.submit("first")
    stored = store.load(RUN_ID)
    assert stored is not None
    assert stored.state == where
    told: list[object] = []
    again = restored(store, told, script(0, False))
    with pytest.raises(IllegalTransitionError, match=r"start\(\) to take it up") as refused:
        again.start("more")
    assert refused.value.event == "start"
    assert refused.value.state == where
    assert store.load(RUN_ID) == stored
    assert told == []
    assert again.state == where
    assert again.start().state == where  # start() takes it up as before (and claims it)
    assert store.load(RUN_ID).version == stored.version + 1  # type: ignore[union-attr]
