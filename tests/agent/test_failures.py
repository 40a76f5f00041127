"""No failure strands a run (the contract's I12) and re-entrant calls keep the contract (I13).

Each test is one way a run used to be left ``busy`` for good, or its history broken: the
run must end at rest in a named state, every open call answered (I7), and accept its next
legal event; a `BaseException` is re-raised once the run is consistent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from agentfsm import ScriptedModel
from agentfsm.agent import Agent, TurnOutcome
from agentfsm.errors import (
    IllegalTransitionError,
    StoreWriteError,
)
from agentfsm.states import Event, Message
from agentfsm.states.json import JSONObject
from agentfsm.stores import MemoryStore
from agentfsm.stores.base import RunStore
from agentfsm.testing import FakeClock, InvariantError
from agentfsm.tools import tool
from tests.agent.agent_support import answer, assert_history_valid, calls

RAN: list[str] = []


@tool
def weather(city: str) -> str:
    """Current weather for a city."""
    RAN.append(f"weather:{city}")
    return f"sunny in {city}"


@pytest.fixture(autouse=True)
def _clear_spy() -> None:
    RAN.clear()


ROUND = calls(("c1", "weather", {"city": "A"}), ("c2", "weather", {"city": "B"}))
THREE = calls(
    ("c1", "weather", {"city": "A"}),
    ("c2", "weather", {"city": "B"}),
    ("c3", "weather", {"city": "C"}),
)


def make(*steps: Any, tools: Sequence[Any] = (weather,), **options: Any) -> Agent:
    options.setdefault("ask_user", True)
    agent = Agent(ScriptedModel(steps), list(tools), **options)
    agent.start()
    return agent


def assert_usable(agent: Agent) -> None:
    """At rest, history valid, and the run takes its next turn and shuts down."""
    assert agent.state != "busy"
    assert_history_valid(agent.messages)
    agent.model = ScriptedModel([answer("again")])
    assert agent.submit("once more").reply == "again"
    assert agent.shutdown().state == "shutdown"


class BoomError(RuntimeError):
    """An application's own failure."""


class TestAnythingEscapingFailsTheTurn:
    def test_a_plain_exception_from_the_model(self) -> None:
        agent = make(BoomError("the user's own model broke"))
        with pytest.raises(BoomError):
            agent.submit("hi")
        assert (agent.state, agent.reason) == ("failed", "error")
        assert_usable(agent)

    def test_a_listener_raising_mid_round(self) -> None:
        agent = make(ROUND, answer("done"))

        def listener(item: object) -> None:
            if isinstance(item, Event) and item.event == "model_replied":
                raise BoomError("listener")

        agent.add_listener(listener)
        with pytest.raises(BoomError):
            agent.submit("hi")
        agent.remove_listener(listener)
        assert (agent.state, agent.reason) == ("failed", "error")
        assert [m.role for m in agent.messages[-3:]] == ["assistant", "tool", "tool"]
        assert RAN == []
        assert_usable(agent)

    def test_a_listener_raising_on_the_completion_leaves_it_completed(self) -> None:
        agent = make(answer("done"))

        def listener(item: object) -> None:
            if isinstance(item, Event) and item.event == "complete":
                raise BoomError("listener")

        agent.add_listener(listener)
        with pytest.raises(BoomError):
            agent.submit("hi")
        agent.remove_listener(listener)
        assert (agent.state, agent.reason) == ("completed", "answered")
        assert_usable(agent)

    @pytest.mark.parametrize(
        ("fault", "reason"),
        [
            (KeyboardInterrupt, "error"),
            (SystemExit, "error"),
            (asyncio.CancelledError, "cancelled"),
        ],
    )
    def test_a_tool_body_raising_a_base_exception(
        self, fault: type[BaseException], reason: str
    ) -> None:
        @tool
        def explode(city: str) -> str:
            """Dies."""
            raise fault()

        agent = make(
            calls(("c1", "weather", {"city": "A"}), ("c2", "explode", {"city": "B"}),
                  ("c3", "weather", {"city": "C"})),
            tools=(weather, explode),
        )  # fmt: skip
        with pytest.raises(fault):
            agent.submit("hi")
        assert (agent.state, agent.reason) == ("failed", reason)
        tool_messages = [m for m in agent.messages if m.role == "tool"]
        assert [m.tool_call_id for m in tool_messages] == ["c1", "c2", "c3"]
        assert RAN == ["weather:A"]
        assert_usable(agent)

    def test_a_cancelled_asubmit_fails_the_turn_as_cancelled(self) -> None:
        @tool
        async def slow(city: str) -> str:
            """Takes forever."""
            await asyncio.Event().wait()
            return "never"

        agent = Agent(ScriptedModel([calls(("c1", "slow", {"city": "A"}))]), [slow])

        async def scenario() -> None:
            await agent.astart()
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(agent.asubmit("hi"), timeout=0.01)

        asyncio.run(scenario())
        assert (agent.state, agent.reason) == ("failed", "cancelled")
        assert [m.role for m in agent.messages[-2:]] == ["assistant", "tool"]
        assert_usable(agent)

    def test_a_dropped_web_request_cancels_the_task(self) -> None:
        model = ScriptedModel()

        async def hang(messages: Sequence[Message], tools: Sequence[JSONObject]) -> Any:
            await asyncio.Event().wait()

        model.reply_with(hang)
        agent = Agent(model)

        async def scenario() -> None:
            await agent.astart()
            task = asyncio.ensure_future(agent.asubmit("hi"))
            await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(scenario())
        assert (agent.state, agent.reason) == ("failed", "cancelled")
        assert_usable(agent)


