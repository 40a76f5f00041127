"""fork at the edges: a seq that is no rest point, and a rest point that waits on a sub-agent."""

from __future__ import annotations

import pytest

from agentfsm import Agent, MemoryStore, ScriptedModel, tool
from agentfsm.agent import agent_tool
from agentfsm.errors import ForkError
from agentfsm.stores.forking import fork, rest_points
from agentfsm.testing import assert_pending_valid
from tests.stores.test_fork import recorded_run


@pytest.fixture
def store() -> MemoryStore:
    memory = MemoryStore()
    recorded_run(memory)  # rest points 1, 4, 12, 19, 20, 21, 22
    return memory


def test_a_seq_that_is_no_rest_point_is_refused_naming_the_nearest(store: MemoryStore) -> None:
    with pytest.raises(ForkError) as refused:
        fork(store, "origin", at=7, new_run_id="f")

    assert "at=7 is not a rest point" in str(refused.value)
    assert "the nearest rest points are seq 4 (before) and seq 12 (after)" in str(refused.value)
    assert "nearest=True" in str(refused.value)
    assert [run.run_id for run in store.list_runs()] == ["origin"]


def test_nearest_forks_at_the_last_rest_point_before_and_says_which(store: MemoryStore) -> None:
    forked = fork(store, "origin", at=7, nearest=True, new_run_id="f")

    assert forked.origin is not None
    assert forked.origin.seq == 4  # the seq used
    assert fork(store, "origin", at=12, new_run_id="g").origin.seq == 12  # type: ignore[union-attr]


def test_the_error_names_the_rest_points_around_the_seq(store: MemoryStore) -> None:
    with pytest.raises(ForkError, match=r"at=2 is not a rest point.*seq 1 \(before\) and seq 4"):
        fork(store, "origin", at=2)


@tool(policy="require_approval")
def delete(path: str) -> str:
    """Delete a file (needs approval)."""
    return f"deleted {path}"


def janitor_tree(store: MemoryStore) -> Agent:
    """A run `lead` → janitor (an agent tool) → delete, which waits for an approval."""
    janitor_model = ScriptedModel().tool_call("delete", path="old.log").text("Removed.")
    janitor = agent_tool(
        lambda: Agent(janitor_model, tools=[delete]), name="janitor", description="Cleans."
    )
    lead = Agent(
        ScriptedModel().tool_call("janitor", task="Clean up").text("Clean."),
        tools=[janitor],
        run_id="lead",
        store=store,
    )
    lead.start()
    assert lead.submit("Tidy up").state == "requires_action"
    return lead


def test_a_fork_where_the_run_waits_on_a_sub_agent_is_refused_saying_why() -> None:
    store = MemoryStore()
    janitor_tree(store)
    assert rest_points(store, "lead") == (1, 6)
    runs = store.list_runs()

    with pytest.raises(ForkError) as refused:
        fork(store, "lead", new_run_id="f")

    message = str(refused.value)
    assert (
        "at seq 6 the run waits on a sub-agent's call 'lead/call_1/lead.1.1.call_1/call_1'"
        in message
    )
    assert "allowed: a rest point where it waits on no sub-agent (seq 1)" in message
    assert store.list_runs() == runs  # nothing stored


def test_a_paused_run_whose_sub_agent_waits_is_refused_too() -> None:
    store = MemoryStore()
    lead = janitor_tree(store)
    lead.pause()

    with pytest.raises(ForkError, match="waits on a sub-agent's call"):
        fork(store, "lead", new_run_id="f")
    forked = fork(store, "lead", at=1, new_run_id="g")  # before the delegation: allowed
    again = Agent(ScriptedModel().text("Hi."), store=store, run_id=forked.run_id)
    again.start()
    assert_pending_valid(again)
