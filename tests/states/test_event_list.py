"""`event_list`: what the log readers (diagrams, `check_log`, `replay`) take as a run's log."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfsm.states import Event, MachineName
from agentfsm.states.events import event_list

events = st.builds(
    Event,
    seq=st.integers(min_value=1, max_value=50),
    run_id=st.just("r"),
    machine=st.sampled_from(MachineName),
    event=st.sampled_from(["start", "submit", "model_replied"]),
    source=st.just("a"),
    target=st.just("b"),
    at=st.just(0.0),
)


@given(st.lists(events, max_size=5))
def test_any_iterable_of_events_is_taken_in_order(log: list[Event]) -> None:
    assert event_list(log) is log  # a list is kept, not copied
    assert event_list(tuple(log)) == log
    assert event_list(event for event in log) == log


@given(
    st.lists(events, max_size=4),
    st.integers(min_value=0, max_value=4),
    st.sampled_from([{"seq": 1}, "start", None, 3, b"x"]),
)
def test_the_first_item_that_is_no_event_is_named_with_its_index(
    log: list[Event], index: int, stray: object
) -> None:
    index = min(index, len(log))
    mixed: list[object] = [*log[:index], stray, *log[index:]]
    with pytest.raises(TypeError) as raised:
        event_list(mixed, "log")  # type: ignore[arg-type]
    assert str(raised.value).startswith(
        f"log must be an iterable of Event (a run's log, in order); log[{index}] is {stray!r}"
    )


@pytest.mark.parametrize("bad", [5, "start", b"start", {"seq": 1}])
def test_what_is_no_iterable_of_events_is_refused(bad: object) -> None:
    with pytest.raises(TypeError, match=r"^events must be an iterable of Event .*, not "):
        event_list(bad)  # type: ignore[arg-type]
