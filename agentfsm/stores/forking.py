"""`fork`: a new run that begins where a stored run was at one of its rest points.

A rest point is an event after which the run was at rest: a call into its Agent had
returned there (ready, waiting for an approval or an answer, completed, failed, paused,
shut down), and the next event, if any, begins another call. The fork is a new run, with
its own id, whose log begins with one ``forked`` record naming the origin and the rest
point: the origin's log up to there is referenced, not copied, and is replayed (no model
call, no tool call) whenever the fork's state must be rebuilt from its log. The origin is
never written to. An optional edit (replace the last user message, change a pending call's
arguments, add a message) is recorded as the fork's next events. The fork is then taken up
like any stored run: ``Agent(..., store=store, run_id=fork.run_id)``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agentfsm import _checks as checks
from agentfsm._checks import refuse_type, text
from agentfsm.errors import ForkError, ReplayError
from agentfsm.states.events import Event
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import Message
from agentfsm.states.names import LoopState, MachineName, RecordKind, RunState
from agentfsm.stores.base import RunStore
from agentfsm.stores.exact_replay import replay, replaying
from agentfsm.stores.snapshot import ForkPoint, Snapshot

__all__ = [
    "AddMessage",
    "Edit",
    "EditCall",
    "ReplaceUserMessage",
    "fork",
    "replay_run",
    "rest_points",
    "state_at",
]

ASK_USER = "ask_user"


@dataclass(frozen=True, slots=True)
class ReplaceUserMessage:
    """Edit: the conversation's last user message says ``text`` instead."""

    text: str
    """The new text of the last user message."""


@dataclass(frozen=True, slots=True)
class EditCall:
    """Edit: the pending call ``call_id`` is made with ``arguments`` instead.

    The call keeps its id, its tool and its place; the new arguments are checked against
    the tool's schema when the call runs (I9), as the model's own are.
    """

    call_id: str
    """The id of a call the run waits on (approval, or a client-side result)."""
    arguments: str | dict[str, JSONValue]
    """The new arguments: a JSON object, as text or as a dict."""


@dataclass(frozen=True, slots=True)
class AddMessage:
    """Edit: ``message`` joins the conversation (held back until an open round closes, I7).

    A str is a user message. A tool message, or an assistant message with tool calls, is
    refused: a fork adds no call and no answer.
    """

    message: Message | str
    """The message to add."""


Edit = ReplaceUserMessage | EditCall | AddMessage
"""One of the edits a fork can begin with."""

_AT_REST_RECORDS = frozenset({RecordKind.RESET, RecordKind.COMPACTED, RecordKind.FORKED})
"""Records a run makes at rest, outside any step (each a call of its own)."""


def _begins_a_call(event: Event | None) -> bool:
    if event is None or event.machine == MachineName.RUN:
        return True
    return event.machine == MachineName.CONVERSATION and event.event in _AT_REST_RECORDS


def _at_rest(state: str, queued: bool, following: Event | None) -> bool:
    if state in (RunState.CREATED, RunState.BUSY):
        return False
    if queued and state in (RunState.COMPLETED, RunState.FAILED):
        return False  # the queued input is submitted in the same call
    return _begins_a_call(following)


def _origins(store: RunStore) -> Callable[[ForkPoint], Snapshot]:
    """The state of a stored run at a fork point, resolving its own origin if it has one."""
    resolving: set[str] = set()

    def resolve(point: ForkPoint) -> Snapshot:
        if point.run_id in resolving:
            raise ReplayError(point.run_id, point.seq, "its forks' origins go round in a circle")
        log = store.events(point.run_id)[: point.seq]
        if len(log) < point.seq:
            raise ReplayError(
                point.run_id,
                point.seq,
                f"the fork's origin {point.run_id!r} has no event {point.seq} in the store "
                f"({len(log)} events): was it deleted?",
            )
        resolving.add(point.run_id)
        try:
            return replay(log, origin=resolve)
        finally:
            resolving.discard(point.run_id)

    return resolve


