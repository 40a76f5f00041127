"""A run's fixed cost, cut where the result is pinned: its emitter, its id, its argument checks.

The run id is built from random bytes as `uuid.uuid4` builds it; the Agent's arguments get a
cheap first look (`checks.usual`) that never accepts what the full checks would refuse.
"""

from __future__ import annotations

import gc
import inspect
import time
import uuid
from typing import cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfsm import ScriptedModel
from agentfsm.agent import Agent, checks
from agentfsm.agent.emitting import RunEmitter, new_run_id, run_id_of
from agentfsm.agent.record import NO_BATCH, RunRecord
from agentfsm.fsm.emitter import ERROR_EVENTS
from agentfsm.fsm.trace import LLMRetryTrace
from agentfsm.llm.base import RetryNotice
from agentfsm.states.events import Event
from agentfsm.states.names import InputPolicy, MachineName, RecordKind
from agentfsm.stores.memory import MemoryStore
from tests.agent.agent_support import answer, calls
from tests.fsm.test_emitter import _expected, events


@given(st.binary(min_size=16, max_size=16))
def test_a_run_id_is_the_uuid4_of_its_random_bytes(raw: bytes) -> None:
    assert run_id_of(raw) == uuid.UUID(bytes=raw, version=4).hex


def test_a_new_run_id_is_a_fresh_uuid4() -> None:
    ids = {new_run_id() for _ in range(100)}

    assert len(ids) == 100
    for found in ids:
        parsed = uuid.UUID(hex=found)
        assert (parsed.version, parsed.variant, parsed.hex) == (4, uuid.RFC_4122, found)


def test_an_agent_without_a_run_id_gets_a_uuid4_of_its_own() -> None:
    first, second = (Agent(ScriptedModel([answer("hi")])) for _ in range(2))

    assert uuid.UUID(hex=first.run_id).version == 4
    assert first.run_id != second.run_id


# -- the Agent's arguments: the cheap first look never accepts what the full checks refuse --

_ODD: list[object] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    2,
    1.0,
    float("nan"),
    "",
    " ",
    "x",
    "reject",
    "queue",
    "compiled",
    "reference",
    "other",
    b"x",
    (),
    [],
    {},
    object(),
    time.time,
    time.perf_counter,
    time.monotonic,
    lambda: 0.0,
    InputPolicy.QUEUE,
    InputPolicy.REJECT,
]
_SIGNATURE = inspect.signature(Agent.__init__)
_CHECKED = [
    name
    for name, parameter in _SIGNATURE.parameters.items()
    if name not in ("self", "model", "tools", "listeners")
    and parameter.default is not inspect.Parameter.empty
]


def _defaults() -> dict[str, object]:
    found = {
        name: parameter.default
        for name, parameter in _SIGNATURE.parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }
    return {"model": ScriptedModel([answer("hi")]), "tools": (), **found}


@given(st.dictionaries(st.sampled_from(_CHECKED), st.sampled_from(_ODD), max_size=4))
def test_the_usual_arguments_are_never_ones_the_full_checks_refuse(
    changed: dict[str, object],
) -> None:
    arguments = {**_defaults(), **changed}
    try:
        checks.other_arguments({**arguments, "listeners": ()})
    except (TypeError, ValueError):
        assert not checks.usual(arguments)


def test_the_defaults_are_usual_and_anything_else_gets_the_full_checks() -> None:
    assert checks.usual(_defaults())
    with pytest.raises(ValueError, match="max_turns must be a whole number >= 1 or None"):
        Agent(ScriptedModel([answer("hi")]), max_turns=0)
    with pytest.raises(TypeError, match="listeners must be an iterable of callables"):
        Agent(ScriptedModel([answer("hi")]), listeners=[1])  # type: ignore[list-item]


def echo(text: str) -> str:
    """Say it back."""
    return text


