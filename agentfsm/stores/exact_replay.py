"""`replay`: rebuild a run's snapshot from its event log alone (the contract's I10).

An Agent's log holds its transitions and, as ``conversation`` records, every change to the
conversation: a message, a held-back hook message, a tool call's start and answer, a round
closing. Replaying it from ``created`` through fresh compiled machines gives the snapshot
the Agent stored after its last event, trace aside (the trace is what happened *inside*
the transitions, and is stored, not logged).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from agentfsm.errors import IllegalTransitionError, ReplayError
from agentfsm.fsm import LOOP_MACHINE, RUN_MACHINE, Emitter, Machine, RunData
from agentfsm.fsm.rounds import open_round, round_messages
from agentfsm.states.events import Event
from agentfsm.states.messages import Message, ToolCall
from agentfsm.states.names import InputPolicy, MachineName, RecordKind, RunState
from agentfsm.stores.snapshot import Snapshot, ToolAnswer
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
            self.decisions = {
                call_id: self.parse(event, Decision, value) for call_id, value in decisions.items()
            }

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
        self.started.append(str(call_id))
        self.data.at_boundary = False

    def _tool_result(self, event: Event) -> None:
        result = self.parse(event, ToolResult, event.data.get("result"))
        message = self.parse(event, Message, event.data.get("message"))
        if result.call_id not in {call.id for call in self.open_round()}:
            raise self.fail(event, f"call {result.call_id!r} is not a call of the open round")
        if result.call_id in self.started:
            self.started.remove(result.call_id)
        self.answers.append((result, message))
        self.data.at_boundary = not self.started  # between two calls: a step boundary

    def _round_closed(self, event: Event) -> None:
        self.messages.extend(round_messages(self.open_round(), self.answers))
        self.answers, self.started, self.decisions = [], [], {}
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


def replay(events: Iterable[Event], expected: Snapshot | None = None) -> Snapshot:
    """The snapshot of the run whose event log this is, rebuilt from the log alone (I10).

    Args:
        events: The run's whole log, in order, from its ``start`` (``seq`` 1).
        expected: The run's stored snapshot, to check the log against: a log edited into
            another legal run (a message's text changed, say) replays, but not to it.

    Returns:
        The snapshot at the log's last event, with ``version`` 1 and an empty trace (a
        store's snapshot of the same run equals it in every other field).

    Raises:
        ReplayError: The log has a gap, another run's event, a transition the machines do
            not take from where the run is, or a record without the data its kind carries;
            or it replays to a snapshot that differs from ``expected`` (the first differing
            field is named).
    """
    log = list(events)
    if not log:
        raise ReplayError("", 0, "the log is empty: it must begin with the run's 'start'")
    run = _Run(log[0].run_id)
    for index, event in enumerate(log):
        if event.run_id != run.data.run_id:
            raise run.fail(event, f"it is an event of run {event.run_id!r}")
        if event.seq != index + 1:
            raise run.fail(event, f"seq {event.seq} where {index + 1} was expected")
        if event.machine == MachineName.CONVERSATION:
            run.record(event)
        else:
            run.transition(event)
    rebuilt = Snapshot.from_data(
        run.data,
        run.messages,
        (),
        log[-1].seq,
        1,
        deferred=run.deferred,
        decisions=run.decisions,
        answers=[ToolAnswer(result=result, message=message) for result, message in run.answers],
        started=run.started,
    )
    if expected is not None:
        _compare(rebuilt, expected, log[-1])
    return rebuilt


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