def replay_run(store: RunStore, run_id: str) -> Snapshot:
    """Replay a stored run's log (I10), a fork's through its origin, against its snapshot.

    Args:
        store: The store that holds the run (and, for a fork, its origins).
        run_id: The run to replay.

    Returns:
        The snapshot the log replays to (see `replay`); it equals the stored one but for
        its trace and version.

    Raises:
        ReplayError: The run is not stored, or its log (or an origin's) does not replay to
            the stored snapshot.
    """
    stored = store.load(run_id)
    if stored is None:
        raise ReplayError(run_id, 0, "no such run in the store")
    return replay(store.events(run_id), expected=stored, origin=_origins(store))


def _points(log: list[Event], store: RunStore) -> list[int]:
    return [seq for seq, _ in _rests(log, store)]


def _rests(log: list[Event], store: RunStore) -> list[tuple[int, str | None]]:
    """Each rest point's seq, and the sub-agent call the run waits on there (or None)."""
    points = []
    for index, run in enumerate(replaying(log, _origins(store))):
        following = log[index + 1] if index + 1 < len(log) else None
        if _at_rest(run.data.state, bool(run.data.queued), following):
            points.append((index + 1, _nested_wait(run.data.pending, run.data.loop_state)))
    return points


def _nested_wait(pending: tuple[str, ...], loop_state: str | None) -> str | None:
    """What a run at rest waits on in a sub-agent (a call's address), if it waits on one."""
    nested = [address for address in pending if "/" in address]
    if nested:
        return f"a sub-agent's call {nested[0]!r}"
    return (
        "a sub-agent's run (its delegation paused)" if loop_state == LoopState.DELEGATING else None
    )


def _stored_log(store: RunStore, run_id: object) -> list[Event]:
    text("run_id", run_id)
    assert isinstance(run_id, str)
    log = store.events(run_id)
    if not log:
        raise ForkError(run_id, "no such run in the store")
    return log


def rest_points(store: RunStore, run_id: str) -> tuple[int, ...]:
    """The ``seq`` of every rest point of a stored run, in order: where it can be forked.

    Raises:
        ForkError: No such run in the store.
        ReplayError: Its log (or an origin's) cannot be replayed.
    """
    return tuple(_points(_stored_log(store, run_id), store))


def state_at(store: RunStore, run_id: str, seq: int) -> Snapshot:
    """A stored run as it was right after its event ``seq``, rebuilt from its log.

    Nothing runs: no model call, no tool call. The snapshot has ``version`` 1 and no trace.

    Raises:
        ForkError: No such run, or no event ``seq`` in its log.
        ReplayError: Its log (or an origin's) cannot be replayed.
    """
    log = _stored_log(store, run_id)
    _check_seq(run_id, seq, len(log))
    return replay(log[:seq], origin=_origins(store))


def _check_seq(run_id: str, seq: object, last: int) -> None:
    if not isinstance(seq, int) or isinstance(seq, bool):
        refuse_type("at", seq, "an int, the seq of an event of the run")
    if seq < 1:
        raise ForkError(run_id, f"at={seq} is no seq: allowed: 1 to {last}")
    if seq > last:
        raise ForkError(run_id, f"at={seq} is past its last event; allowed: 1 to {last}")


def _fork_point(
    store: RunStore, run_id: str, log: list[Event], at: int | None, nearest: bool
) -> int:
    """The seq to fork at: ``at``, if it is a rest point, or the last one before it.

    The last one before it only with ``nearest`` (else `ForkError`, naming the nearest); the
    run's last rest point when ``at`` is None.
    """
    if at is not None:
        _check_seq(run_id, at, len(log))
    upto = len(log) if at is None else at
    before = [point for point in _points(log[: upto + 1], store) if point <= upto]
    if before and (at is None or nearest or before[-1] == upto):
        return before[-1]
    later = [point for point in _points(log, store) if point > upto]
    if not before:
        first = f"its first rest point is seq {later[0]}" if later else "it has no rest point"
        raise ForkError(run_id, f"at={upto} is before the run's first rest point: {first}")
    around = (
        f"the nearest rest points are seq {before[-1]} (before) and seq {later[0]} (after)"
        if later
        else f"the nearest rest point is seq {before[-1]} (before; none after it)"
    )
    raise ForkError(
        run_id,
        f"at={upto} is not a rest point (the run was inside a call there): {around}; fork at "
        f"one of them, or pass nearest=True (CLI: --nearest) to fork at seq {before[-1]}",
    )


