"""Checks of the contract's invariants on a live `Agent`, for tests of your own agent.

Each check raises `InvariantError` (an `AssertionError`, so pytest and hypothesis report
it as a failed test) naming the invariant and what broke it. `AgentStateMachine` runs them
after every step; they are plain functions, so a hand-written test can call them too::

    agent.submit("hello")
    assert_history_valid(agent.messages, open_round=agent.state in RUN_WAITING)

Needs nothing beyond agentfsm itself.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentfsm.agent.vocabulary import AgentEvent
from agentfsm.errors import InvariantError
from agentfsm.fsm.trace import AnyTraceEntry, ToolExecutionTrace
from agentfsm.states.events import Event
from agentfsm.states.json import JSONValue
from agentfsm.states.messages import Message
from agentfsm.states.names import RunState
from agentfsm.tools.policy import Decision, ToolPolicy
from agentfsm.tools.registry import ToolRegistry
from agentfsm.tools.results import ToolStatus
from agentfsm.tools.schema import compile_validator

if TYPE_CHECKING:
    from agentfsm.agent.core import Agent
    from agentfsm.stores.base import RunStore

TRANSITION_MACHINES = frozenset({"run", "loop"})
"""The machines whose events are transitions (others, like ``conversation``, are records)."""

_REFUSED = frozenset(
    {
        ToolStatus.NOT_FOUND,
        ToolStatus.DISABLED,
        ToolStatus.DENIED,
        ToolStatus.INVALID_ARGUMENTS,
    }
)


def _check(condition: object, invariant: str, message: str) -> None:
    if not condition:
        raise InvariantError(invariant, message)


def is_transition(item: AgentEvent) -> bool:
    """Whether a listener's ``item`` is a transition of RunLifecycle or TurnLoop."""
    return isinstance(item, Event) and str(item.machine) in TRANSITION_MACHINES


def assert_history_valid(messages: Sequence[Message], *, open_round: bool = False) -> None:
    """I7: tool messages follow their calls.

    Each assistant message with tool calls is followed at once by one tool message per call
    id, in call order, before any other message.

    Args:
        messages: The conversation.
        open_round: A round is open (the run waits for the application in requires_action
            or input_required, or is paused in a wait or mid-round), so the last message is
            the assistant message asking for its calls: their tool messages join the history
            when the round closes, and nothing may come between (messages hooks add
            meanwhile wait, deferred, until then).
    """
    end = len(messages)
    if open_round:
        asking = [i for i, m in enumerate(messages) if m.role == "assistant" and m.tool_calls]
        _check(asking, "I7", "the run waits for tool calls, but no assistant message asks any")
        end = asking[-1]
        strays = list(messages[end + 1 :])
        _check(
            not strays,
            "I7",
            f"messages came between the open round's calls and their answers: {strays}",
        )
    index = 0
    while index < end:
        message = messages[index]
        index += 1
        if message.role == "assistant" and message.tool_calls:
            expected = [call.id for call in message.tool_calls]
            answers = messages[index : index + len(expected)]
            answered = [m.tool_call_id if m.role == "tool" else None for m in answers]
            _check(
                answered == expected,
                "I7",
                f"the calls {expected} of message {index - 1} are answered by {answered}",
            )
            index += len(expected)
        else:
            _check(message.role != "tool", "I7", f"stray tool message at {index - 1}: {message}")


def assert_pending_valid(agent: Agent) -> None:
    """I6: while the run waits, its pending calls are unanswered calls of the last turn.

    In requires_action and input_required there is at least one pending call, and each is
    a call of the last assistant message with tool calls that has no tool message yet, or
    a call a child run of one of them waits on, addressed by its path
    (``<run>/<call>/<child run>/<child call>``).
    """
    if agent.state not in (RunState.REQUIRES_ACTION, RunState.INPUT_REQUIRED):
        return
    pending = [call.id for call in agent.pending]
    _check(pending, "I6", f"the run is {agent.state} with no pending call")
    messages = agent.messages
    asking = [i for i, m in enumerate(messages) if m.role == "assistant" and m.tool_calls]
    _check(asking, "I6", "pending calls, but no assistant message asked for any")
    last = asking[-1]
    asked = [call.id for call in messages[last].tool_calls]
    answered = {m.tool_call_id for m in messages[last + 1 :] if m.role == "tool"}
    open_calls = [call_id for call_id in asked if call_id not in answered]
    prefixes = tuple(f"{agent.run_id}/{call_id}/" for call_id in open_calls)
    strays = [
        call_id
        for call_id in pending
        if call_id not in open_calls and not call_id.startswith(prefixes)
    ]
    _check(not strays, "I6", f"pending {strays} are not unanswered calls of message {last}")
    if agent.state == RunState.INPUT_REQUIRED:
        question = agent.question
        _check(question and question.strip(), "I6", "input_required without a question")


