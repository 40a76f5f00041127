"""Property: a fork at any rest point of any recorded run is the origin as it was there.

Its snapshot equals the origin's stored snapshot at that point (but for its id, seq, version
and trace), its log replays exactly to its stored snapshot (I10) through the origin's, and is
a legal path of the machines (`check_log`), before and after the fork is taken up again.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentfsm import Agent, MemoryStore, ScriptedModel
from agentfsm.errors import ForkError
from agentfsm.llm.base import ModelResponse
from agentfsm.states import InputPolicy
from agentfsm.stores import Snapshot, fork, replay_run, rest_points, state_at
from agentfsm.testing import assert_history_valid
from agentfsm.verify import check_log
from tests.stores.test_exact_replay import ACTIONS, RESPONSES, act, buy, look

IGNORED = {"run_id", "seq", "version", "trace", "origin"}


def fallback(messages: object, tools: object) -> ModelResponse:
    return ModelResponse(content="Fallback.")


def agent_on(store: MemoryStore, run_id: str, responses: list[ModelResponse], **kw: Any) -> Agent:
    model = ScriptedModel(list(responses), fallback=fallback)
    return Agent(model, [look, buy], store=store, run_id=run_id, max_iterations=3, **kw)


def check_fork(store: MemoryStore, fork_id: str, origin: str, seq: int) -> None:
    stored = store.load(fork_id)
    assert stored is not None
    rebuilt = replay_run(store, fork_id)
    assert rebuilt.model_dump(exclude={"trace", "version"}) == stored.model_dump(
        exclude={"trace", "version"}
    )
    start = state_at(store, origin, seq).model_copy(update={"run_id": fork_id})
    found = check_log(store.events(fork_id), data=lambda run_id: start.to_data())
    assert found.ok, str(found)


@settings(max_examples=40, deadline=None)
@given(
    responses=st.lists(RESPONSES, max_size=10),
    actions=st.lists(ACTIONS, max_size=10),
    later=st.lists(ACTIONS, min_size=1, max_size=3),
    policy=st.sampled_from(list(InputPolicy)),
    prompt=st.one_of(st.none(), st.just("Be brief.")),
    pick=st.integers(min_value=0),
)
def test_a_fork_at_any_rest_point_is_the_origin_there_and_replays_exactly(
    responses: list[ModelResponse],
    actions: list[str],
    later: list[str],
    policy: InputPolicy,
    prompt: str | None,
    pick: int,
) -> None:
    store = MemoryStore()
    agent = agent_on(store, "origin", responses, input_policy=policy, system_prompt=prompt)
    agent.start()
    at_rest: dict[int, Snapshot] = {}
    for action in ["start", *actions]:
        if action != "start":
            act(agent, action)
        stored = store.load("origin")
        assert stored is not None
        at_rest[stored.seq] = stored
    origin_log = store.events("origin")
    points = rest_points(store, "origin")
    assert set(at_rest) == set(points)  # the rest points are where a call returned

    live = sorted(seq for seq, snapshot in at_rest.items() if snapshot.state != "shutdown")
    for point in live:
        forked = fork(store, "origin", at=point, new_run_id=f"fork-{point}")
        assert forked.model_dump(exclude=IGNORED) == at_rest[point].model_dump(exclude=IGNORED)
    assert store.events("origin") == origin_log

    seq = live[pick % len(live)]
    fork(store, "origin", at=seq, new_run_id="fork")
    check_fork(store, "fork", "origin", seq)
    again = agent_on(store, "fork", responses)
    again.start()
    for action in later:
        act(again, action)
    check_fork(store, "fork", "origin", seq)
    waiting = again.state in ("requires_action", "input_required") or (
        again.state == "paused" and bool(again.pending)
    )
    assert_history_valid(again.messages, open_round=waiting)
    assert store.events("origin") == origin_log


@settings(max_examples=15, deadline=None)
@given(
    responses=st.lists(RESPONSES, max_size=8),
    actions=st.lists(ACTIONS, max_size=8),
)
def test_a_fork_begins_exactly_at_the_seq_asked_or_is_refused_unless_nearest(
    responses: list[ModelResponse], actions: list[str]
) -> None:
    store = MemoryStore()
    agent = agent_on(store, "origin", responses)
    agent.start()
    for action in actions:
        act(agent, action)
    points = rest_points(store, "origin")
    final = {seq for seq in points if state_at(store, "origin", seq).state == "shutdown"}
    for seq in range(1, len(store.events("origin")) + 1):
        before = [point for point in points if point <= seq]
        runs = store.list_runs()
        if seq in points and seq not in final:
            assert fork(store, "origin", at=seq, new_run_id=f"at-{seq}").origin.seq == seq  # type: ignore[union-attr]
            continue
        reason = "shut down" if seq in final else "not a rest point" if before else "before"
        with pytest.raises(ForkError, match=reason):
            fork(store, "origin", at=seq)
        assert store.list_runs() == runs  # a refusal stores nothing
        if before and before[-1] not in final:
            moved = fork(store, "origin", at=seq, nearest=True, new_run_id=f"near-{seq}")
            assert moved.origin is not None
            assert moved.origin.seq == before[-1]
