"""The compiled fast path is the same machine as python-statemachine's own engine.

Both are driven with the same random sequences of events (mostly events allowed in the
current state, with arguments that satisfy or defeat their guards; also illegal and unknown
events) and the same changes to the environment. After every step they must agree on
acceptance or refusal (with the same error), on the run's data and on every emitted event.
"""

from __future__ import annotations

import functools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentfsm.errors import IllegalTransitionError
from agentfsm.fsm import Emitter, Engine, RunData, loop_machine, run_machine
from agentfsm.states import LOOP_TABLE, RUN_TABLE, Event
from agentfsm.testing.strategies import event_arguments
from tests.properties.strategies import policies

KINDS = ["run", "run", "run", "loop", "loop", "loop", "boundary", "policy", "new_loop"]


class Side:
    """One engine's run: its data, its machines and what they emitted."""

    def __init__(self, engine: Engine, max_iterations: int, max_turns: int | None) -> None:
        self.engine = engine
        self.data = RunData("diff", max_iterations=max_iterations, max_turns=max_turns)
        self.events: list[Event] = []
        self.emitter = Emitter("diff", [self.events.append], clock=lambda: 42.0)
        self.run = run_machine(self.data, self.emitter, engine)
        self.loop: Any = None

    def apply(self, kind: str, value: Any) -> tuple[Any, ...]:
        if kind == "boundary":
            self.data.at_boundary = value
        elif kind == "policy":
            self.data.input_policy = value
        elif kind == "new_loop":
            self.data.loop_state = None
            self.loop = loop_machine(self.data, self.emitter, self.engine)
        else:
            machine = self.run if kind == "run" else self.loop
            event, args = value
            try:
                emitted = machine.send(event, **args)
            except IllegalTransitionError as error:
                return ("refused", type(error), str(error), error.allowed)
            if (emitted.event, emitted.target) == ("submit", "busy") and emitted.source != "busy":
                self.loop = None  # a new turn gets a new loop, as the Agent does
            return ("accepted", emitted)
        return ("environment",)


# The strategies a step draws from, built once each: building them anew for every step (and
# hypothesis working out each new one's properties) took most of this test's time.
KIND_CHOICES = {
    True: st.sampled_from(KINDS),
    False: st.sampled_from([k for k in KINDS if k != "loop"]),
}
BOOLEANS = st.booleans()


@functools.cache
def _events(likely: tuple[str, ...], known: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(likely), st.sampled_from([*known, "x"]))


@functools.cache
def _arguments(event: str) -> st.SearchStrategy[dict[str, Any]]:
    return event_arguments(event)


def draw_step(data: st.DataObject, side: Side) -> tuple[str, Any]:
    kind = data.draw(KIND_CHOICES[bool(side.loop)])
    if kind == "boundary":
        return kind, data.draw(BOOLEANS)
    if kind == "policy":
        return kind, data.draw(policies)
    if kind == "new_loop":
        return kind, None
    machine, table = (side.run, RUN_TABLE) if kind == "run" else (side.loop, LOOP_TABLE)
    likely = machine.allowed_events() or table.events
    event = data.draw(_events(tuple(likely), tuple(table.events)))
    return kind, (event, data.draw(_arguments(event)))


@settings(max_examples=300)
@given(
    data=st.data(),
    length=st.integers(min_value=1, max_value=60),
    max_iterations=st.integers(min_value=1, max_value=3),
    max_turns=st.sampled_from([None, 1, 2]),
)
def test_compiled_machine_agrees_with_python_statemachine(
    data: st.DataObject, length: int, max_iterations: int, max_turns: int | None
) -> None:
    fast = Side("compiled", max_iterations, max_turns)
    reference = Side("reference", max_iterations, max_turns)
    for _ in range(length):
        kind, value = draw_step(data, fast)
        assert fast.apply(kind, value) == reference.apply(kind, value), (kind, value)
        # RunData's own == compares every field, as asdict's dicts did, without deep copies
        # of both (a tenth of this test's time)
        assert fast.data == reference.data, (kind, value)
        assert fast.events == reference.events, (kind, value)
