"""`ToolContext`: what a tool body may know about the run and the call it serves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic

from typing_extensions import TypeVar

from agentfsm import _checks
from agentfsm.states.json import JSONObject

D = TypeVar("D", default=object)
"""The type of the application's dependencies (``ToolContext[MyDeps]``; a bare
``ToolContext``'s are ``object``)."""


def call_key(run_id: str, call_id: str) -> str:
    """``"<run_id>:<call_id>"``: one tool call's key, whatever attempt or process makes it."""
    return f"{run_id}:{call_id}"


@dataclass(frozen=True, slots=True)
class ToolContext(Generic[D]):
    """The run, turn and call a tool body is executing for, and the application's objects.

    A tool receives it by declaring a parameter annotated ``ToolContext`` (any name;
    ``ToolContext[MyDeps]`` types its ``deps``); that parameter is not part of the tool's
    JSON Schema, so the model never sees or fills it. `ToolSystem.run_round` takes one
    without a ``call_id`` for the whole round and gives each body a copy bound to its call.

    Example:
        >>> ToolContext(run_id="run-1", turn=2).for_call("call-7").idempotency_key
        'run-1:call-7'

    Raises:
        TypeError: A field of the wrong kind: ids that are not str, a count that is not an
            int, ``resume`` that is not a dict.
        ValueError: A negative ``turn`` or ``iteration``.
    """

    run_id: str
    """The run the call belongs to."""
    turn: int = 0
    """The run's turn number (1 for the first user input)."""
    iteration: int = 0
    """The iteration of the turn whose model response asked for the call."""
    call_id: str = ""
    """The id of the call being executed ('' in a round's context, before it is bound)."""
    user_id: str | None = None
    """The application's user the run acts for, if it said so."""
    resume: JSONObject | None = None
    """For a call retried after its tool asked the user (it returned an `InputRequest`):
    ``{"request": <the request it returned>, "answer": <the user's text>}``; else None."""
    deps: D = None  # type: ignore[assignment]  # (None when the Agent was given none)
    """The application's dependencies (a DB session, an HTTP client, the current user…):
    the Agent's ``deps=``, or the turn's (``submit(text, deps=...)``); None if none was
    given. Never stored and never sent to the model."""

    @property
    def idempotency_key(self) -> str:
        """``"<run_id>:<call_id>"``: the same for every attempt and re-run of one call.

        Pass it to external services that deduplicate requests, so that a retried or
        resumed call has its effect at most once.
        """
        return call_key(self.run_id, self.call_id)

    def __post_init__(self) -> None:
        _checks.text("run_id", self.run_id, empty=True)
        _checks.whole("turn", self.turn, minimum=0)
        _checks.whole("iteration", self.iteration, minimum=0)
        _checks.text("call_id", self.call_id, empty=True)
        _checks.text("user_id", self.user_id, empty=True, optional=True)
        if self.resume is not None and not isinstance(self.resume, dict):
            _checks.refuse_type("resume", self.resume, "a dict (a JSON object) or None")

    def for_call(self, call_id: str, resume: JSONObject | None = None) -> ToolContext[D]:
        """This context, bound to the call ``call_id`` (retried with ``resume``, if given)."""
        # Not dataclasses.replace: this runs once per call (with a context), and is 6x faster.
        return context_of(
            self.run_id, self.turn, self.iteration, call_id, self.user_id, resume, self.deps
        )


class _Unfrozen(Generic[D]):
    """`ToolContext`'s layout without its frozen ``__setattr__``.

    `context_of` fills one of these with plain slot stores, then makes it a `ToolContext`
    (``__class__``, allowed between classes with the same slots).
    """

    __slots__ = ToolContext.__slots__
    run_id: str
    turn: int
    iteration: int
    call_id: str
    user_id: str | None
    resume: JSONObject | None
    deps: object


def context_of(
    run_id: str,
    turn: int,
    iteration: int,
    call_id: str = "",
    user_id: str | None = None,
    resume: JSONObject | None = None,
    deps: D = None,  # type: ignore[assignment]  # (None: no dependencies)
) -> ToolContext[D]:
    """``ToolContext(run_id, turn, iteration, call_id, user_id, resume, deps)``, built directly.

    A frozen dataclass's constructor sets each field through ``object.__setattr__``; this
    stores each slot of an unfrozen twin and then gives it `ToolContext`'s class (a third of
    the cost: an Agent makes one per tool round). The values are the caller's, as the
    constructor takes them (it checks nothing either); a property test pins the two equal.
    """
    context = _Unfrozen()
    context.run_id = run_id
    context.turn = turn
    context.iteration = iteration
    context.call_id = call_id
    context.user_id = user_id
    context.resume = resume
    context.deps = deps
    context.__class__ = ToolContext  # type: ignore[assignment]  # the same slots
    return context  # type: ignore[return-value]  # now a ToolContext
