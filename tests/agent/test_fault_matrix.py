"""Every fault kind at every callback point, deterministically (I12): the run ends at rest.

One scenario passes every hook, most listener events, the model, both tools and the store's
save: a round of two calls and an unknown tool, an approval, a question to the user. For each
fault kind and each point, the fault strikes the first time the scenario passes the point;
the run must then be at rest in a named state (or be what its store holds), its history
valid, the fault surfaced unless it is an `Exception` a tool body turns into a result, and
the run must take another turn and shut down.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from agentfsm import Agent, Event, MemoryStore, Message, ScriptedModel, tool
from agentfsm.agent.vocabulary import TurnOutcome
from agentfsm.errors import ModelCallError
from agentfsm.testing import assert_history_valid, assert_pending_valid
from agentfsm.testing.injector import (
    CANCELLATIONS,
    REENTRANT_CALLS,
    Fault,
    FaultInjector,
    FaultKind,
    fault_points,
)
from agentfsm.tools import HookContext
from tests.agent.agent_support import answer, calls


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool(policy="require_approval")
async def book(city: str) -> str:
    """Book a hotel."""
    return f"booked {city}"


def scripted() -> ScriptedModel:
    return ScriptedModel(
        [
            calls(("c1", "weather", {"city": "A"}), ("c2", "teleport", {}),
                  ("c3", "weather", {"city": "B"})),
            answer("two cities"),
            calls(("c4", "book", {"city": "A"})),
            answer("booked"),
            calls(("c5", "ask_user", {"question": "which one?"})),
            answer("noted"),
            calls(("c6", "book", {"city": "B"})),
            calls(("c7", "book", {"city": "C"})),
        ],
        fallback=lambda messages, tools: answer("fallback"),
    ).retry().fail(ModelCallError("down", model="scripted", reason="server_error"))  # fmt: skip


NOW = [0.0]


def note(context: HookContext) -> None:
    """Adds a message: deferred while a round is open, appended otherwise."""
    context.add_message(Message.user("[note]"))


def build() -> tuple[Agent, MemoryStore, FaultInjector]:
    store = MemoryStore()
    NOW[0] = 0.0
    agent = Agent(
        scripted(),
        [weather, book],
        store=store,
        run_id="m",
        max_iterations=3,
        hooks={"after_llm": note},
        action_timeout=60,
        clock=lambda: NOW[0],
    )
    injector = FaultInjector()
    injector.install(agent)
    return agent, store, injector


def _expire(agent: Agent) -> TurnOutcome:
    NOW[0] += 3_600
    return agent.expire()


STEPS: tuple[tuple[str, Callable[[Agent], object], str], ...] = (
    ("start", lambda a: a.start(), "ready"),
    ("submit", lambda a: a.submit("weather?"), "completed"),
    ("submit", lambda a: a.submit("book it"), "requires_action"),
    ("resolve", lambda a: a.resolve_action({"c4": "approve"}), "completed"),
    ("submit", lambda a: a.submit("ask me"), "input_required"),
    ("answer", lambda a: a.provide_input("the first"), "completed"),
)
TAIL: tuple[tuple[str, Callable[[Agent], object], str], ...] = (
    ("submit", lambda a: a.submit("book B"), "requires_action"),
    ("pause", lambda a: a.pause(), "paused"),
    ("resume", lambda a: a.resume(), "requires_action"),
    ("cancel", lambda a: a.cancel(), "failed"),
    ("submit", lambda a: a.submit("book C"), "requires_action"),
    ("expire", _expire, "failed"),
    ("submit", lambda a: a.submit("again"), "failed"),
    ("reset", lambda a: a.reset(), "failed"),
    ("shutdown", lambda a: a.shutdown(), "shutdown"),
)
"""The flows that end a turn otherwise, for the points the first part does not pass."""

_POINTS = fault_points(build()[0])
KINDS = [kind for kind in FaultKind if kind is not FaultKind.REENTRANT_CALL]


def _check_at_rest(agent: Agent, store: MemoryStore, refused: bool) -> None:
    held = store.load("m")
    if held is None:  # the store refused the very first save: the run is not begun
        assert (refused, agent.state, agent.messages) == (True, "created", ())
        return
    if refused:  # the store refused a save: the run is what it holds
        assert (agent.state, agent.messages) == (held.state, held.messages)
    else:
        assert agent.state != "busy", "left busy with no step running"
        assert (held.state, held.messages) == (agent.state, agent.messages)
    last = agent.messages[-1] if agent.messages else None
    open_round = last is not None and bool(last.tool_calls)
    if open_round:
        assert agent.state in ("requires_action", "input_required", "paused", "busy")
    assert_history_valid(agent.messages, open_round=open_round)
    assert_pending_valid(agent)


def _goes_on(agent: Agent) -> None:
    """The run accepts its next legal events: another turn, then shutdown."""
    if agent.state == "shutdown":
        return
    if agent.state == "created":
        agent.start()
    if agent.state == "busy":
        agent.cancel()
    elif agent.state in ("requires_action", "input_required", "paused"):
        agent.cancel() if agent.state != "paused" else agent.resume()
        if agent.state in ("requires_action", "input_required"):
            agent.cancel()
    agent.model = ScriptedModel([answer("again")])
    assert agent.submit("once more").state == "completed"
    assert [m.content for m in agent.messages if m.role == "assistant"][-1] == "again"
    assert agent.shutdown().state == "shutdown"


@pytest.mark.parametrize("point", _POINTS)
@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_a_fault_anywhere_leaves_the_run_at_rest(kind: FaultKind, point: str) -> None:
    agent, store, injector = build()
    injector.arm(Fault(point, kind))
    if _run(STEPS, agent, store, injector, kind, point) and injector.fault is not None:
        _run(TAIL, agent, store, injector, kind, point)
    injector.disarm()
    _goes_on(agent)


def _run(
    steps: tuple[tuple[str, Callable[[Agent], object], str], ...],
    agent: Agent,
    store: MemoryStore,
    injector: FaultInjector,
    kind: FaultKind,
    point: str,
) -> bool:
    """Do ``steps`` until one ends elsewhere than planned; check each. True if all did."""
    for _, step, expected in steps:
        injector.begin_step()
        escaped: BaseException | None = None
        try:
            step(agent)  # the sync facade: a task of its own, which the injector may cancel
        except BaseException as error:
            escaped = error
        _check_step(agent, store, injector, kind, point, escaped)
        if agent.state != expected:
            return False
    return True


def _check_step(
    agent: Agent,
    store: MemoryStore,
    injector: FaultInjector,
    kind: FaultKind,
    point: str,
    escaped: BaseException | None,
) -> None:
    struck = injector.struck
    if escaped is not None:
        assert struck is not None, f"{escaped!r} escaped with no fault struck"
        if injector.raised is not None:
            # Surfaced unchanged (a hook's Exception as the cause of HookFailedError).
            assert injector.raised in (escaped, escaped.__cause__)
        else:
            assert isinstance(escaped, asyncio.CancelledError)
    elif struck is not None and injector.raised is not None:
        # Only a tool body's Exception may be absorbed: it becomes the call's result.
        assert point.startswith("tool:")
        assert isinstance(injector.raised, Exception)
    _check_at_rest(agent, store, escaped is not None and point == "store.save")
    cancelled = escaped is not None and kind in CANCELLATIONS
    if cancelled and agent.state == "failed" and point.startswith(("model", "tool:", "hook:")):
        assert agent.reason == "cancelled"  # struck where the Agent awaits: a cancellation


@pytest.mark.parametrize("point", _POINTS)
@pytest.mark.parametrize("call", REENTRANT_CALLS)
def test_a_call_back_into_the_run_from_anywhere_keeps_the_contract(call: str, point: str) -> None:
    agent, store, injector = build()
    events: list[str] = []
    agent.add_listener(lambda item: events.append(item.event) if _is_run(item) else None)
    injector.arm(Fault(point, FaultKind.REENTRANT_CALL, call=call))
    for _, step, expected in (*STEPS, *TAIL):
        injector.begin_step()
        before = len(events)
        step(agent)  # nothing escapes: a refused call is refused to its caller only
        _check_at_rest(agent, store, refused=False)
        for name, state, came in injector.calls:
            if came in ("ReentrantCallError", "IllegalTransitionError"):
                continue
            # Accepted mid-step: only what has a meaning there, and it took effect (I13).
            assert name in ("cancel", "pause") or (name, state) == ("submit", "busy")
            if name == "cancel":
                assert {"cancel", "fail"} & set(events[before:])
            if name == "pause":
                assert "pause" in events[before:]
        if agent.state != expected:
            break
    injector.disarm()
    _goes_on(agent)


def _is_run(item: object) -> bool:
    return isinstance(item, Event) and item.machine == "run"