def assert_iterations_within_cap(agent: Agent, max_iterations: int) -> None:
    """I8: ``iteration ≤ max_iterations``."""
    _check(
        0 <= agent.iteration <= max_iterations,
        "I8",
        f"iteration {agent.iteration} is outside 0..{max_iterations}",
    )


def assert_tools_permitted(
    trace: Sequence[AnyTraceEntry],
    registry: ToolRegistry,
    *,
    enabled: Collection[str] | None,
    decisions: Mapping[str, Decision],
) -> None:
    """I9: no tool body ran unless it was registered, enabled, permitted and valid.

    Judged from each tool execution of the trace against the tools as declared: a call
    whose tool is unknown, disabled, denied by policy, not approved (when approval is
    required), client-side without an ``output`` decision, or whose arguments fail the
    tool's schema must be refused and never attempted; a permitted valid call must not be
    refused for a reason that does not apply.

    Args:
        trace: The agent's trace.
        registry: The agent's tools.
        enabled: The tools enabled for the run (None for all).
        decisions: The decision the application gave each call it resolved, by call id.
    """
    for entry in trace:
        if isinstance(entry, ToolExecutionTrace):
            why = _why_refused(entry, registry, enabled, decisions.get(entry.call_id))
            ran = entry.result.attempts > 0 or entry.status not in _REFUSED
            _check(
                why is None or not ran,
                "I9",
                f"call {entry.call_id!r} of {entry.name!r} {entry.arguments!r} ended "
                f"{entry.status.value!r} after {entry.result.attempts} attempt(s) though {why}",
            )


def _why_refused(
    entry: ToolExecutionTrace,
    registry: ToolRegistry,
    enabled: Collection[str] | None,
    decision: Decision | None,
) -> str | None:
    declared = registry.find(entry.name)
    if declared is None:
        return "no such tool is registered"
    if enabled is not None and entry.name not in enabled:
        return "the tool is not enabled for the run"
    if declared.policy is ToolPolicy.DENY:
        return "the tool's policy is 'deny'"
    if decision is not None and decision.kind == "deny":
        return "the application denied it"
    kind = None if decision is None else decision.kind
    if declared.client_side and kind != "output":
        return "it is client-side and got no output decision"
    if not declared.client_side and kind == "output":
        return "it got an output decision, which is only for client-side tools"
    if declared.policy is ToolPolicy.REQUIRE_APPROVAL and kind != "approve":
        return "it requires approval and was not approved"
    if not _valid_arguments(entry.arguments, compile_validator(declared.parameters)):
        return "its arguments do not validate against its schema"
    return None


def _valid_arguments(text: str, validator: Any) -> bool:
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError:
        return False
    return isinstance(value, dict) and bool(validator.is_valid(value))


class DurabilityProbe:
    """I11, as a listener: every event is already stored when it is delivered.

    Add it to an agent that has a store (``agent.add_listener(probe)``); for each event it
    is told of, the store's latest snapshot of the run must reflect that event or a later
    one, and the store's log must hold the very event at its ``seq``. `assert_at_rest`
    then checks that nothing acknowledged is missing from the store between calls.

    Args:
        store: The agent's store.
        run_id: The agent's run.
    """

    def __init__(self, store: RunStore, run_id: str) -> None:
        self.store = store
        """Where the run is stored."""
        self.run_id = run_id
        """The run being watched."""
        self.last_seq = 0
        """The ``seq`` of the last event delivered."""

    def __call__(self, item: AgentEvent) -> None:
        """Check one delivered item (trace entries are not events, and pass)."""
        if not isinstance(item, Event):
            return
        snapshot = self.store.load(self.run_id)
        stored_seq = 0 if snapshot is None else snapshot.seq
        _check(
            stored_seq >= item.seq,
            "I11",
            f"event {item.seq} ({item.machine}.{item.event}) was delivered while the stored "
            f"snapshot reflects only seq {stored_seq}",
        )
        logged = self.store.events(self.run_id, after_seq=item.seq - 1)[:1]
        _check(
            logged == [item],
            "I11",
            f"event {item.seq} ({item.machine}.{item.event}) was delivered but the stored log "
            f"has {logged} at that seq",
        )
        self.last_seq = max(self.last_seq, item.seq)

    def assert_at_rest(self, agent: Agent) -> None:
        """Between calls: the stored run is the agent's run, every message included."""
        snapshot = self.store.load(self.run_id)
        if snapshot is None:
            _check(self.last_seq == 0, "I11", "events were delivered but no snapshot is stored")
            return
        _check(
            snapshot.seq >= self.last_seq,
            "I11",
            f"the stored snapshot reflects seq {snapshot.seq}, events up to {self.last_seq} "
            "were delivered",
        )
        stored = (snapshot.state, snapshot.turn, snapshot.messages)
        live = (agent.state, agent.turn, agent.messages)
        _check(
            stored == live,
            "I11",
            f"the stored run differs from the live one: state/turn {stored[:2]} vs {live[:2]}, "
            f"{len(stored[2])} vs {len(live[2])} messages",
        )