def _nested_refusal(
    store: RunStore, run_id: str, log: list[Event], point: int, waiting: str
) -> ForkError:
    """Why a fork point where the run waits on a sub-agent is refused: it could never go on.

    The wait is a call of a child run (addressed ``<run>/<call>/<child run>/<child call>``)
    whose run the fork would not have: a resolve of it would find no child to take up.
    """
    rests = _rests(log, store)
    free = [f"seq {seq}" for seq, nested in rests if nested is None]
    allowed = ", ".join(free) if free else "none: this run waits on a sub-agent at each"
    return ForkError(
        run_id,
        f"at seq {point} the run waits on {waiting}: a fork carries no "
        "sub-agent run, so the fork could never resolve that wait; allowed: a rest point "
        f"where it waits on no sub-agent ({allowed}); or fork the sub-agent's run itself",
    )


class _Forking:
    """The new run being built: its conversation, its records, its seq."""

    def __init__(self, origin: str, start: Snapshot, new_id: str, at: float) -> None:
        self.origin = origin
        self.start = start
        self.run_id = new_id
        self.at = at
        self.messages = list(start.messages)
        self.deferred = list(start.deferred)
        self.events: list[Event] = []
        self.record(RecordKind.FORKED, {"origin": origin, "seq": start.seq})

    def record(self, kind: RecordKind, data: JSONObject) -> None:
        state = self.start.state
        self.events.append(
            Event(
                seq=len(self.events) + 1,
                run_id=self.run_id,
                machine=MachineName.CONVERSATION,
                event=kind,
                source=state,
                target=state,
                at=self.at,
                data=data,
            )
        )

    def refuse(self, edit: object, problem: str) -> ForkError:
        return ForkError(self.origin, f"edit {edit!r}: {problem}")

    def replace(self, index: int, message: Message) -> None:
        original = self.messages[index]
        self.messages[index] = message
        self.record(
            RecordKind.MESSAGE_REPLACED,
            {
                "index": index,
                "original": original.model_dump(mode="json"),
                "message": message.model_dump(mode="json"),
            },
        )

    def apply(self, edit: object) -> None:
        if isinstance(edit, ReplaceUserMessage):
            self.replace_user_message(edit)
        elif isinstance(edit, EditCall):
            self.edit_call(edit)
        elif isinstance(edit, AddMessage):
            self.add_message(edit)
        else:
            refuse_type("edit", edit, "a ReplaceUserMessage, an EditCall or an AddMessage")

    def replace_user_message(self, edit: ReplaceUserMessage) -> None:
        if not isinstance(edit.text, str) or not edit.text.strip():
            raise self.refuse(edit, "the new text must be a non-empty str")
        users = [i for i, message in enumerate(self.messages) if message.role == "user"]
        if not users:
            raise self.refuse(edit, f"the run has no user message at seq {self.start.seq}")
        self.replace(users[-1], Message.user(edit.text))

    def edit_call(self, edit: EditCall) -> None:
        pending = self.start.pending
        calls = self.messages[-1].tool_calls if self.messages else ()
        call = next((c for c in calls if c.id == edit.call_id), None)
        if call is None or edit.call_id not in pending:
            allowed = ", ".join(map(repr, pending)) or "none (no call is pending)"
            raise self.refuse(
                edit,
                f"call {edit.call_id!r} is not pending at seq {self.start.seq}; "
                f"pending: {allowed}",
            )
        if call.name == ASK_USER:
            raise self.refuse(edit, "the question the run asks is not a call to edit")
        arguments = _arguments(edit.arguments)
        if arguments is None:
            raise self.refuse(edit, "the arguments must be a JSON object (text or dict)")
        edited = tuple(
            c.model_copy(update={"arguments": arguments}) if c.id == call.id else c for c in calls
        )
        self.replace(
            len(self.messages) - 1, self.messages[-1].model_copy(update={"tool_calls": edited})
        )

    def add_message(self, edit: AddMessage) -> None:
        message = edit.message
        if isinstance(message, str):
            if not message.strip():
                raise self.refuse(edit, "a message given as a str must be non-empty text")
            message = Message.user(message)
        if not isinstance(message, Message):
            raise self.refuse(edit, "the message must be a Message or a str")
        if message.role == "tool" or message.tool_calls:
            raise self.refuse(
                edit,
                "a fork adds no tool message and no tool call; allowed: a user, "
                "system or assistant message without tool calls",
            )
        data: JSONObject = {"message": message.model_dump(mode="json")}
        if self.messages and self.messages[-1].tool_calls:  # a round is open: I7
            self.deferred.append(message)
            self.record(RecordKind.DEFERRED, data)
        else:
            self.messages.append(message)
            self.record(RecordKind.MESSAGE, data)

    def snapshot(self) -> Snapshot:
        return self.start.model_copy(
            update={
                "run_id": self.run_id,
                "messages": tuple(self.messages),
                "deferred": tuple(self.deferred),
                "seq": len(self.events),
                "version": 1,
                "trace": (),
                "origin": ForkPoint(run_id=self.origin, seq=self.start.seq),
            }
        )


