"""`replay`: rebuild a run's snapshot from its event log alone (the contract's I10).

An Agent's log holds its transitions and, as ``conversation`` records, every change to the
conversation: a message, a held-back hook message, a tool call's start and answer, a round
closing. Replaying it from ``created`` through fresh compiled machines gives the snapshot
the Agent stored after its last event, trace aside (the trace is what happened *inside*
the transitions, and is stored, not logged).

A fork's log (`agentfsm.stores.forking`) begins with a ``forked`` record that references its
origin's log up to a rest point instead of copying it: replaying it needs ``origin``, which
gives the origin's state there (`agentfsm.stores.replay_run` resolves it from a store).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pydantic import ValidationError

from agentfsm.errors import IllegalTransitionError, ReplayError
from agentfsm.fsm import LOOP_MACHINE, RUN_MACHINE, Emitter, Machine, RunData
from agentfsm.fsm.rounds import open_round, round_messages
from agentfsm.states.content import ContentPart
from agentfsm.states.events import Event, event_list
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message, ToolCall
from agentfsm.states.names import InputPolicy, MachineName, RecordKind, RunState
from agentfsm.stores.snapshot import ForkPoint, Snapshot, ToolAnswer
from agentfsm.tools.policy import Decision
from agentfsm.tools.results import ToolResult


class _Run:
    """The run being rebuilt: the machines' data and what the Agent keeps beside it."""

    def __init__(self, run_id: str) -> None:
        self.data = RunData(run_id)
        self.emitter = Emitter(run_id)
        self.run = Machine(RUN_MACHINE, self.data, self.emitter)
        self.loop: Machine | None = None
        self.messages: list[Message] = []
        self.deferred: list[Message] = []
        self.decisions: dict[str, Decision] = {}
        self.answers: list[tuple[ToolResult, Message]] = []
        self.started: list[str] = []
        self.origin: ForkPoint | None = None
        self.listed: dict[str, tuple[JSONObject, ...]] = {}
        self.inputs: dict[str, JSONObject] = {}

    def seed(self, event: Event, origin: Callable[[ForkPoint], Snapshot] | None) -> None:
        """A fork's first event: become the origin's run where it was forked."""
        if event.machine != MachineName.CONVERSATION or event.event != RecordKind.FORKED:
            return
        if event.seq != 1:
            raise self.fail(event, "a 'forked' record must be the first event of a fork's log")
        point = self.parse(
            event, ForkPoint, {"run_id": event.data.get("origin"), "seq": event.data.get("seq")}
        )
        if origin is None:
            raise self.fail(
                event,
                f"the run is a fork of run {point.run_id!r} at seq {point.seq}: replay it with "
                "its origin (agentfsm.stores.replay_run resolves it from the store)",
            )
        start = origin(point)
        self.data = start.model_copy(update={"run_id": self.data.run_id}).to_data()
        self.run = Machine(RUN_MACHINE, self.data, self.emitter)
        self.loop = (
            None
            if self.data.loop_state is None
            else Machine(LOOP_MACHINE, self.data, self.emitter)
        )
        self.messages = list(start.messages)
        self.deferred = list(start.deferred)
        self.decisions = dict(start.decisions)
        self.answers = [(answer.result, answer.message) for answer in start.answers]
        self.started = list(start.started)
        self.listed = dict(start.tool_lists)
        self.inputs = dict(start.inputs)
        self.origin = point

    def snapshot(self, seq: int) -> Snapshot:
        """The run rebuilt so far, as a snapshot at ``seq`` (version 1, no trace)."""
        return Snapshot.from_data(
            self.data,
            self.messages,
            (),
            seq,
            1,
            deferred=self.deferred,
            decisions=self.decisions,
            answers=[
                ToolAnswer(result=result, message=message) for result, message in self.answers
            ],
            started=self.started,
            tool_lists=self.listed,
            inputs=self.inputs,
            origin=self.origin,
        )

    def fail(self, event: Event, problem: str) -> ReplayError:
        return ReplayError(self.data.run_id, event.seq, problem)

    # -- transitions ---------------------------------------------------------------------

    def transition(self, event: Event) -> None:
        if event.machine == MachineName.RUN:
            machine = self.run
        elif self.loop is not None:
            machine = self.loop
        else:
            raise self.fail(event, f"loop event {event.event!r} before any turn has started")
        state = getattr(self.data, machine.compiled.state_field)
        if event.source != state:
            raise self.fail(
                event,
                f"it leaves {event.source!r}, but the {event.machine} machine is in {state!r}",
            )
        if event.machine == MachineName.RUN and event.event == "start":
            self.configure(event)
        submitted = event.event == "submit" and event.source != RunState.BUSY
        self.emitter.seq = event.seq - 1
        try:
            emitted = machine.send(event.event, **event.data)
        except (IllegalTransitionError, TypeError) as error:
            raise self.fail(event, f"the machine refuses it: {error}") from error
        if emitted.target != event.target:
            raise self.fail(
                event,
                f"{event.event!r} from {event.source!r} goes to {emitted.target!r}, "
                f"not to the recorded {event.target!r}",
            )
        self.after(event, submitted)

    def after(self, event: Event, submitted: bool) -> None:
        """What the Agent does beside a transition: a turn's user message, loop, reply."""
        if submitted:
            self.messages.append(Message.user(str(event.data.get("text"))))
        if self.data.state == RunState.BUSY and self.data.loop_state is None:
            self.loop = Machine(LOOP_MACHINE, self.data, self.emitter)  # enters thinking
        if event.event == "model_replied":
            self.messages.append(self.parse(event, Message, event.data.get("message")))
        elif event.event == "resolved" and event.machine == MachineName.LOOP:
            decisions = event.data.get("decisions")
            if not isinstance(decisions, dict):
                raise self.fail(event, "'resolved' carries no decisions")
            parsed = {
                call_id: self.parse(event, Decision, value) for call_id, value in decisions.items()
            }
            if any(call_id in self.inputs for call_id in parsed):
                for call_id, answer in parsed.items():  # a tool's question: the call is retried
                    self.inputs[call_id] = {**self.inputs[call_id], "answer": answer.value}
            else:
                # Added to the round's earlier decisions: a round that ran a sub-agent may wait
                # again, on its child's calls, after its own calls were decided.
                self.decisions = {**self.decisions, **parsed}
        elif event.event == "input_requested":
            self.input_requested(event)

    def input_requested(self, event: Event) -> None:
        call_id, request = event.data.get("call_id"), event.data.get("request")
        if call_id not in {call.id for call in self.open_round()} or not isinstance(request, dict):
            raise self.fail(
                event, "'input_requested' must name a call of the open round and its request"
            )
        if call_id in self.started:
            self.started.remove(str(call_id))
        self.inputs[str(call_id)] = {"request": request}
        self.data.at_boundary = not self.started

    def configure(self, event: Event) -> None:
        args = event.data
        try:
            self.data.max_iterations = int(args.get("max_iterations", 10))  # type: ignore[arg-type]
            max_turns = args.get("max_turns")
            self.data.max_turns = None if max_turns is None else int(max_turns)  # type: ignore[arg-type]
            self.data.input_policy = InputPolicy(args.get("input_policy", InputPolicy.REJECT))
            retries = args.get("output_retries")
            self.data.output_retries = None if retries is None else int(retries)  # type: ignore[arg-type]
        except (TypeError, ValueError) as error:
            raise self.fail(event, f"'start' carries a bad configuration: {error}") from error
        prompt = args.get("system_prompt")
        if prompt is not None:
            self.messages.append(Message.system(str(prompt)))

    # -- conversation records --------------------------------------------------------------

    def record_forked(self, event: Event) -> None:
        """The ``forked`` record the run was seeded from: it stays where the origin was."""
        if event.source != self.data.state or event.target != self.data.state:
            raise self.fail(
                event,
                f"the 'forked' record must stay in the origin's state {self.data.state!r}, "
                f"but it says {event.source!r} → {event.target!r}",
            )

    def record(self, event: Event) -> None:
        if event.source != self.data.state or event.target != self.data.state:
            raise self.fail(
                event,
                f"a conversation record must stay in the run's state {self.data.state!r}, "
                f"but it says {event.source!r} → {event.target!r}",
            )
        try:
            kind = RecordKind(event.event)
        except ValueError:
            known = ", ".join(k.value for k in RecordKind)
            raise self.fail(
                event, f"{event.event!r} is not a conversation record; known: {known}"
            ) from None
        getattr(self, f"_{kind.value}")(event)

    def _message(self, event: Event) -> None:
        self.messages.append(self.parse(event, Message, event.data.get("message")))

    def _deferred(self, event: Event) -> None:
        self.deferred.append(self.parse(event, Message, event.data.get("message")))

    def _flush_deferred(self, event: Event) -> None:
        self.messages.extend(self.deferred)
        self.deferred = []

    def _tool_started(self, event: Event) -> None:
        call_id = event.data.get("call_id")
        if call_id not in {call.id for call in self.open_round()}:
            raise self.fail(event, f"call {call_id!r} is not a call of the open round")
        if call_id not in self.started:  # (again: an idempotent call run again, I11)
            self.started.append(str(call_id))
        self.data.at_boundary = False

    def _tool_result(self, event: Event) -> None:
        result = self.parse(event, ToolResult, event.data.get("result"))
        message = self.parse(event, Message, event.data.get("message"))
        if result.call_id not in {call.id for call in self.open_round()}:
            raise self.fail(event, f"call {result.call_id!r} is not a call of the open round")
        if result.call_id in self.started:
            self.started.remove(result.call_id)
        self.inputs.pop(result.call_id, None)
        self.answers.append((result, message))
        self.data.at_boundary = not self.started  # between two calls: a step boundary

    def _round_closed(self, event: Event) -> None:
        self.messages.extend(round_messages(self.open_round(), self.answers))
        self.answers, self.started, self.decisions = [], [], {}
        self.inputs = {}
        self.data.at_boundary = True

    def _reset(self, event: Event) -> None:
        keep = event.data.get("keep")
        if not isinstance(keep, int) or keep < 0:
            raise self.fail(event, f"'reset' must carry keep, a count of messages, not {keep!r}")
        del self.messages[keep:]
        self.deferred = []

    def _tool_calls_edited(self, event: Event) -> None:
        # The conversation changes with the model_replied that follows (it carries the
        # edited reply); the record keeps what the model asked for, and must be whole.
        self.parse(event, Message, event.data.get("original"))
        self.parse(event, Message, event.data.get("edited"))

    def _compacted(self, event: Event) -> None:
        start, end = event.data.get("start"), event.data.get("end")
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end):
            raise self.fail(event, f"'compacted' must carry 0 <= start < end, not {start}, {end}")
        if end > len(self.messages):
            raise self.fail(event, f"'compacted' ends at {end}, past the conversation's end")
        summary = self.parse(event, Message, event.data.get("summary"))
        self.messages[start:end] = [summary]

    def _forked(self, event: Event) -> None:
        raise self.fail(event, "a 'forked' record must be the first event of a fork's log")

    def _message_replaced(self, event: Event) -> None:
        index = event.data.get("index")
        if not isinstance(index, int) or not 0 <= index < len(self.messages):
            raise self.fail(
                event,
                f"'message_replaced' must carry the index of a message (0 to "
                f"{len(self.messages) - 1}), not {index!r}",
            )
        original = self.parse(event, Message, event.data.get("original"))
        if original != self.messages[index]:
            raise self.fail(event, f"message {index} is not the 'original' the record names")
        self.messages[index] = self.parse(event, Message, event.data.get("message"))

    def _tools_listed(self, event: Event) -> None:
        server, tools = event.data.get("server"), event.data.get("tools")
        if not isinstance(server, str) or not isinstance(tools, list):
            raise self.fail(event, "'tools_listed' must carry a server's prefix and its tools")
        if not all(
            isinstance(entry, dict) and isinstance(entry.get("name"), str) for entry in tools
        ):
            raise self.fail(event, "'tools_listed' must list tools as objects with a name")
        self.listed[server] = tuple(tools)  # type: ignore[arg-type]  # objects, checked above

    def _user_content(self, event: Event) -> None:
        # Told to the user, never part of the conversation: only its shape is checked.
        content = event.data.get("content")
        if not isinstance(content, list) or not isinstance(event.data.get("call_id"), str):
            raise self.fail(event, "'user_content' must carry a call_id and a content list")
        for item in content:
            self.parse(event, ContentPart, item)

    def _lease_taken_over(self, event: Event) -> None:
        owner, previous = event.data.get("owner"), event.data.get("previous_owner")
        expired = event.data.get("expired_at")
        if self.data.state != RunState.BUSY:
            raise self.fail(event, "'lease_taken_over' is recorded only in a busy run")
        if not isinstance(owner, str) or not isinstance(previous, str):
            raise self.fail(event, "'lease_taken_over' must carry the new owner and the previous")
        if type(expired) not in (int, float):
            raise self.fail(
                event, f"'lease_taken_over' expired_at must be a time, not {expired!r}"
            )

    def open_round(self) -> tuple[ToolCall, ...]:
        return open_round(self.messages)

    def parse(self, event: Event, model: Any, value: object) -> Any:
        try:
            return model.model_validate(value)
        except ValidationError as error:
            problem = str(error).splitlines()[0]
            raise self.fail(
                event, f"{event.event!r} must carry a valid {model.__name__}: {problem}"
            ) from error