class _RefusingStore(MemoryStore):
    """Refuses the ``fail_at``-th save (counting from when it is armed)."""

    def __init__(self) -> None:
        super().__init__()
        self.countdown: int | None = None

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.countdown is not None:
            self.countdown -= 1
            if self.countdown == 0:
                raise StoreWriteError("r", ":memory:", "disk full")
        super().save(*args, **kwargs)


class TestTheStoreRefusing:
    @pytest.mark.parametrize("nth", [1, 2, 3, 5])
    def test_the_run_is_what_the_store_holds_and_goes_on(self, nth: int) -> None:
        store: RunStore = _RefusingStore()
        agent = make(ROUND, answer("done"), store=store, run_id="r")
        store.countdown = nth  # type: ignore[attr-defined]
        with pytest.raises(StoreWriteError):
            agent.submit("hi")
        held = store.load("r")
        assert held is not None
        assert (agent.state, agent.messages) == (held.state, held.messages)
        # Whatever the store holds, the run accepts its next legal event.
        if agent.state == "busy":
            agent.cancel()
            assert (agent.state, agent.reason) == ("failed", "cancelled")
        assert_history_valid(agent.messages)
        assert agent.shutdown().state == "shutdown"


@tool(policy="require_approval")
def refund(amount: float) -> str:
    """Refund an amount (approved by a human)."""
    RAN.append(f"refund:{amount}")
    return "refunded"


def _overdue(wait: str, store: RunStore, clock: FakeClock) -> Agent:
    """A stored run whose wait (``action`` or ``input``) is past its deadline."""
    call: tuple[str, str, dict[str, object]] = (
        ("c1", "refund", {"amount": 1.0})
        if wait == "action"
        else ("c1", "ask_user", {"question": "Sure?"})
    )
    agent = make(
        calls(call),
        answer("done"),
        tools=(refund,),
        store=store,
        run_id="r",
        clock=clock,
        action_timeout=60,
        input_timeout=60,
    )
    waiting = "requires_action" if wait == "action" else "input_required"
    assert agent.submit("go").state == waiting
    clock.advance(3600)
    return agent


OVERDUE_CALLS: dict[str, tuple[str, Callable[[Agent], TurnOutcome]]] = {
    "resolve_action": ("action", lambda agent: agent.resolve_action({"c1": "approve"})),
    "submit": ("action", lambda agent: agent.submit("next")),
    "provide_input": ("input", lambda agent: agent.provide_input("yes")),
}


class TestAnExpiryTheStoreRefuses:
    """A call that finds its wait overdue expires it first (I12).

    If the store refuses that save, its error escapes and the run stays the waiting run the
    store holds, whatever the call; the next call expires the wait again.
    """

    @pytest.mark.parametrize("call", sorted(OVERDUE_CALLS))
    def test_the_store_error_escapes_and_the_run_waits_as_stored(self, call: str) -> None:
        wait, do = OVERDUE_CALLS[call]
        store = _RefusingStore()
        clock = FakeClock()
        agent = _overdue(wait, store, clock)
        seen: list[str] = []
        agent.add_listener(lambda item: seen.append(getattr(item, "event", "")))
        before = (agent.state, agent.messages, agent.pending)
        store.countdown = 1  # the save of the expiry
        with pytest.raises(StoreWriteError, match="disk full"):
            do(agent)
        held = store.load("r")
        assert held is not None
        assert (agent.state, agent.messages, agent.pending) == before
        assert (held.state, held.messages) == (agent.state, agent.messages)
        assert "expire" not in seen  # nothing unstored was told
        assert RAN == []

    @pytest.mark.parametrize("call", sorted(OVERDUE_CALLS))
    def test_the_next_call_expires_the_wait_again(self, call: str) -> None:
        wait, do = OVERDUE_CALLS[call]
        store = _RefusingStore()
        agent = _overdue(wait, store, FakeClock())
        store.countdown = 1
        with pytest.raises(StoreWriteError):
            do(agent)
        if call == "submit":
            assert do(agent).reply == "done"  # expired, then a new turn
        else:
            with pytest.raises(IllegalTransitionError) as refused:
                do(agent)
            assert refused.value.state == "failed"  # the state the store holds now
        held = store.load("r")
        assert held is not None
        assert [e.event for e in store.events("r") if e.event == "expire"] == ["expire"]
        assert (held.state, held.messages) == (agent.state, agent.messages)
        assert_history_valid(agent.messages)
        assert RAN == []


