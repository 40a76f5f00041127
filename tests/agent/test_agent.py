"""The Agent drives both machines, the model and the tools as the contract says."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentfsm import ScriptedModel
from agentfsm.agent import INCOMPLETE_MESSAGE, Agent
from agentfsm.errors import (
    GuardFailedError,
    HookFailedError,
    HookMessageError,
    IllegalTransitionError,
    ModelCallError,
)
from agentfsm.fsm.trace import LLMCallTrace, ToolExecutionTrace, UserInputTrace
from agentfsm.states import Event, Message
from agentfsm.tools import HookContext, HookKind, tool
from agentfsm.tools.policy import Decision
from tests.agent.agent_support import answer, assert_history_valid, calls

RAN: list[str] = []


@tool
def weather(city: str) -> str:
    """Current weather for a city."""
    RAN.append(f"weather:{city}")
    return f"sunny in {city}"


@tool(policy="require_approval")
def book(city: str) -> str:
    """Book a table."""
    RAN.append(f"book:{city}")
    return "booked"


@tool(client_side=True)
def location() -> str:
    """The user's location, from the application."""
    raise AssertionError("a client-side tool has no body that runs")


@pytest.fixture(autouse=True)
def _clear_spy() -> None:
    RAN.clear()


def make(*steps: Any, **options: Any) -> tuple[Agent, ScriptedModel, list[Any]]:
    model = ScriptedModel(steps)
    seen: list[Any] = []
    options.setdefault("ask_user", True)
    agent = Agent(model, [weather, book, location], listeners=[seen.append], **options)
    agent.start()
    return agent, model, seen