def _arguments(value: object) -> str | None:
    """``value`` as the JSON text of an object, or None if it is not one."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return None
        return value if isinstance(parsed, dict) else None
    if isinstance(value, dict):
        try:
            return json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            return None
    return None


def fork(
    store: RunStore,
    run_id: str,
    *,
    at: int | None = None,
    nearest: bool = False,
    edit: Edit | Sequence[Edit] | None = None,
    new_run_id: str | None = None,
    clock: Callable[[], float] = time.time,
) -> Snapshot:
    """Fork a stored run: a new run that begins where it was at a rest point.

    The origin's log up to the fork point is replayed (no model call, no tool call) and
    referenced by the fork's first event, a ``forked`` record; the origin is not written
    to. A wait open at the fork point (an approval, a question) is open in the fork. Take
    the fork up with ``Agent(..., store=store, run_id=<the fork's run_id>)``.

    Args:
        store: The store that holds the run; the fork is saved there too.
        run_id: The run to fork (a fork may be forked again).
        at: The ``seq`` of a rest point of its log (`rest_points`), where the fork begins.
            None for the run's last rest point.
        nearest: When ``at`` is no rest point, begin at the last rest point before it
            instead of refusing; the returned snapshot's ``origin.seq`` is the seq used.
        edit: What the fork changes first, recorded as its next events: `ReplaceUserMessage`,
            `EditCall`, `AddMessage`, or a sequence of them applied in order.
        new_run_id: The fork's id (a new UUID by default); it must not be stored yet.
        clock: Wall-clock seconds since the epoch, for the fork's events.

    Returns:
        The fork's stored snapshot: its ``run_id``, and its ``origin`` (run and rest point).

    Raises:
        ForkError: No such run; ``at`` past its log, before its first rest point, or (without
            ``nearest``) no rest point, the message naming the nearest ones; a
            ``new_run_id`` already stored; a fork point where the run is shut down
            (final), or waits on a sub-agent's call (a fork carries no child run); an edit
            that does not fit the run at the fork point. Nothing is stored.
        TypeError: An argument of the wrong type. Nothing is stored.
        ReplayError: The origin's log cannot be replayed.
    """
    log = _stored_log(store, run_id)
    text("new_run_id", new_run_id, optional=True)
    edits = _edits(edit)
    if new_run_id is not None and store.load(new_run_id) is not None:
        raise ForkError(run_id, f"new_run_id={new_run_id!r} is a stored run already")
    checks.flag("nearest", nearest)
    point = _fork_point(store, run_id, log, at, nearest)
    start = replay(log[:point], origin=_origins(store))
    waiting = _nested_wait(start.pending, start.loop_state)
    if waiting is not None:
        raise _nested_refusal(store, run_id, log, point, waiting)
    if start.state == RunState.SHUTDOWN:
        raise ForkError(
            run_id,
            f"at seq {point} the run is shut down, which is final: a fork could take no "
            "turn; fork it at an earlier seq",
        )
    forking = _Forking(run_id, start, new_run_id or uuid.uuid4().hex, clock())
    for one in edits:
        forking.apply(one)
    snapshot = forking.snapshot()
    store.save(snapshot, forking.events, expected_version=None)
    return snapshot


def _edits(edit: object) -> tuple[object, ...]:
    if edit is None:
        return ()
    if isinstance(edit, (list, tuple)):
        return tuple(edit)
    return (edit,)
