"""The kit's invariant checks catch what they name, and pass what is right."""

from __future__ import annotations

import pytest

from agentfsm import Agent, Decision, MemoryStore, ScriptedModel, Snapshot, Tool, tool
from agentfsm.fsm import RunData
from agentfsm.fsm.trace import ToolExecutionTrace, tool_entries
from agentfsm.states import Event, MachineName, Message, ToolCall
from agentfsm.testing import (
    DurabilityProbe,
    FakeClock,
    InvariantError,
    assert_history_valid,
    assert_iterations_within_cap,
    assert_pending_valid,
    assert_tools_permitted,
    is_transition,
)
from agentfsm.tools import ToolRegistry
from agentfsm.tools.results import ToolErrorInfo, ToolResult, ToolStatus

A, B = ToolCall(id="a", name="f", arguments="{}"), ToolCall(id="b", name="f", arguments="{}")
ASKS = Message.assistant("", (A, B))
USER, SAYS = Message.user("hi"), Message.assistant("done")
TOOL_A, TOOL_B = Message.tool("a", "1"), Message.tool("b", "2")


@pytest.mark.parametrize(
    "messages",
    [
        [USER, SAYS],
        [USER, ASKS, TOOL_A, TOOL_B, SAYS],
        [Message.system("s"), USER, ASKS, TOOL_A, TOOL_B, USER],
    ],
    ids=["no-calls", "answered-round", "input-after-round"],
)
def test_history_check_passes_valid_histories(messages: list[Message]) -> None:
    assert_history_valid(messages)


@pytest.mark.parametrize(
    "messages",
    [
        [USER, ASKS, TOOL_B, TOOL_A],
        [USER, ASKS, TOOL_A, USER, TOOL_B],
        [USER, ASKS, TOOL_A],
        [USER, TOOL_A],
        [USER, ASKS],
    ],
    ids=["out-of-order", "interleaved", "unanswered", "stray-tool", "open-round-not-waiting"],
)
def test_history_check_catches_broken_histories(messages: list[Message]) -> None:
    with pytest.raises(InvariantError, match="I7"):
        assert_history_valid(messages)


def test_an_open_round_is_valid_only_while_waiting_and_only_at_the_end() -> None:
    assert_history_valid([USER, ASKS], open_round=True)
    with pytest.raises(InvariantError, match="I7"):  # a message between calls and answers
        assert_history_valid([USER, ASKS, Message.user("note from a hook")], open_round=True)
    with pytest.raises(InvariantError, match="I7"):
        assert_history_valid([USER, ASKS, TOOL_A], open_round=True)
    with pytest.raises(InvariantError, match="I7"):
        assert_history_valid([USER, SAYS], open_round=True)


@tool(policy="require_approval")
def book(city: str) -> str:
    """Book."""
    return "booked"


@tool(policy="deny")
def wipe() -> str:
    """Never."""
    return "wiped"


def waiting_agent() -> Agent:
    agent = Agent(ScriptedModel().tool_call("book", city="Oslo"), [book])
    agent.start()
    agent.submit("book Oslo")
    return agent


def test_pending_check_passes_a_waiting_agent_and_its_cap() -> None:
    agent = waiting_agent()
    assert agent.state == "requires_action"
    assert_pending_valid(agent)
    assert_iterations_within_cap(agent, 10)
    with pytest.raises(InvariantError, match="I8"):
        assert_iterations_within_cap(agent, 0)
    agent.close()


def entry(call: ToolCall, status: ToolStatus, attempts: int) -> ToolExecutionTrace:
    error = None if status is ToolStatus.SUCCESS else ToolErrorInfo(type="E", message="no")
    result = ToolResult(
        call_id=call.id, tool_name=call.name, status=status, error=error, attempts=attempts
    )
    return tool_entries([call], [result], 1, 1, 0.0)[0]


REGISTRY = ToolRegistry([book, wipe])
BOOK = ToolCall(id="c1", name="book", arguments='{"city": "Oslo"}')


