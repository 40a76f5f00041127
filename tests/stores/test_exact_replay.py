"""replay: a stored run's log rebuilds its snapshot (I10); a tampered log is refused."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentfsm import Agent, Event, IllegalTransitionError, MemoryStore, ScriptedModel, replay, tool
from agentfsm.errors import AgentFSMError, ReplayError
from agentfsm.llm.base import FinishReason, ModelResponse
from agentfsm.states import InputPolicy, ToolCall
from agentfsm.testing import assert_history_valid
from agentfsm.tools import ToolPolicy

RUN_ID = "r"


@tool
def look(city: str) -> str:
    """Look a city up."""
    return f"{city}: fine"


@tool(policy=ToolPolicy.REQUIRE_APPROVAL)
def buy(item: str) -> str:
    """Buy something (needs approval)."""
    return f"bought {item}"


def batch(*calls: tuple[str, str]) -> ModelResponse:
    return ModelResponse(
        tool_calls=tuple(
            ToolCall(id=f"k{i}", name=name, arguments=arguments)
            for i, (name, arguments) in enumerate(calls)
        ),
        finish_reason=FinishReason.TOOL_CALLS,
    )


RESPONSES = st.one_of(
    st.just(ModelResponse(content="Done.")),
    st.lists(
        st.sampled_from(
            [
                ("look", '{"city": "Oslo"}'),
                ("buy", '{"item": "tea"}'),
                ("look", "{not json"),
                ("nope", "{}"),
                ("ask_user", '{"question": "Which?"}'),
            ]
        ),
        min_size=1,
        max_size=3,
    ).map(lambda calls: batch(*calls)),
)

ACTIONS = st.sampled_from(
    ["submit", "approve", "deny", "answer", "cancel", "pause", "resume", "reset", "shutdown"]
)


def act(agent: Agent, action: str) -> None:
    decisions = {c.id: ("approve" if action == "approve" else "deny") for c in agent.pending}
    doing: dict[str, Callable[[], object]] = {
        "submit": lambda: agent.submit("go"),
        "approve": lambda: agent.resolve_action(decisions),
        "deny": lambda: agent.resolve_action(decisions),
        "answer": lambda: agent.provide_input("this one"),
        "cancel": agent.cancel,
        "pause": agent.pause,
        "resume": agent.resume,
        "reset": agent.reset,
        "shutdown": agent.shutdown,
    }
    with contextlib.suppress(AgentFSMError):  # refused: the property must hold all the same
        doing[action]()


@settings(max_examples=60)
@given(
    responses=st.lists(RESPONSES, max_size=12),
    actions=st.lists(ACTIONS, max_size=12),
    policy=st.sampled_from(list(InputPolicy)),
    prompt=st.one_of(st.none(), st.just("Be brief.")),
)
def test_replaying_a_stored_log_gives_the_stored_snapshot_after_every_step(
    responses: list[ModelResponse],
    actions: list[str],
    policy: InputPolicy,
    prompt: str | None,
) -> None:
    store = MemoryStore()
    model = ScriptedModel(responses, fallback=lambda m, t: ModelResponse(content="Fallback."))
    agent = Agent(
        model,
        [look, buy],
        store=store,
        run_id=RUN_ID,
        max_iterations=3,
        input_policy=policy,
        system_prompt=prompt,
    )
    agent.start()
    for action in actions:
        act(agent, action)
        stored = store.load(RUN_ID)
        assert stored is not None
        rebuilt = replay(store.events(RUN_ID), expected=stored)
        assert rebuilt.model_dump(exclude={"trace", "version"}) == stored.model_dump(
            exclude={"trace", "version"}
        )
        waiting = agent.state in ("requires_action", "input_required") or (
            agent.state == "paused" and bool(agent.pending)
        )
        assert_history_valid(stored.messages, open_round=waiting)


def recorded() -> list[Event]:
    store = MemoryStore()
    model = ScriptedModel().tool_call("look", city="Oslo").tool_call("buy", item="tea").text("Ok.")
    agent = Agent(model, [look, buy], store=store, run_id=RUN_ID)
    agent.start()
    agent.submit("Oslo and tea")
    agent.resolve_action({c.id: "approve" for c in agent.pending})
    return store.events(RUN_ID)


def edited(log: list[Event], index: int, **changes: object) -> list[Event]:
    return [*log[:index], log[index].model_copy(update=changes), *log[index + 1 :]]


def test_the_untampered_log_replays() -> None:
    log = recorded()
    assert replay(log).state == "completed"


def find(log: list[Event], event: str) -> int:
    return next(i for i, e in enumerate(log) if e.event == event)


TAMPERINGS: dict[str, tuple[Callable[[list[Event]], list[Event]], str]] = {
    "an event removed": (lambda log: log[:3] + log[4:], "seq 5 where 4 was expected"),
    "two events swapped": (
        lambda log: [*log[:2], log[3], log[2], *log[4:]],
        "where 3 was expected",
    ),
    "another run's event": (lambda log: edited(log, 2, run_id="other"), "run 'other'"),
    "a target changed": (
        lambda log: edited(log, find(log, "complete"), target="failed"),
        "not to the recorded 'failed'",
    ),
    "a source changed": (
        lambda log: edited(log, find(log, "complete"), source="ready"),
        "the run machine is in 'busy'",
    ),
    "a decision removed": (
        lambda log: edited(log, find(log, "resolve_action"), data={"decisions": {}}),
        "refuses it",
    ),
    "a record with no message": (
        lambda log: edited(log, find(log, "tool_result"), data={"result": {}}),
        "valid ToolResult",
    ),
    "an unknown record": (
        lambda log: edited(log, find(log, "round_closed"), event="shred"),
        "'shred' is not a conversation record",
    ),
    "the log cut before the start": (lambda log: log[1:], "seq 2 where 1 was expected"),
}


@pytest.mark.parametrize("tampering", TAMPERINGS)
def test_a_tampered_log_fails_with_an_error_naming_the_event(tampering: str) -> None:
    tamper, expected = TAMPERINGS[tampering]
    with pytest.raises(ReplayError, match=expected) as caught:
        replay(tamper(recorded()))
    assert caught.value.run_id in (RUN_ID, "other")
    assert caught.value.seq >= 1


def test_a_log_edited_into_another_legal_run_does_not_replay_to_the_stored_snapshot() -> None:
    store = MemoryStore()
    agent = Agent(ScriptedModel().text("The answer is 4."), store=store, run_id=RUN_ID)
    agent.start()
    agent.submit("2+2?")
    log = store.events(RUN_ID)
    index = find(log, "model_replied")
    forged = dict(log[index].data)
    forged["message"] = {**json.loads(json.dumps(forged["message"])), "content": "It is 5."}

    with pytest.raises(ReplayError, match=r"message 1 is .*It is 5.*stored snapshot has"):
        replay(edited(log, index, data=forged), expected=store.load(RUN_ID))


def test_an_empty_log_is_refused() -> None:
    with pytest.raises(ReplayError, match="empty"):
        replay([])


def test_refused_actions_leave_the_log_and_snapshot_alone() -> None:
    store = MemoryStore()
    agent = Agent(ScriptedModel().text("Hi."), store=store, run_id=RUN_ID)
    agent.start()
    before = (store.load(RUN_ID), store.events(RUN_ID))
    with pytest.raises(IllegalTransitionError):
        agent.resume()
    assert (store.load(RUN_ID), store.events(RUN_ID)) == before
