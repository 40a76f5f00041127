"""Issue 17, part 5: where agentfsm differs on purpose, the refusal says what to do."""

from __future__ import annotations

import pytest

from agentfsm import Agent, IllegalTransitionError, MemoryStore
from agentfsm.llm.scripted import ScriptedModel

RUN_ID = "run-17"


def _paused_in(store: MemoryStore) -> Agent:
    first = Agent(ScriptedModel().text("Hello."), store=store, run_id=RUN_ID)
    first.start()
    first.submit("hi")
    first.pause()
    return Agent(ScriptedModel().text("Again."), store=store, run_id=RUN_ID)


def test_start_of_a_restored_paused_run_takes_it_up_and_the_next_call_says_resume() -> None:
    store = MemoryStore()
    again = _paused_in(store)
    assert again.start().state == "paused"  # taken up (claimed), still paused
    before = (store.load(RUN_ID), store.events(RUN_ID))

    with pytest.raises(IllegalTransitionError, match=r"call resume\(\) to go on") as refused:
        again.submit("and now?")  # the looopy flow: start, then execute a turn

    assert "then submit()" in str(refused.value)
    assert refused.value.allowed == ("resume", "shutdown")
    assert (store.load(RUN_ID), store.events(RUN_ID)) == before  # nothing changed
    assert again.resume().state == "completed"
    assert again.submit("and now?").reply == "Again."


@pytest.mark.parametrize(
    ("call", "event"),
    [
        (lambda a: a.start(), "start"),
        (lambda a: a.submit("x"), "submit"),
        (lambda a: a.resolve_action({}), "resolve_action"),
        (lambda a: a.provide_input("x"), "provide_input"),
    ],
)
def test_a_paused_run_refuses_other_calls_naming_resume(call: object, event: str) -> None:
    agent = Agent(ScriptedModel())
    agent.start()
    agent.pause()
    with pytest.raises(IllegalTransitionError, match=r"the run is paused: call resume\(\)") as e:
        call(agent)  # type: ignore[operator]
    assert (e.value.event, e.value.state, agent.state) == (event, "paused", "paused")


@pytest.mark.parametrize("restored", [False, True])
@pytest.mark.parametrize(
    ("call", "event"),
    [
        (lambda a: a.start(), "start"),
        (lambda a: a.resume(), "resume"),
        (lambda a: a.submit("x"), "submit"),
    ],
)
def test_a_shut_down_run_is_final_and_says_so(call: object, event: str, restored: bool) -> None:
    store = MemoryStore()
    agent = Agent(ScriptedModel(), store=store, run_id=RUN_ID)
    agent.start()
    agent.shutdown()
    if restored:
        agent = Agent(ScriptedModel(), store=store, run_id=RUN_ID)
    before = (store.load(RUN_ID), store.events(RUN_ID))

    with pytest.raises(IllegalTransitionError, match="a shut-down run is final") as refused:
        call(agent)  # type: ignore[operator]

    assert (refused.value.event, refused.value.allowed) == (event, ())
    assert "start a new run, with another run_id" in str(refused.value)
    assert (store.load(RUN_ID), store.events(RUN_ID), agent.state) == (*before, "shutdown")