def assert_tree_valid(store: RunStore, run_id: str) -> None:
    """I14 on the stored tree of runs under ``run_id`` (its sub-agents' child runs, any depth).

    For each child run that a ``delegated`` event of its parent names: the child is at rest
    once its parent is (not ``busy``); its result is recorded at most once, after its
    ``child_returned``; an answered child's result is its last answer, and a child that ended
    without one is an error result (``SubAgentError``). A child that was never stored (its
    factory failed before it existed, or its parent's turn ended first) has no answer: its
    result, if any, is such an error, and its parent never waits on it.
    """
    parent = store.load(run_id)
    _check(parent is not None, "I14", f"the store holds no run {run_id!r}")
    assert parent is not None  # (for the type checker: _check raised otherwise)
    at_rest = parent.state != RunState.BUSY
    for child_id, (call_id, results) in _children(store.events(run_id)).items():
        child = store.load(child_id)
        if child is None:
            # A child that never existed: its factory raised, returned no Agent or one with a
            # store of its own (the call's result is its error), or its parent's turn ended
            # before it was stored (the call was answered 'cancelled'). Either way nothing
            # waits on it (the contract's I14).
            address = f"{run_id}/{call_id}/{child_id}/"
            _check(
                not (at_rest and any(p.startswith(address) for p in parent.pending)),
                "I14",
                f"run {run_id!r} waits on a call of its child {child_id!r}, which was never "
                "stored",
            )
            _check(
                len(results) <= 1,
                "I14",
                f"the result of child {child_id!r} (never stored) was recorded "
                f"{len(results)} times",
            )
            for result in results:
                _check_child_result(child_id, "never stored", (), result)
            continue
        _check(
            not (at_rest and child.state == RunState.BUSY),
            "I14",
            f"run {run_id!r} is {parent.state} while its child {child_id!r} is busy",
        )
        _check(
            len(results) <= 1,
            "I14",
            f"the result of child {child_id!r} (call {call_id!r}) was recorded "
            f"{len(results)} times",
        )
        for result in results:
            _check_child_result(child_id, child.state, child.messages, result)
        assert_tree_valid(store, child_id)


def _children(log: Sequence[Event]) -> dict[str, tuple[str, list[JSONValue]]]:
    """Each child run a log delegated to: its call, and its results recorded after it returned.

    A result counts for a child when it is the tool result of its call, recorded after the
    child's ``child_returned``.
    """
    found: dict[str, tuple[str, list[JSONValue]]] = {}
    returned: str | None = None
    delegated: str | None = None
    for event in log:
        if event.machine == "loop" and event.event == "delegated":
            delegated = str(event.data.get("child"))
            found.setdefault(delegated, (str(event.data.get("call_id")), []))
        elif event.machine == "loop" and event.event == "child_returned":
            returned = delegated
        elif event.event == "tool_result" and returned is not None:
            call_id, results = found[returned]
            result = event.data.get("result")
            if isinstance(result, dict) and result.get("call_id") == call_id:
                results.append(result)
                returned = None
    return found


def _check_child_result(
    child_id: str, state: str, messages: Sequence[Message], result: JSONValue
) -> None:
    record = result if isinstance(result, dict) else {}
    if state == RunState.COMPLETED:
        _check(
            record.get("status") == ToolStatus.SUCCESS
            and record.get("output") == messages[-1].content,
            "I14",
            f"child {child_id!r} answered {messages[-1].content!r}, but its result is {record!r}",
        )
        return
    error = record.get("error")
    _check(
        record.get("status") == ToolStatus.ERROR
        and isinstance(error, dict)
        and error.get("type") == "SubAgentError",
        "I14",
        f"child {child_id!r} ended {state!r} without an answer, but its result is {record!r}",
    )