class TestOpenRoundCheck:
    def test_a_message_between_the_calls_and_their_answers_is_caught(self) -> None:
        history = [Message.user("hi"), ROUND.to_message(), Message.user("sneaked in")]
        with pytest.raises(InvariantError, match="I7"):
            assert_history_valid(history, open_round=True)
        assert_history_valid(history[:2], open_round=True)

    def test_illegal_events_are_still_illegal(self) -> None:
        agent = make()
        with pytest.raises(IllegalTransitionError):
            agent.resume()


class TestSettlingEdgeCases:
    def test_a_listener_raising_while_the_turn_is_failed_is_noted(self) -> None:
        agent = make(BoomError("model"))
        calls_seen: list[str] = []

        def listener(item: object) -> None:
            if isinstance(item, Event) and item.event == "fail":
                calls_seen.append("fail")
                raise ValueError("the listener broke too")

        agent.add_listener(listener)
        with pytest.raises(BoomError) as raised:
            agent.submit("hi")
        assert calls_seen == ["fail"]
        assert (agent.state, agent.reason) == ("failed", "error")
        if hasattr(raised.value, "__notes__"):
            assert "the listener broke too" in raised.value.__notes__[0]

    def test_a_base_exception_from_a_listener_while_settling_is_raised(self) -> None:
        agent = make(BoomError("model"))

        def listener(item: object) -> None:
            if isinstance(item, Event) and item.event == "fail":
                raise KeyboardInterrupt

        agent.add_listener(listener)
        with pytest.raises(KeyboardInterrupt) as raised:
            agent.submit("hi")
        assert isinstance(raised.value.__cause__, BoomError)
        assert (agent.state, agent.reason) == ("failed", "error")

    def test_the_store_refusing_while_settling_leaves_the_stored_run(self) -> None:
        store = _RefusingStore()
        agent = make(BoomError("model"), store=store, run_id="r")

        def listener(item: object) -> None:
            if isinstance(item, Event) and item.event == "submit":
                store.countdown = 2  # the model fails; the save of the turn's failure fails

        agent.add_listener(listener)
        with pytest.raises(BoomError):
            agent.submit("hi")
        held = store.load("r")
        assert held is not None
        assert (agent.state, held.state) == ("busy", "busy")
        agent.remove_listener(listener)
        assert agent.cancel().reason == "cancelled"  # a run left busy is cancelled at once

    def test_a_listener_raising_on_cancel_still_closes_the_round(self) -> None:
        from agentfsm.tools import tool as declare

        @declare(policy="require_approval")
        def pay(amount: int) -> str:
            """Pays."""
            return "paid"

        agent = make(calls(("c1", "pay", {"amount": 1})), tools=(pay,))
        assert agent.submit("pay").state == "requires_action"

        def listener(item: object) -> None:
            if isinstance(item, Event) and item.event == "cancel":
                raise BoomError("listener")

        agent.add_listener(listener)
        with pytest.raises(BoomError):
            agent.cancel()
        assert (agent.state, agent.reason) == ("failed", "cancelled")
        assert [m.role for m in agent.messages[-2:]] == ["assistant", "tool"]

    def test_requests_from_a_listener_of_need_action_take_the_wait(self) -> None:
        from agentfsm.tools import tool as declare

        @declare(policy="require_approval")
        def pay(amount: int) -> str:
            """Pays."""
            return "paid"

        for request, expected in (("cancel", "failed"), ("pause", "paused")):
            agent = make(calls(("c1", "pay", {"amount": 1})), tools=(pay,))

            def listener(item: object, request: str = request, agent: Agent = agent) -> None:
                if isinstance(item, Event) and item.event == "need_action":
                    assert getattr(agent, request)().state == "requires_action"

            agent.add_listener(listener)
            assert agent.submit("pay").state == expected
            assert_history_valid(agent.messages, open_round=expected == "paused")

    def test_a_stranded_busy_run_with_a_call_in_flight_cannot_pause(self) -> None:
        store = _RefusingStore()

        @tool
        def slow(city: str) -> str:
            """Runs while the store dies."""
            store.countdown = 1
            return "done"

        agent = make(
            calls(("c1", "slow", {"city": "A"})),
            answer("done"),
            tools=(slow,),
            store=store,
            run_id="r",
        )
        with pytest.raises(StoreWriteError):
            agent.submit("hi")  # the save of the call's answer fails: the start is stored
        assert agent.state == "busy"
        with pytest.raises(IllegalTransitionError):
            agent.pause()  # a call may still be running
        assert agent.start().state == "completed"  # taken up as after a crash