def replay(
    events: Iterable[Event],
    expected: Snapshot | None = None,
    *,
    origin: Callable[[ForkPoint], Snapshot] | None = None,
) -> Snapshot:
    """The snapshot of the run whose event log this is, rebuilt from the log alone (I10).

    Args:
        events: The run's whole log, in order, from its ``start`` (``seq`` 1), or, for a
            fork, from its ``forked`` record.
        expected: The run's stored snapshot, to check the log against: a log edited into
            another legal run (a message's text changed, say) replays, but not to it.
        origin: For a fork's log: the state of its origin at the fork point (the origin's
            own replay up to there). Not needed for a run that is no fork.

    Returns:
        The snapshot at the log's last event, with ``version`` 1 and an empty trace (a
        store's snapshot of the same run equals it in every other field).

    Raises:
        ReplayError: The log has a gap, another run's event, a transition the machines do
            not take from where the run is, or a record without the data its kind carries;
            a fork's log without ``origin``; or it replays to a snapshot that differs from
            ``expected`` (the first differing field is named).
        TypeError: ``events`` is not an iterable of `Event`.
    """
    log = event_list(events)
    if not log:
        raise ReplayError("", 0, "the log is empty: it must begin with the run's 'start'")
    run = _Run(log[0].run_id)
    for run in replaying(log, origin):  # noqa: B007 (the run after the last event)
        pass
    rebuilt = run.snapshot(log[-1].seq)
    if expected is not None:
        _compare(rebuilt, expected, log[-1])
    return rebuilt


