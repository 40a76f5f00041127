"""What each transition does to the run's data (the "effect" column of docs/contract.md), as data.

A `Postcondition` says, for the rows of one event (from some sources, in some
circumstances), what value each data field has after the transition; every field it does
not name keeps its value (the frame condition). The machines' effect functions
(`agentfsm.fsm.effects`) implement these; the verifier checks them after every transition
it explores. `COUPLINGS` is the other half of docs/contract.md §2: which event of one machine
the Agent sends right after an event of the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from agentfsm._compat import StrEnum
from agentfsm.states.json import JSONValue
from agentfsm.states.names import (
    CompletedReason,
    FailedReason,
    LoopEvent,
    LoopState,
    MachineName,
    RunEvent,
    RunState,
)


class ExpectKind(StrEnum):
    """How a field's value after a transition is computed."""

    VALUE = "value"
    """Exactly `Expect.value`."""
    ARGUMENT = "argument"
    """The event's argument `Expect.argument` (a list read as a tuple; None when absent)."""
    INCREMENT = "increment"
    """The value before, plus `Expect.value`."""
    APPEND_ARGUMENT = "append_argument"
    """The tuple before, with the argument `Expect.argument` appended."""
    TAIL = "tail"
    """The tuple before without its first item."""
    SOURCE = "source"
    """The transition's source state."""


@dataclass(frozen=True, slots=True)
class Expect:
    """A field's value after a transition."""

    kind: ExpectKind
    """How it is computed."""
    value: JSONValue = None
    """The value (`VALUE`) or the increment (`INCREMENT`)."""
    argument: str | None = None
    """The event argument it comes from (`ARGUMENT`, `APPEND_ARGUMENT`)."""


def value(v: JSONValue) -> Expect:
    """The field is ``v`` after the transition."""
    return Expect(ExpectKind.VALUE, v)


def argument(name: str) -> Expect:
    """The field is the event's argument ``name`` after the transition."""
    return Expect(ExpectKind.ARGUMENT, argument=name)


_NOTHING: Mapping[str, JSONValue] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Postcondition:
    """What the rows of ``event`` from ``sources`` set, when ``when`` held before them."""

    event: str
    """The event's name."""
    sources: tuple[str, ...]
    """The source states of the rows it applies to."""
    sets: Mapping[str, Expect]
    """Field → its value after the transition. Fields not named keep their value."""
    when: Mapping[str, JSONValue] = field(default_factory=lambda: _NOTHING)
    """Field → value: it applies only when the data had these values before."""
    when_arguments: Mapping[str, JSONValue] = field(default_factory=lambda: _NOTHING)
    """Argument → value: it applies only when the event carried these arguments."""
    target: str | None = None
    """The target of the rows it applies to (None: every target)."""


def _post(
    event: str,
    sources: tuple[str, ...],
    sets: Mapping[str, Expect],
    *,
    when: Mapping[str, JSONValue] | None = None,
    when_arguments: Mapping[str, JSONValue] | None = None,
    target: str | None = None,
) -> Postcondition:
    return Postcondition(
        event,
        sources,
        MappingProxyType(dict(sets)),
        MappingProxyType(dict(when or {})),
        MappingProxyType(dict(when_arguments or {})),
        target,
    )


_R, _E, _L, _LE = RunState, RunEvent, LoopState, LoopEvent
_STARTS_A_TURN = (_R.READY, _R.COMPLETED, _R.FAILED)
_WAITS = (_R.REQUIRES_ACTION, _R.INPUT_REQUIRED)
_NO_WAIT = {"pending": value([]), "question": value(None), "deadline": value(None)}
_PAUSABLE = (_R.READY, _R.BUSY, *_WAITS, _R.COMPLETED, _R.FAILED)
_APPEND_TEXT = Expect(ExpectKind.APPEND_ARGUMENT, argument="text")

RUN_EFFECTS: tuple[Postcondition, ...] = (
    _post(
        _E.SUBMIT,
        _STARTS_A_TURN,
        {
            "turn": Expect(ExpectKind.INCREMENT, 1),
            "iteration": value(0),
            "loop_state": value(None),
            "reason": value(None),
            "cancel_requested": value(False),
            "invalid_outputs": value(0),
            **_NO_WAIT,
        },
    ),
    _post(
        _E.SUBMIT,
        _STARTS_A_TURN,
        {"queued": Expect(ExpectKind.TAIL)},
        when_arguments={"from_queue": True},
    ),
    _post(_E.SUBMIT, (_R.BUSY,), {"queued": _APPEND_TEXT}, when={"input_policy": "queue"}),
    _post(
        _E.SUBMIT,
        (_R.BUSY,),
        {"queued": _APPEND_TEXT, "cancel_requested": value(True)},
        when={"input_policy": "interrupt"},
    ),
    _post(
        _E.NEED_ACTION,
        (_R.BUSY,),
        {"pending": argument("calls"), "deadline": argument("deadline")},
    ),
    _post(
        _E.NEED_INPUT,
        (_R.BUSY,),
        {
            "pending": argument("calls"),
            "deadline": argument("deadline"),
            "question": argument("question"),
        },
    ),
    _post(
        _E.COMPLETE,
        (_R.BUSY,),
        {"reason": value(CompletedReason.ANSWERED.value)},
        when={"loop_state": _L.ANSWERED.value},
    ),
    _post(
        _E.COMPLETE,
        (_R.BUSY,),
        {"reason": value(CompletedReason.MAX_ITERATIONS.value)},
        when={"loop_state": _L.EXHAUSTED.value},
    ),
    _post(_E.FAIL, (_R.BUSY,), {"reason": value(FailedReason.ERROR.value)}),
    _post(
        _E.FAIL,
        (_R.BUSY,),
        {"reason": value(FailedReason.OUTPUT_INVALID.value)},
        when={"loop_state": _L.REJECTED.value},
    ),
    _post(
        _E.CANCEL,
        (_R.BUSY, *_WAITS),
        {
            "reason": value(FailedReason.CANCELLED.value),
            "cancel_requested": value(False),
            **_NO_WAIT,
        },
    ),
    _post(_E.EXPIRE, _WAITS, {"reason": value(FailedReason.EXPIRED.value), **_NO_WAIT}),
    _post(_E.PAUSE, _PAUSABLE, {"paused_from": Expect(ExpectKind.SOURCE)}),
    _post(_E.RESUME, (_R.PAUSED,), {"paused_from": value(None)}),
)
"""RunLifecycle's effects on the data (docs/contract.md §1). ``start``, ``resolve_action``,
``provide_input`` and ``shutdown`` change no field of the machines' data (their effects are on
the conversation and the stores, which the Agent owns); nor does anything not listed here."""

