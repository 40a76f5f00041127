"""The emitter builds every event unchecked: each one equals the validated `Event`."""

from __future__ import annotations

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfsm._redact import redact
from agentfsm.fsm import Emitter
from agentfsm.states import Event, MachineName

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)
events = st.builds(
    Event,
    seq=st.integers(min_value=1),
    run_id=st.text(),
    machine=st.sampled_from(MachineName),
    event=st.text() | st.sampled_from(["fail", "model_failed", "submit"]),
    source=st.text(),
    target=st.text(),
    at=st.floats(allow_nan=False, allow_infinity=False),
    data=st.dictionaries(st.text(), json_values, max_size=4)
    | st.builds(lambda text: {"message": text}, st.text()),
)


def _expected(event: Event) -> Event:
    """``event`` as the emitter must record it: an error's message has its secrets masked."""
    message = event.data.get("message")
    if event.event in {"fail", "model_failed"} and isinstance(message, str):
        return Event(**{**dict(event), "data": {**event.data, "message": redact(message)}})
    return event


def _emitter(event: Event, told: list[Event]) -> Emitter:
    return Emitter(event.run_id, [told.append], clock=lambda: event.at, seq=event.seq - 1)


@given(events, st.booleans())
def test_an_emitted_event_is_the_validated_event(event: Event, deliver: bool) -> None:
    told: list[Event] = []
    emitter = _emitter(event, told)
    make = emitter.emit if deliver else emitter.number

    fast = make(event.machine, event.event, event.source, event.target, event.data)

    expected = _expected(event)
    assert fast == expected
    assert fast.model_fields_set == expected.model_fields_set
    assert fast.model_dump_json() == expected.model_dump_json()
    assert emitter.seq == event.seq
    assert told == ([fast] if deliver else [])
    with pytest.raises(pydantic.ValidationError):
        fast.seq = 2  # type: ignore[misc]  # frozen like any Event


def test_number_numbers_without_telling_and_emit_tells_in_order() -> None:
    told: list[Event] = []
    emitter = Emitter("r", [told.append], clock=lambda: 5.0)

    quiet = emitter.number(MachineName.CONVERSATION, "message", "busy", "busy", {})
    loud = emitter.emit(MachineName.RUN, "complete", "busy", "ready", {})

    assert (quiet.seq, loud.seq) == (1, 2)
    assert told == [loud]
