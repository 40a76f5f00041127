"""A group's selector asks its checks at once: pinned to the chain of checks it replaces."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentfsm.fsm import LOOP_MACHINE, RUN_MACHINE, Emitter, RunData
from agentfsm.fsm.compiled import CompiledTransition, Machine
from agentfsm.fsm.guards import Args, selector_of
from agentfsm.states.names import LoopState

# What an event may carry as a count: what the Agent sends (ints) and anything else.
COUNTS = st.one_of(
    st.integers(-3, 5),
    st.booleans(),
    st.floats(allow_nan=True),
    st.text(max_size=2),
    st.none(),
    st.lists(st.integers(), max_size=2),
)
KEYS = ("tool_calls", "needing_action", "asking_user")


def _chain(candidates: tuple[CompiledTransition, ...], model: RunData, args: Args) -> int:
    """The index of the first transition whose checks all hold, asked one by one."""
    for index, transition in enumerate(candidates):
        if all(check(model, args) for check in transition.checks):
            return index
    return -1


def _selected() -> list[tuple[str, str, tuple[CompiledTransition, ...]]]:
    return [
        (state, event, candidates)
        for compiled in (RUN_MACHINE, LOOP_MACHINE)
        for state, by_event in compiled.dispatch.items()
        for event, candidates in by_event.items()
        if candidates[0].select is not None
    ]


def test_the_iteration_s_groups_have_selectors_and_no_other_transition_does() -> None:
    assert {(state, event) for state, event, _ in _selected()} == {
        (LoopState.THINKING, "model_replied"),
        (LoopState.ACTING, "tools_finished"),
    }
    for compiled in (RUN_MACHINE, LOOP_MACHINE):
        for by_event in compiled.dispatch.values():
            for candidates in by_event.values():
                assert all(t.select is None for t in candidates[1:])


def test_a_group_without_a_selector_keeps_its_chain() -> None:
    # Another order of the same checks is another chain: no selector answers for it.
    group = dict(LOOP_MACHINE.dispatch[LoopState.THINKING])["model_replied"]
    checks = tuple(t.checks[0] for t in group)
    assert selector_of(checks) is not None
    assert selector_of(checks[::-1]) is None


@given(
    counts=st.fixed_dictionaries({}, optional=dict.fromkeys(KEYS, COUNTS)),
    retries=st.none() | st.integers(0, 3),
    iteration=st.integers(0, 12),
    cap=st.integers(1, 10),
    extra=st.dictionaries(st.sampled_from(["message", "other"]), st.integers(), max_size=2),
)
def test_each_selector_picks_what_its_chain_of_checks_picks(
    counts: dict[str, Any], retries: int | None, iteration: int, cap: int, extra: dict[str, Any]
) -> None:
    model = RunData("run-1", iteration=iteration, max_iterations=cap, output_retries=retries)
    args = {**counts, **extra}
    for _, _, candidates in _selected():
        select = candidates[0].select
        assert select is not None
        assert select(model, args) == _chain(candidates, model, args)


@given(
    calls=st.integers(-1, 3),
    needing=st.integers(-1, 2),
    asking=st.integers(-1, 2),
    retries=st.none() | st.integers(0, 2),
)
def test_a_sent_model_reply_takes_the_transition_its_guards_choose(
    calls: int, needing: int, asking: int, retries: int | None
) -> None:
    data = RunData("run-1", state="busy", iteration=1, output_retries=retries)
    loop = Machine(LOOP_MACHINE, data, Emitter("run-1"))
    args = {"tool_calls": calls, "needing_action": needing, "asking_user": asking}
    candidates = LOOP_MACHINE.dispatch[LoopState.THINKING]["model_replied"]
    expected = candidates[_chain(candidates, data, args)].target
    event = loop.send("model_replied", **args)
    assert data.loop_state == expected == event.target