def replaying(
    log: list[Event], origin: Callable[[ForkPoint], Snapshot] | None = None
) -> Iterator[_Run]:
    """Replay ``log`` one event at a time: the run rebuilt so far, after each event.

    The same `_Run` is yielded each time, changed in place: read it before the next.

    Raises:
        ReplayError: As `replay` does, at the first event it cannot replay.
    """
    run = _Run(log[0].run_id) if log else _Run("")
    if log:
        run.seed(log[0], origin)
    for index, event in enumerate(log):
        if event.run_id != run.data.run_id:
            raise run.fail(event, f"it is an event of run {event.run_id!r}")
        if event.seq != index + 1:
            raise run.fail(event, f"seq {event.seq} where {index + 1} was expected")
        if index == 0 and run.origin is not None:
            run.record_forked(event)
        elif event.machine == MachineName.CONVERSATION:
            run.record(event)
        else:
            run.transition(event)
        yield run


_NOT_LOGGED = frozenset({"trace", "version"})


def _compare(rebuilt: Snapshot, expected: Snapshot, last: Event) -> None:
    for field in Snapshot.model_fields:
        if field in _NOT_LOGGED:
            continue
        mine, theirs = getattr(rebuilt, field), getattr(expected, field)
        if mine == theirs:
            continue
        detail = f"{field} is {_short(mine)}, but the stored snapshot has {_short(theirs)}"
        if field == "messages":
            index = next(
                (i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b),
                min(len(mine), len(theirs)),
            )
            detail = (
                f"message {index} is {_short(mine[index] if index < len(mine) else None)}, "
                f"but the stored snapshot has "
                f"{_short(theirs[index] if index < len(theirs) else None)}"
            )
        raise ReplayError(
            expected.run_id,
            last.seq,
            f"the log replays to another run than the stored one: {detail}",
        )


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