def test_turn_with_a_tool_round_answers_and_records_everything() -> None:
    agent, model, seen = make(
        calls(("c1", "weather", {"city": "Paris"}), ("c2", "weather", {"city": "Rome"})),
        answer("Sunny in both."),
        system_prompt="You are terse.",
    )

    outcome = agent.submit("Weather in Paris and Rome?")

    assert (outcome.state, outcome.reason, outcome.reply) == (
        "completed",
        "answered",
        "Sunny in both.",
    )
    assert [m.role for m in agent.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    assert [m.content for m in agent.messages[3:5]] == ["sunny in Paris", "sunny in Rome"]
    assert RAN == ["weather:Paris", "weather:Rome"]
    assert (agent.turn, agent.iteration) == (1, 2)
    events = [e for e in seen if isinstance(e, Event)]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [(e.machine, e.event) for e in events] == [
        ("run", "start"), ("run", "submit"), ("loop", "model_replied"),
        ("conversation", "tool_started"), ("conversation", "tool_result"),
        ("conversation", "tool_started"), ("conversation", "tool_result"),
        ("conversation", "round_closed"),
        ("loop", "tools_finished"), ("loop", "model_replied"), ("run", "complete"),
    ]  # fmt: skip
    # the conversation records carry what they record: the reply, each call's answer
    assert events[2].data["message"] == agent.messages[2].model_dump(mode="json")
    assert [e.data["message"] for e in events if e.event == "tool_result"] == [
        m.model_dump(mode="json") for m in agent.messages[3:5]
    ]
    kinds = [type(t) for t in agent.trace]
    assert kinds == [
        UserInputTrace,
        LLMCallTrace,
        ToolExecutionTrace,
        ToolExecutionTrace,
        LLMCallTrace,
    ]
    assert model.requests[0].messages[0] == Message.system("You are terse.")
    assert {t["function"]["name"] for t in model.requests[0].tools} == {
        "weather",
        "book",
        "location",
        "ask_user",
    }  # type: ignore[index]
    assert_history_valid(agent.messages)


def test_turn_at_its_iteration_cap_completes_incomplete_and_says_so() -> None:
    looping = [calls((f"c{i}", "weather", {"city": "Oslo"})) for i in range(5)]
    agent, model, _ = make(*looping, max_iterations=3)

    outcome = agent.submit("Keep checking.")

    assert (outcome.state, outcome.reason) == ("completed", "max_iterations")
    assert outcome.reply == INCOMPLETE_MESSAGE.format(n=3)
    assert "incomplete" in (outcome.reply or "")
    assert (len(model.requests), agent.iteration, len(RAN)) == (3, 3, 3)
    assert_history_valid(agent.messages)


@pytest.mark.parametrize(
    ("decision", "ran", "tool_message"),
    [
        ("approve", ["book:Paris"], "booked"),
        (Decision.approve(), ["book:Paris"], "booked"),
        ("deny", [], "denied"),
        (Decision.deny("not today"), [], "not today"),
    ],
    ids=["approve-word", "approve", "deny-word", "deny-with-reason"],
)
def test_approval_runs_or_refuses_the_call(
    decision: Any, ran: list[str], tool_message: str
) -> None:
    agent, _, _ = make(calls(("c1", "book", {"city": "Paris"})), answer("Done."))

    waiting = agent.submit("Book Paris")
    assert (waiting.state, [c.id for c in waiting.pending]) == ("requires_action", ["c1"])
    assert RAN == []

    outcome = agent.resolve_action({"c1": decision})

    assert outcome.state == "completed"
    assert ran == RAN
    assert tool_message in (agent.messages[-2].content or "")
    assert_history_valid(agent.messages)


def test_client_side_tool_gets_the_application_output() -> None:
    agent, _, _ = make(calls(("c1", "location", {})), answer("You are in Lyon."))

    assert agent.submit("Where am I?").state == "requires_action"
    outcome = agent.resolve_action({"c1": Decision.output({"city": "Lyon"})})

    assert outcome.reply == "You are in Lyon."
    assert '"Lyon"' in (agent.messages[-2].content or "")


def test_resolve_action_must_decide_exactly_the_pending_calls() -> None:
    agent, _, _ = make(calls(("c1", "book", {"city": "Rome"})), answer("ok"))
    agent.submit("Book Rome")
    before = agent.messages

    with pytest.raises(GuardFailedError, match="decides_every_pending_call"):
        agent.resolve_action({"c9": "approve"})
    with pytest.raises(ValueError, match="'maybe'"):
        agent.resolve_action({"c1": "maybe"})

    assert (agent.state, agent.messages) == ("requires_action", before)


def test_ask_user_waits_for_input_and_the_answer_becomes_its_tool_message() -> None:
    agent, _, _ = make(
        calls(("c1", "ask_user", {"question": "Which city?"})), answer("Rome it is.")
    )

    waiting = agent.submit("Plan a trip")
    assert (waiting.state, waiting.question) == ("input_required", "Which city?")
    assert agent.input_request is None  # (the model's own question: no tool's request)

    outcome = agent.provide_input("Rome")

    assert outcome.reply == "Rome it is."
    assert agent.messages[-2] == Message.tool("c1", "Rome", name="ask_user")
    assert [type(t) for t in agent.trace].count(UserInputTrace) == 2
    with pytest.raises(IllegalTransitionError):
        agent.provide_input("again")


@pytest.mark.parametrize("waiting_on", ["book", "ask_user"])
def test_cancel_while_waiting_fails_the_turn_and_keeps_history_valid(waiting_on: str) -> None:
    arguments = {"city": "Oslo"} if waiting_on == "book" else {"question": "When?"}
    agent, _, _ = make(calls(("c1", waiting_on, arguments)), answer("second turn"))
    agent.submit("go")

    outcome = agent.cancel()

    assert (outcome.state, outcome.reason, agent.loop_state) == ("failed", "cancelled", "aborted")
    assert "cancelled" in (agent.messages[-1].content or "")
    assert_history_valid(agent.messages)
    assert agent.submit("again").reply == "second turn"  # a failed turn is at rest


def test_wait_expires_after_its_timeout() -> None:
    now = [1000.0]
    agent, _, _ = make(
        calls(("c1", "book", {"city": "Oslo"})), action_timeout=30.0, clock=lambda: now[0]
    )
    agent.submit("Book Oslo")
    with pytest.raises(GuardFailedError, match="deadline"):
        agent.expire()  # too early: nothing changes
    assert agent.state == "requires_action"

    now[0] += 30.0
    with pytest.raises(IllegalTransitionError, match="'failed'"):
        agent.resolve_action({"c1": "approve"})  # the late answer finds the wait expired

    assert (agent.state, agent.reason) == ("failed", "expired")
    assert RAN == []
    assert_history_valid(agent.messages)


def test_model_failure_fails_the_turn_with_the_error_and_fires_on_error() -> None:
    failure = ModelCallError("server said 400", model="fake", reason="status", status_code=400)
    agent, _, _ = make(failure)
    fired: list[str] = []
    agent.on("on_error")(lambda context: fired.append(context.kind))

    outcome = agent.submit("hello")

    assert (outcome.state, outcome.reason, agent.loop_state) == ("failed", "error", "errored")
    assert fired == ["on_error"]
    assert agent.messages[-1] == Message.user("hello")


def test_hooks_fire_in_the_documented_order_and_counts() -> None:
    agent, _, _ = make(
        calls(("c1", "weather", {"city": "A"}), ("c2", "weather", {"city": "B"})), answer("done")
    )
    order: list[str] = []
    for kind in HookKind:
        agent.on(kind)(lambda context: order.append(context.kind))

    agent.submit("go")

    assert order == [
        "after_user_input", "before_llm", "after_llm", "before_tools",
        "before_each_tool", "after_each_tool", "before_each_tool", "after_each_tool",
        "after_tools", "before_llm", "after_llm", "on_complete",
    ]  # fmt: skip


def test_messages_added_by_hooks_keep_the_tool_messages_together() -> None:
    agent, _, _ = make(calls(("c1", "weather", {"city": "A"})), answer("done"))

    @agent.on("after_llm")
    def note(context: HookContext) -> None:
        context.add_message(Message.system(f"noted after iteration {context.iteration}"))

    agent.submit("go")

    assert_history_valid(agent.messages)
    assert [m.content for m in agent.messages if m.role == "system"] == [
        "noted after iteration 1",
        "noted after iteration 2",
    ]


def test_per_call_hook_adding_a_message_fails_the_turn_naming_the_handler() -> None:
    agent, _, _ = make(calls(("c1", "weather", {"city": "A"})), answer("never"))

    @agent.on("before_each_tool")
    def chatty(context: HookContext) -> None:
        context.add_message(Message.user("hi"))

    with pytest.raises(HookMessageError, match="chatty"):
        agent.submit("go")

    assert (agent.state, agent.reason) == ("failed", "error")
    assert Message.user("hi") not in agent.messages
    assert_history_valid(agent.messages)


def test_failing_hook_propagates_and_fails_the_run() -> None:
    agent, _, _ = make(answer("never seen"))

    @agent.on("before_llm")
    def broken(context: HookContext) -> None:
        raise RuntimeError("quota check failed")

    with pytest.raises(HookFailedError, match="broken"):
        agent.submit("go")
    assert (agent.state, agent.reason, agent.loop_state) == ("failed", "error", "aborted")


@pytest.mark.parametrize("answering", [False, True], ids=["submit", "provide_input"])
def test_a_failing_after_user_input_hook_fails_the_turn(answering: bool) -> None:
    # found by the testing kit: the input's hook ran outside the turn's failure handling
    agent, _, _ = make(calls(("q", "ask_user", {"question": "Why?"})), answer("never seen"))
    if answering:
        assert agent.submit("go").state == "input_required"

    @agent.on("after_user_input")
    def broken(context: HookContext) -> None:
        raise RuntimeError("profanity filter down")

    with pytest.raises(HookFailedError, match="broken"):
        agent.provide_input("because") if answering else agent.submit("go")
    assert (agent.state, agent.reason, agent.loop_state) == ("failed", "error", "aborted")
    assert_history_valid(agent.messages)


def test_queued_input_is_submitted_when_the_turn_ends() -> None:
    agent, _, _ = make(
        calls(("c1", "weather", {"city": "A"})), answer("first"), answer("second"),
        input_policy="queue",
    )  # fmt: skip

    @agent.on("before_tools")
    async def user_types_again(context: HookContext) -> None:
        if agent.turn == 1:
            assert (await agent.asubmit("and then?")).state == "busy"

    outcome = agent.submit("start")

    assert (outcome.state, agent.turn, outcome.reply) == ("completed", 2, "second")
    assert [m.content for m in agent.messages if m.role == "user"] == ["start", "and then?"]
    assert_history_valid(agent.messages)


def test_interrupting_input_cancels_the_turn_at_the_boundary_then_runs() -> None:
    agent, model, _ = make(
        calls(("c1", "weather", {"city": "A"})), answer("for the interruption"),
        input_policy="interrupt",
    )  # fmt: skip

    @agent.on("before_tools")
    async def user_interrupts(context: HookContext) -> None:
        if agent.turn == 1:
            await agent.asubmit("stop, do this instead")

    outcome = agent.submit("start")

    assert (outcome.state, agent.turn, outcome.reply) == ("completed", 2, "for the interruption")
    assert len(model.requests) == 2  # turn 1 stopped before its second model call
    assert RAN == ["weather:A"]  # the round in flight finished: the boundary is after it
    assert_history_valid(agent.messages)


def test_submit_while_busy_is_refused_by_default() -> None:
    agent, _, _ = make(calls(("c1", "weather", {"city": "A"})), answer("done"))
    refused: list[IllegalTransitionError] = []

    @agent.on("before_tools")
    async def user_types_again(context: HookContext) -> None:
        try:
            await agent.asubmit("now!")
        except IllegalTransitionError as error:
            refused.append(error)

    assert agent.submit("start").reply == "done"
    assert [(e.state, e.event) for e in refused] == [("busy", "submit")]
    assert agent.turn == 1


def test_pause_while_busy_takes_effect_at_the_next_boundary_and_resume_goes_on() -> None:
    agent, model, _ = make(calls(("c1", "weather", {"city": "A"})), answer("done"))

    @agent.on("after_tools")
    async def operator_pauses(context: HookContext) -> None:
        await agent.apause()

    paused = agent.submit("go")
    assert (paused.state, agent.loop_state, len(model.requests)) == ("paused", "thinking", 1)

    outcome = agent.resume()

    assert (outcome.state, outcome.reply, len(model.requests)) == ("completed", "done", 2)


def test_cancel_while_busy_takes_effect_at_the_next_boundary() -> None:
    agent, model, _ = make(calls(("c1", "weather", {"city": "A"})), answer("never"))

    @agent.on("after_tools")
    async def operator_cancels(context: HookContext) -> None:
        await agent.acancel()

    outcome = agent.submit("go")

    assert (outcome.state, outcome.reason, len(model.requests)) == ("failed", "cancelled", 1)
    assert_history_valid(agent.messages)


def test_stream_yields_the_turn_as_it_happens() -> None:
    agent, _, _ = make(calls(("c1", "weather", {"city": "A"})), answer("done"))

    async def collect() -> list[Any]:
        return [item async for item in agent.stream("go")]

    items = agent._sync.run(collect())

    events = [i.event for i in items if isinstance(i, Event) and i.machine != "conversation"]
    assert events == ["submit", "model_replied", "tools_finished", "model_replied", "complete"]
    assert any(isinstance(i, ToolExecutionTrace) for i in items)
    agent.close()


def test_sync_method_inside_an_event_loop_says_to_await() -> None:
    agent, _, _ = make(answer("hi"))

    async def misuse() -> None:
        agent.submit("hi")

    with pytest.raises(RuntimeError, match="await its async form"):
        asyncio.run(misuse())
    assert agent.state == "ready"
    agent.close()


def test_async_core_works_on_its_own() -> None:
    async def scenario() -> str | None:
        agent = Agent(ScriptedModel([answer("hello")]))
        await agent.astart()
        return (await agent.asubmit("hi")).reply

    assert asyncio.run(scenario()) == "hello"


@pytest.mark.parametrize(
    ("value", "error"), [(0, ValueError), (-3, ValueError), (2.5, TypeError), (True, TypeError)]
)
def test_max_iterations_must_be_a_positive_int(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="max_iterations"):
        Agent(ScriptedModel(), max_iterations=value)


def test_reset_clears_the_conversation_only_at_rest() -> None:
    agent, _, _ = make(calls(("c1", "book", {"city": "A"})), system_prompt="sys")
    agent.submit("go")
    with pytest.raises(IllegalTransitionError, match="reset only while"):
        agent.reset()
    agent.cancel()

    agent.reset()

    assert agent.messages == (Message.system("sys"),)
    agent.shutdown()
    assert agent.state == "shutdown"


def test_queued_input_is_taken_by_the_submit_transition_itself() -> None:
    agent, _, seen = make(
        calls(("c1", "weather", {"city": "A"})), answer("first"), answer("second"),
        input_policy="queue",
    )  # fmt: skip

    @agent.on("before_tools")
    async def user_types_again(context: HookContext) -> None:
        await agent.asubmit("queued one")

    agent.submit("start")

    submits = [e for e in seen if isinstance(e, Event) and e.event == "submit"]
    assert [(e.source, e.data) for e in submits] == [
        ("ready", {"text": "start"}),
        ("busy", {"text": "queued one"}),
        ("completed", {"text": "queued one", "from_queue": True}),
    ]
    assert agent._data.queued == ()


def test_queued_input_past_the_turn_limit_stays_queued() -> None:
    agent, model, _ = make(
        calls(("c1", "weather", {"city": "A"})), answer("only turn"),
        input_policy="queue", max_turns=1,
    )  # fmt: skip

    @agent.on("before_tools")
    async def user_types_again(context: HookContext) -> None:
        await agent.asubmit("one more")

    outcome = agent.submit("start")

    assert (outcome.state, outcome.reply, agent.turn) == ("completed", "only turn", 1)
    assert agent._data.queued == ("one more",)
    assert len(model.requests) == 2


def test_records_are_numbered_alike_whether_or_not_anyone_listens() -> None:
    heard: list[Event] = []

    def agent() -> Agent:
        model = ScriptedModel([calls(("c1", "weather", {"city": "A"})), answer("done")])
        return Agent(model, [weather])

    quiet, loud = agent(), agent()
    loud.add_listener(lambda item: heard.append(item) if isinstance(item, Event) else None)
    for each in (quiet, loud):
        each.start()
        each.submit("go")

    assert quiet.snapshot().seq == loud.snapshot().seq == heard[-1].seq
    assert quiet.messages == loud.messages
    (result,) = [e for e in heard if e.event == "tool_result"]
    assert result.data["message"] == loud.messages[2].model_dump(mode="json")