LOOP_EFFECTS: tuple[Postcondition, ...] = (
    _post(_LE.RESOLVED, (_L.AWAITING_ACTION, _L.AWAITING_INPUT), _NO_WAIT),
    _post(
        _LE.TOOLS_FINISHED,
        (_L.ACTING,),
        {"iteration": Expect(ExpectKind.INCREMENT, 1)},
        target=_L.THINKING,
    ),
    _post(
        _LE.OUTPUT_INVALID,
        (_L.VALIDATING,),
        {"invalid_outputs": Expect(ExpectKind.INCREMENT, 1)},
    ),
    _post(
        _LE.OUTPUT_INVALID,
        (_L.VALIDATING,),
        {"iteration": Expect(ExpectKind.INCREMENT, 1)},
        target=_L.THINKING,
    ),
)
"""TurnLoop's effects (docs/contract.md §2): deciding every pending call clears the wait, and
entering ``thinking`` starts an iteration. ``tools_finished`` at the cap goes to
``exhausted`` instead, which changes nothing. Each ``output_invalid`` counts an invalid answer
(and one sent back to the model starts an iteration)."""


@dataclass(frozen=True, slots=True)
class Coupling:
    """The Agent sends ``then`` to the other machine right after ``event`` reaches ``target``."""

    machine: MachineName
    """The machine ``event`` is sent to."""
    event: str
    """The leading event."""
    target: str
    """The state it must reach for ``then`` to follow."""
    then: str
    """The event sent to the other machine at once after it."""


_RUN, _LOOP = MachineName.RUN, MachineName.LOOP
COUPLINGS: tuple[Coupling, ...] = (
    Coupling(_LOOP, _LE.MODEL_REPLIED, _L.AWAITING_ACTION, _E.NEED_ACTION),
    Coupling(_LOOP, _LE.MODEL_REPLIED, _L.AWAITING_INPUT, _E.NEED_INPUT),
    Coupling(_LOOP, _LE.INPUT_REQUESTED, _L.AWAITING_INPUT, _E.NEED_INPUT),
    Coupling(_LOOP, _LE.CHILD_ASKED, _L.AWAITING_ACTION, _E.NEED_ACTION),
    Coupling(_LOOP, _LE.CHILD_ASKED, _L.AWAITING_INPUT, _E.NEED_INPUT),
    Coupling(_LOOP, _LE.MODEL_REPLIED, _L.ANSWERED, _E.COMPLETE),
    Coupling(_LOOP, _LE.TOOLS_FINISHED, _L.EXHAUSTED, _E.COMPLETE),
    Coupling(_LOOP, _LE.MODEL_FAILED, _L.ERRORED, _E.FAIL),
    Coupling(_LOOP, _LE.ABORT, _L.ABORTED, _E.FAIL),
    Coupling(_LOOP, _LE.OUTPUT_VALID, _L.ANSWERED, _E.COMPLETE),
    Coupling(_LOOP, _LE.OUTPUT_INVALID, _L.REJECTED, _E.FAIL),
    Coupling(_RUN, _E.RESOLVE_ACTION, _R.BUSY, _LE.RESOLVED),
    Coupling(_RUN, _E.PROVIDE_INPUT, _R.BUSY, _LE.RESOLVED),
    Coupling(_RUN, _E.CANCEL, _R.FAILED, _LE.ABORT),
    Coupling(_RUN, _E.EXPIRE, _R.FAILED, _LE.ABORT),
    Coupling(_RUN, _E.SHUTDOWN, _R.SHUTDOWN, _LE.ABORT),
)
"""How the loop and the run move together (docs/contract.md §2): ``answered`` and ``exhausted``
(also after ``output_valid``) → run ``complete``; ``awaiting_action`` → ``need_action``;
``awaiting_input`` → ``need_input`` (also after ``input_requested``); ``errored`` and
``rejected`` → run ``fail``; run ``resolve_action`` / ``provide_input`` → loop ``resolved``; a
child's wait (``child_asked``) → ``need_action`` / ``need_input``; run ``cancel``, ``expire``,
``shutdown`` (of an unfinished turn) → loop ``abort``; a failing hook: loop ``abort`` → run
``fail``."""

FOLLOW_UPS: frozenset[str] = frozenset(
    {_E.NEED_ACTION, _E.NEED_INPUT, _E.COMPLETE, _E.FAIL, _LE.RESOLVED}
)
"""Events the Agent sends only right after the other machine's event of `COUPLINGS`."""