@pytest.mark.parametrize(
    ("call", "decision", "enabled"),
    [
        (ToolCall(id="c1", name="wipe", arguments="{}"), Decision.approve(), None),
        (BOOK, None, None),
        (BOOK, Decision.deny(), None),
        (BOOK, Decision.approve(), {"wipe"}),
        (ToolCall(id="c1", name="book", arguments='{"city": 3}'), Decision.approve(), None),
        (ToolCall(id="c1", name="teleport", arguments="{}"), Decision.approve(), None),
    ],
    ids=["denied-policy", "unapproved", "denied", "disabled", "invalid", "unknown"],
)
def test_tool_check_catches_a_body_that_ran_when_it_may_not(
    call: ToolCall, decision: Decision | None, enabled: set[str] | None
) -> None:
    decisions = {} if decision is None else {call.id: decision}
    refused = [entry(call, ToolStatus.DENIED, 0)]
    assert_tools_permitted(refused, REGISTRY, enabled=enabled, decisions=decisions)
    ran = [entry(call, ToolStatus.SUCCESS, 1)]
    with pytest.raises(InvariantError, match="I9"):
        assert_tools_permitted(ran, REGISTRY, enabled=enabled, decisions=decisions)


def test_tool_check_passes_an_approved_valid_call_that_ran() -> None:
    ran = [entry(BOOK, ToolStatus.SUCCESS, 1)]
    assert_tools_permitted(ran, REGISTRY, enabled=None, decisions={"c1": Decision.approve()})


def event(seq: int, machine: MachineName = MachineName.RUN) -> Event:
    return Event(
        seq=seq,
        run_id="r",
        machine=machine,
        event="start",
        source="created",
        target="ready",
        at=1.0,
    )


def save(store: MemoryStore, seq: int, messages: tuple[Message, ...] = ()) -> None:
    data = RunData("r", state="ready")
    snapshot = Snapshot.from_data(data, messages, [], seq=seq, version=seq)
    store.save(snapshot, [event(seq)], expected_version=(seq - 1) or None)


def test_durability_probe_passes_events_stored_before_delivery() -> None:
    store = MemoryStore()
    probe = DurabilityProbe(store, "r")
    for seq in (1, 2):
        save(store, seq)
        probe(event(seq))
    assert probe.last_seq == 2


def test_durability_probe_catches_an_event_delivered_before_it_is_stored() -> None:
    store = MemoryStore()
    probe = DurabilityProbe(store, "r")
    save(store, 1)
    probe(event(1))
    with pytest.raises(InvariantError, match=r"I11.*snapshot reflects only seq 1"):
        probe(event(2))


def test_durability_probe_catches_a_stored_log_that_differs_from_the_event() -> None:
    store = MemoryStore()
    probe = DurabilityProbe(store, "r")
    save(store, 1)
    with pytest.raises(InvariantError, match=r"I11.*stored log"):
        probe(event(1).model_copy(update={"at": 2.0}))


def test_durability_probe_at_rest_catches_a_lost_message() -> None:
    agent = Agent(ScriptedModel(), clock=FakeClock())
    store = MemoryStore()
    probe = DurabilityProbe(store, agent.run_id)
    probe.assert_at_rest(agent)  # nothing delivered, nothing stored
    probe.last_seq = 1
    with pytest.raises(InvariantError, match=r"I11.*no snapshot"):
        probe.assert_at_rest(agent)


def test_only_run_and_loop_events_are_transitions() -> None:
    assert is_transition(event(1))
    assert is_transition(event(1, MachineName.LOOP))
    assert not is_transition(event(1).model_copy(update={"machine": "conversation"}))


TUPLE = Tool(
    lambda pair: str(pair),
    name="pair",
    parameters={
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "pair": {
                "type": "array",
                "items": [{"type": "integer"}, {"type": "string"}],
                "additionalItems": False,
            }
        },
        "required": ["pair"],
    },
)
"""A draft-07 tuple (``items`` as an array), as npm's MCP servers declare them."""


def test_tool_check_judges_arguments_by_the_schemas_own_draft() -> None:
    registry = ToolRegistry([TUPLE])
    valid = ToolCall(id="c1", name="pair", arguments='{"pair": [1, "x"]}')
    assert_tools_permitted(
        [entry(valid, ToolStatus.SUCCESS, 1)], registry, enabled=None, decisions={}
    )
    extra = ToolCall(id="c1", name="pair", arguments='{"pair": [1, "x", 2]}')
    with pytest.raises(InvariantError, match=r"I9.*do not validate"):
        assert_tools_permitted(
            [entry(extra, ToolStatus.SUCCESS, 1)], registry, enabled=None, decisions={}
        )
