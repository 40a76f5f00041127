"""check_log: a recorded run replays as recorded, and each kind of tampering is caught."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfsm import Agent, ScriptedModel, tool
from agentfsm.fsm import Emitter, RunData, loop_machine, run_machine
from agentfsm.states import Event, InputPolicy
from agentfsm.verify import check_log, default_domains, recorded_config


def recorded() -> tuple[list[Event], RunData]:
    """Three turns driven by hand, and the run's live data at the end.

    The first is capped, with an approval and a pause; the second has a queued input and a
    model failure; the third is cancelled.
    """
    log: list[Event] = []
    data = RunData("run-1", max_iterations=2)
    emitter = Emitter("run-1", [log.append], clock=lambda: 1_700_000_000.0)
    run = run_machine(data, emitter)
    run.send("start")
    run.send("submit", text="Plan my trip")
    loop = loop_machine(data, emitter)
    loop.send("model_replied", tool_calls=1)
    loop.send("tools_finished")
    loop.send("model_replied", tool_calls=1, needing_action=1)
    run.send("need_action", calls=["c1"], deadline=1_700_000_600.0)
    run.send("pause")
    run.send("resume")
    run.send("resolve_action", decisions={"c1": "approve"})
    loop.send("resolved", decisions={"c1": "approve"})
    loop.send("tools_finished")  # iteration 2 of 2: exhausted
    run.send("complete")
    data.input_policy = InputPolicy.QUEUE
    run.send("submit", text="And hotels?")
    loop = loop_machine(data, emitter)
    run.send("submit", text="Cheap ones")  # queued: the log does not say why it was kept
    loop.send("model_failed", error_type="ModelCallError")
    run.send("fail", error_type="ModelCallError", message="503")
    run.send("submit", text="Try again")
    loop = loop_machine(data, emitter)
    run.send("cancel")
    loop.send("abort", reason="cancelled")
    run.send("shutdown")
    return log, data


LOG, LIVE = recorded()
CONFIG = {"max_iterations": 2}


def test_a_recorded_run_is_a_legal_path_and_replays_to_its_data() -> None:
    result = check_log(LOG, config=CONFIG)

    assert result.ok, result
    assert (result.run_id, result.events, result.replayed) == ("run-1", 20, 20)
    assert result.data == LIVE  # state, loop state, turn, iteration, pending, reason, queue
    assert str(result) == "the log of run 'run-1' is a legal path: 20 events replayed"


def test_the_environment_a_log_implies_is_reported() -> None:
    result = check_log(LOG, config=CONFIG)

    queued = next(e.seq for e in LOG if (e.event, e.source) == ("submit", "busy"))
    assert result.assumed == ((queued, {"at_boundary": True, "input_policy": "queue"}),)


def test_an_empty_log_is_trivially_legal() -> None:
    result = check_log([])

    assert (result.ok, result.run_id, result.replayed) == (True, None, 0)
    assert result.data.state == "created"


def _at(index: int, **changes: object) -> Callable[[list[Event]], list[Event]]:
    def tamper(log: list[Event]) -> list[Event]:
        event = log[index]
        return [*log[:index], Event(**{**event.model_dump(), **changes}), *log[index + 1 :]]

    return tamper


def _renumbered(log: list[Event]) -> list[Event]:
    return [Event(**{**e.model_dump(), "seq": n}) for n, e in enumerate(log, start=1)]


def _drop(index: int) -> Callable[[list[Event]], list[Event]]:
    return lambda log: [*log[:index], *log[index + 1 :]]


def _loop_first(log: list[Event]) -> list[Event]:
    early = Event(**{**LOG[2].model_dump(), "seq": 2})
    return _renumbered([log[0], early, *log[1:]])


def _swap(i: int, j: int) -> Callable[[list[Event]], list[Event]]:
    def tamper(log: list[Event]) -> list[Event]:
        swapped = list(log)
        swapped[i], swapped[j] = swapped[j], swapped[i]
        return swapped

    return tamper


TAMPERED: list[tuple[str, Callable[[list[Event]], list[Event]], int, str, str]] = [
    ("gap", _drop(3), 3, "seq", "seq 5 where 4 was expected"),
    ("repeat", lambda log: [*log[:3], log[2], *log[3:]], 3, "seq", "seq 3 again"),
    ("reordered", _swap(3, 4), 3, "seq", "seq 5 where 4"),
    ("other run", _at(5, run_id="run-2"), 5, "run_id", "'run-2', but the log is of 'run-1'"),
    ("loop first", _loop_first, 1, "no_turn", "no turn has started"),
    ("wrong source", _at(2, source="acting"), 2, "source", "machine is in 'thinking'"),
    ("not allowed", _at(6, event="provide_input"), 6, "not_allowed", "allowed: 'resolve_action'"),
    ("no such edge", _at(3, target="answered"), 3, "target", "no edge 'acting' → 'answered'"),
    ("guard says no", _at(3, target="exhausted"), 3, "target", "takes 'acting' → 'thinking'"),
    ("empty input", _at(1, data={"text": "  "}), 1, "refused", "submit_allowed"),
    ("no decision", _at(8, data={"decisions": {}}), 8, "refused", "decides_every_pending"),
    (
        "early expiry",
        _at(8, event="expire", target="failed", data={"now": 5.0}),
        8,
        "refused",
        "deadline_passed",
    ),
]
"""(id, how the log is tampered with, index of the first divergence, kind, message part)."""


@pytest.mark.parametrize(
    ("tamper", "index", "kind", "message"),
    [row[1:] for row in TAMPERED],
    ids=[row[0] for row in TAMPERED],
)
def test_tampering_is_caught_at_the_first_divergent_event(
    tamper: Callable[[list[Event]], list[Event]], index: int, kind: str, message: str
) -> None:
    result = check_log(tamper(list(LOG)), config=CONFIG)

    assert not result.ok
    assert result.divergence is not None
    assert (result.divergence.index, result.divergence.kind) == (index, kind), result
    assert message in result.divergence.message
    assert result.replayed == index
    assert f"diverges at event {index + 1}" in str(result)


def test_a_log_replayed_with_the_wrong_configuration_says_to_pass_it() -> None:
    result = check_log(LOG)  # max_iterations 10, where the run had 2

    assert result.divergence is not None
    assert LOG[result.divergence.index].target == "exhausted"
    assert "max_iterations=10, max_turns=None, output_retries=None: pass the run's own as" in str(
        result
    )


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool(policy="require_approval")
def book(city: str) -> str:
    """Book a table."""
    return "booked"


def test_an_agents_run_is_a_legal_path_of_the_machines() -> None:
    model = (
        ScriptedModel()
        .tool_call("weather", city="Paris")
        .text("Sunny.")
        .tool_call("book", city="Rome")
        .text("Booked.")
        .tool_call("ask_user", question="How many?")
        .text("A table for 4.")
        .tool_call("book", city="Nice")
    )
    seen: list[object] = []
    agent = Agent(model, [weather, book], listeners=[seen.append], max_iterations=3, ask_user=True)
    agent.start()
    agent.submit("Weather in Paris?")
    waiting = agent.submit("Book Rome")
    agent.resolve_action({call.id: "approve" for call in waiting.pending})
    agent.submit("Dinner")
    agent.provide_input("4")
    agent.submit("Book Nice")
    agent.cancel()
    agent.shutdown()
    log = [item for item in seen if isinstance(item, Event)]

    result = check_log(log, config={"max_iterations": 3})

    assert result.ok, result
    assert result.replayed == len(log) > 20
    assert (result.data.state, result.data.turn, result.data.reason) == (
        "shutdown",
        4,
        "cancelled",
    )


# -- the configuration a log records -------------------------------------------------------


def _agent_log(model: ScriptedModel, inputs: int = 1, **options: object) -> list[Event]:
    """The events of an Agent's run of ``inputs`` turns (``options`` are the Agent's)."""
    seen: list[object] = []
    agent = Agent(model, [weather], listeners=[seen.append], **options)  # type: ignore[arg-type]
    agent.start()
    for turn in range(inputs):
        if agent.state in ("ready", "completed", "failed"):
            agent.submit(f"input {turn}")
    return [item for item in seen if isinstance(item, Event)]


def test_an_agents_log_replays_with_the_caps_its_start_records() -> None:
    model = ScriptedModel().tool_call("weather", city="Paris").tool_call("weather", city="Rome")
    log = _agent_log(model, max_iterations=2)  # the second round spends the cap: exhausted

    assert recorded_config(log, default_domains().initial) == {  # (untyped: no retries)
        "max_iterations": 2,
        "max_turns": None,
    }
    result = check_log(log)  # no config: the run's own, as its start recorded it

    assert result.ok, result
    assert (result.data.state, result.data.loop_state) == ("completed", "exhausted")


def test_a_config_passed_wins_over_the_recorded_one() -> None:
    model = ScriptedModel().tool_call("weather", city="Paris").tool_call("weather", city="Rome")
    log = _agent_log(model, max_iterations=2)

    result = check_log(log, config={"max_iterations": 10})

    assert result.divergence is not None
    assert log[result.divergence.index].target == "exhausted"
    assert "max_iterations=10" in result.divergence.message


def test_only_a_start_that_carries_caps_records_a_configuration() -> None:
    assert recorded_config(LOG[1:], default_domains().initial) == {}
    assert recorded_config([], default_domains().initial) == {}
    assert recorded_config(LOG, default_domains().initial) == {}  # a bare start: no data


def test_a_recorded_configuration_the_machines_cannot_read_is_a_divergence() -> None:
    model = ScriptedModel().tool_call("weather", city="Paris").text("Sunny.")
    log = _agent_log(model, max_iterations=2)
    start = log[0]
    forged = [Event(**{**start.model_dump(), "data": {**start.data, "max_iterations": "2"}})]

    result = check_log([*forged, *log[1:]])  # a guard compares an int with that text

    assert result.divergence is not None
    assert result.divergence.kind == "refused"
    assert "the machine raised TypeError" in result.divergence.message


_DATA_KEYS = ("max_iterations", "max_turns", "output_retries", "tool_calls", "needing_action")
_DATA_KEYS += ("asking_user", "deadline", "calls", "decisions", "text", "now", "reason")
"""The configuration's fields and the events' arguments that guards read."""

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)


@given(
    index=st.integers(min_value=0, max_value=len(LOG) - 1),
    key=st.sampled_from(_DATA_KEYS),
    value=_JSON,
)
def test_no_value_in_a_log_makes_check_log_raise(index: int, key: str, value: object) -> None:
    event = LOG[index]
    forged = Event.model_construct(**{**event.model_dump(), "data": {**event.data, key: value}})
    log = [*LOG[:index], forged, *LOG[index + 1 :]]

    result = check_log(log)  # (the first event's data is the configuration too)

    assert 0 <= result.replayed <= len(log)
    assert result.ok == (result.divergence is None)


@given(
    max_iterations=st.integers(min_value=1, max_value=4),
    max_turns=st.sampled_from([None, 1, 2]),
    rounds=st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=3),
)
def test_every_agent_run_replays_with_the_configuration_it_records(
    max_iterations: int, max_turns: int | None, rounds: list[int]
) -> None:
    model = ScriptedModel()
    for count in rounds:  # a turn: ``count`` tool rounds (capped by max_iterations), a text
        for _ in range(count):
            model = model.tool_call("weather", city="Paris")
        model = model.text("Done.")
    turns = len(rounds) if max_turns is None else min(len(rounds), max_turns)
    log = _agent_log(model, inputs=turns, max_iterations=max_iterations, max_turns=max_turns)

    result = check_log(log)

    assert result.ok, result
    assert result == check_log(log, config=recorded_config(log, default_domains().initial))
    assert (result.data.max_iterations, result.data.max_turns) == (max_iterations, max_turns)