def test_a_runs_records_are_numbered_and_built_as_its_emitter_would() -> None:
    told: list[object] = []
    script = [calls(("c1", "echo", {"text": "x"})), answer("hi")]
    agent = Agent(
        ScriptedModel(script), [echo], listeners=[told.append], clock=lambda: 1_700_000_000.0
    )
    agent.start()
    agent.submit("go")
    events = [item for item in told if isinstance(item, Event)]
    records = [event for event in events if event.machine == MachineName.CONVERSATION]

    assert [event.seq for event in events] == list(range(1, len(events) + 1))
    assert records
    assert not {str(kind) for kind in RecordKind} & ERROR_EVENTS  # (nothing to redact)
    for event in events:  # (the records from `_note`, the transitions from `RunEmitter`)
        checked = Event.model_validate(event.model_dump())
        assert type(event) is Event
        assert event == checked
        assert event.model_fields_set == checked.model_fields_set
        assert event.model_dump_json() == checked.model_dump_json()
        assert list(vars(event)) == list(Event.model_fields)
    for record in records:
        assert (record.run_id, record.at, record.source) == (agent.run_id, 1_700_000_000.0, "busy")


def test_a_run_with_no_store_shares_the_empty_batch_and_one_given_a_store_later_batches() -> None:
    script = [calls(("c1", "echo", {"text": "x"})), answer("hi")]
    plain = Agent(ScriptedModel(script), [echo], listeners=[lambda item: None])
    plain.start()
    plain.submit("go")
    later = Agent(ScriptedModel([answer("hi")]))
    later.store = MemoryStore()
    later.start()
    later.submit("go")

    assert plain._unsaved is NO_BATCH
    assert plain._undelivered is NO_BATCH
    assert NO_BATCH == []  # (nothing was ever batched in it)
    assert later._unsaved is not NO_BATCH
    assert [event.event for event in later.store.events(later.run_id)][-1] == "complete"


class _Taker:
    """Stands for the Agent a `RunEmitter` tells: keeps what it is told."""

    def __init__(self) -> None:
        self.told: list[Event] = []

    def _on_event(self, event: Event) -> None:
        self.told.append(event)


@given(events)
def test_the_agents_emitter_makes_the_event_the_plain_emitter_makes(event: Event) -> None:
    taker = _Taker()
    emitter = RunEmitter(event.run_id, cast(RunRecord, taker), lambda: event.at)
    emitter.seq = event.seq - 1

    fast = emitter.emit(event.machine, event.event, event.source, event.target, event.data)

    expected = _expected(event)  # (an error's message masked, as `Emitter` masks it)
    assert type(fast) is Event
    assert fast == expected
    assert fast.model_fields_set == expected.model_fields_set
    assert fast.model_dump_json() == expected.model_dump_json()
    assert (taker.told, emitter.seq) == ([fast], event.seq)
    del taker
    assert emitter.emit(event.machine, "e", "a", "b", {}).seq == event.seq + 1  # (told nobody)


class _RetriesOnce:
    """A model that reports one transient failure to ``on_retry``, then answers."""

    name = "retrying"

    def __init__(self) -> None:
        self.listeners: list[object] = []

    async def complete(
        self, messages: object, tools: object, *, on_retry: object = None
    ) -> object:
        self.listeners.append(on_retry)
        assert callable(on_retry)
        on_retry(
            RetryNotice(attempt=1, error_type="RateLimitError", message="slow down", wait=0.5)
        )
        return answer("A")


def test_the_emitter_is_the_models_retry_listener_while_the_agent_lives() -> None:
    model = _RetriesOnce()
    agent = Agent(model, ask_user=False)  # type: ignore[arg-type]
    agent.start()
    listeners: list[object] = []
    agent.add_listener(listeners.append)

    assert agent.submit("hi").reply == "A"

    assert model.listeners == [agent._emitter]  # no new object per model call
    retries = [entry for entry in agent.trace if isinstance(entry, LLMRetryTrace)]
    assert [(r.attempt, r.error_type, r.wait, r.model, r.turn) for r in retries] == [
        (1, "RateLimitError", 0.5, "retrying", 1)
    ]
    assert retries[0] in listeners  # recorded and told, as before
    emitter = agent._emitter
    agent.close()
    del agent
    gc.collect()
    emitter(RetryNotice(attempt=2, error_type="E", message="late", wait=0))  # nobody: ignored
