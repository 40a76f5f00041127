"""How the `ToolSystem` answers one call: straight through, or each check in turn.

The usual call (a registered, enabled, allowed tool with a plain body) is answered by
`CallAnswers._answer` in one function; any other by `_checked`, step by step: enabled →
registered → permitted → arguments → body (or the application's output, or a delegate).
A differential property test (tests/tools/test_straight_path.py) pins the two equal.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from agentfsm.errors import (
    ToolArgumentsError,
    ToolCallError,
    ToolDeniedError,
    ToolDisabledError,
    ToolOutputError,
    ToolTimeoutError,
    UnknownToolError,
)
from agentfsm.states.content import ContentPart
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import Message, ToolCall
from agentfsm.tools.arguments import ArgumentLimits
from agentfsm.tools.content import ToolContent, ToolReply
from agentfsm.tools.context import ToolContext
from agentfsm.tools.execution import (
    PLAIN_VALUES,
    TRIED_ATTRIBUTE,
    Attempted,
    RetrySettings,
    settled,
    start,
)
from agentfsm.tools.policy import Decision, ToolPolicy, refusal
from agentfsm.tools.registry import AnyTool, ToolRegistry
from agentfsm.tools.results import (
    ObservationType,
    ToolErrorInfo,
    ToolObservation,
    ToolResult,
    ToolStatus,
    failure_content,
    json_output,
    tool_result,
)
from agentfsm.tools.sources import InputRequest
from agentfsm.tools.spec import Tool

Delegate = Callable[[ToolCall, dict[str, object]], Awaitable[Attempted | None]]
"""Runs an admitted call instead of its body (a sub-agent): given the call and its parsed
arguments, it returns what the call produced, or None to stop the round at this call,
unanswered (the call waits for something outside the round: it runs again on resume)."""

_Answered = tuple[ToolResult, str | ToolReply] | InputRequest | None
"""A call's answer: its result and tool-message text (a `ToolReply` when its body returned a
`ToolContent`); or what its tool asked the user; or None, when its delegate stopped the
round at it."""
_Answer = _Answered | Awaitable[_Answered]
"""A call's answer, or an awaitable of it."""

_REFUSALS: dict[type[ToolCallError], ToolStatus] = {
    UnknownToolError: ToolStatus.NOT_FOUND,
    ToolDisabledError: ToolStatus.DISABLED,
    ToolDeniedError: ToolStatus.DENIED,
    ToolArgumentsError: ToolStatus.INVALID_ARGUMENTS,
}

_ALLOW, _SUCCESS = ToolPolicy.ALLOW, ToolStatus.SUCCESS
"""The members the usual call compares with and records, read once (a member read costs a
lookup in Python 3.11)."""

NO_DECISIONS: Mapping[str, Decision] = MappingProxyType({})
"""A round's decisions when it has none (shared: compared by identity)."""


class Round(NamedTuple):
    """The inputs of one round, shared by its calls (a named tuple: cheap to build)."""

    context: ToolContext
    decisions: Mapping[str, Decision]
    enabled: frozenset[str] | None
    hooked: bool
    """Whether any per-call hook has handlers (if not, the loop skips them entirely)."""
    on_start: Callable[[ToolCall], Awaitable[None] | None] | None = None
    """Told of each body about to run (awaited if it returns an awaitable)."""
    resumes: Mapping[str, JSONObject] | None = None
    """The `ToolContext.resume` of the calls retried with the user's answer, by call id."""
    delegates: Mapping[str, Delegate] | None = None
    """Tool name → what runs its admitted calls instead of its body."""
    on_input: Callable[[ToolCall, InputRequest], None] | None = None
    """Told of a call whose tool asked the user (the round stops there)."""
    on_show: Callable[[ToolCall, tuple[ContentPart, ...]], None] | None = None
    """Told of the content a call's tool meant for the user only, before its answer."""


class CallAnswers:
    """The `ToolSystem`'s answering of one call (a base class: it holds no state of its own)."""

    __slots__ = ()

    registry: ToolRegistry
    _limits: ArgumentLimits
    _observer: Callable[[ToolObservation], object] | None
    _retry: RetrySettings
    _timer: Callable[[], float]
    _clock: Callable[[], float]

    _straight = True
    """Whether the usual call and round take the straight-line path; a test turns it off
    to pin the two paths equal."""

    def _available(self, round_: Round) -> tuple[str, ...]:
        """The tools the round may call, by name (for the message of a refusal)."""
        allowed = round_.enabled
        return tuple(n for n in self.registry.names if allowed is None or n in allowed)

    def _answer(
        self, index: int, call: ToolCall, fields: dict[str, Any], round_: Round
    ) -> _Answer:
        """A call's answer, at once when it comes at once, else an awaitable of it.

        ``fields`` is the call's ``__dict__`` (its fields, read by the caller, which needs
        them too: a pydantic model's attribute costs several dict items).

        The usual call (a registered, enabled, allowed server-side tool with a plain sync or
        async body and no context, no decision, no delegate, no observer; arguments `plain`
        takes) goes straight through here: arguments, start, body, result. Any other goes
        through `_checked`, each step in turn; both give the same answer (a differential
        property test pins them equal).
        """
        started = self._timer()
        name = fields["name"]
        found = self.registry._table.tools.get(name)  # (`find`, inlined)
        if (
            found is None
            or type(found) is not Tool  # (a subclass may answer otherwise: Temporal's does)
            or found._plain_parser is None
            or found.function is None
            or found.timeout is not None
            or found.client_side
            or found.policy is not _ALLOW
            or (found.idempotent and found.retry_on)
            or (round_.enabled is not None and name not in round_.enabled)
            or (round_.decisions is not NO_DECISIONS and fields["id"] in round_.decisions)
            or (round_.delegates is not None and name in round_.delegates)
            or self._observer is not None
            or not self._straight
        ):
            return self._checked(index, call, round_, started)
        kwargs = found._plain_parser.plain(fields["arguments"], self._limits)
        if kwargs is None:
            try:
                kwargs = found._plain_parser.parse(call.id, call.arguments, self._limits)
            except ToolArgumentsError as refused:
                return self._failed(call, refused, ToolStatus.INVALID_ARGUMENTS, started, 0)
        if round_.on_start is not None:
            starting = round_.on_start(call)
            if starting is not None:
                running = self._run_started(starting, index, call, round_, found, kwargs)
                return self._ran(running, call, started)
        try:
            value = found.function(**kwargs)
        except Exception as exc:  # the body's failure: data for the model, not a crash
            ran = Attempted(None, exc, getattr(exc, TRIED_ATTRIBUTE, 1))
            return self._answered(call, ran, started)
        if type(value) is str:  # (`_answered`'s usual case, inlined)
            duration = self._timer() - started
            result = tool_result(fields["id"], name, _SUCCESS, value, None, duration, 1)
            return result, value
        if type(value) not in PLAIN_VALUES and inspect.isawaitable(value):
            return self._ran(settled(value), call, started)
        return self._answered(call, Attempted(value, None, 1), started)

    def _checked(self, index: int, call: ToolCall, round_: Round, started: float) -> _Answer:
        """`_answer` for any call: each check in turn, then the body, a delegate or a refusal."""
        try:
            found, kwargs = self._admit(call, round_)
        except ToolCallError as refused:
            return self._failed(call, refused, _REFUSALS[type(refused)], started, 0)
        if found.client_side:
            decision = round_.decisions[call.id]  # an output decision: `refusal` checked it
            return self._answered(call, Attempted(decision.value, None, 0), started)
        delegate = None if round_.delegates is None else round_.delegates.get(call.name)
        if delegate is not None:
            return self._delegated(delegate, call, kwargs, started)
        ran = self._run_body(index, call, round_, found, kwargs)
        if type(ran) is not Attempted:
            return self._ran(ran, call, started)  # type: ignore[arg-type]  # an awaitable
        value = ran.value
        if type(value) is str and ran.error is None:  # (`_answered`'s usual case, inlined)
            duration = self._timer() - started
            return (
                tool_result(
                    call.id, call.name, ToolStatus.SUCCESS, value, None, duration, ran.attempts
                ),
                value,
            )
        return self._answered(call, ran, started)

    async def _delegated(
        self, delegate: Delegate, call: ToolCall, kwargs: dict[str, object], started: float
    ) -> _Answered:
        """The answer of a call its delegate runs (None: the round stops at it)."""
        delegated = await delegate(call, kwargs)
        return None if delegated is None else self._answered(call, delegated, started)

    async def _ran(
        self, running: Awaitable[Attempted], call: ToolCall, started: float
    ) -> _Answered:
        """The answer of a call whose body's outcome must be awaited."""
        return self._answered(call, await running, started)

    def _answered(
        self, call: ToolCall, attempted: Attempted, started: float
    ) -> tuple[ToolResult, str | ToolReply] | InputRequest:
        """A call's answer from what its body (or the application, or a delegate) produced."""
        if attempted.error is not None:
            status = _execution_status(attempted.error, call)
            return self._failed(call, attempted.error, status, started, attempted.attempts)
        value = attempted.value
        output: JSONValue
        if type(value) is str:  # (`json_output`'s first case, inlined: the usual output)
            output = text = value
        elif isinstance(value, InputRequest):
            return value
        elif isinstance(value, ToolContent):
            return self._content(call, value, attempted, started)
        else:
            try:
                output, text = json_output(value)
            except (TypeError, ValueError, RecursionError) as exc:
                bad = ToolOutputError(call.name, call.id, type(value).__name__, str(exc))
                return self._failed(call, bad, ToolStatus.ERROR, started, attempted.attempts)
        duration = self._timer() - started
        result = tool_result(
            call.id, call.name, ToolStatus.SUCCESS, output, None, duration, attempted.attempts
        )
        return result, text

    def _content(
        self, call: ToolCall, content: ToolContent, attempted: Attempted, started: float
    ) -> tuple[ToolResult, str | ToolReply]:
        """The answer of a body that returned media or content for the user only."""
        try:
            output, text = json_output(content.value)
        except (TypeError, ValueError, RecursionError) as exc:
            kind = type(content.value).__name__
            bad = ToolOutputError(call.name, call.id, kind, str(exc))
            return self._failed(call, bad, ToolStatus.ERROR, started, attempted.attempts)
        duration = self._timer() - started
        result = tool_result(
            call.id, call.name, ToolStatus.SUCCESS, output, None, duration, attempted.attempts
        )
        text = "" if content.value is None else text
        return result, ToolReply(text, content.parts, content.for_user)

    def _run_body(
        self, index: int, call: ToolCall, round_: Round, found: AnyTool, kwargs: dict[str, object]
    ) -> Attempted | Awaitable[Attempted]:
        """Run an admitted call's body (its start told first), with its retries.

        When ``on_start`` has nothing to await, this is `start`'s outcome itself: a plain
        body's `Attempted` at once, or `execute`'s coroutine (no coroutine of its own wraps
        it).
        """
        if found.context_parameter is not None:
            resume = None if round_.resumes is None else round_.resumes.get(call.id)
            kwargs[found.context_parameter] = round_.context.for_call(call.id, resume)
        if round_.on_start is not None:
            starting = round_.on_start(call)
            if starting is not None:
                return self._run_started(starting, index, call, round_, found, kwargs)
        if self._observer is not None:
            self._observe(ObservationType.STARTED, round_, index, call, None)
        return start(found, kwargs, call.id, self._retry)

    async def _run_started(
        self,
        starting: Awaitable[None],
        index: int,
        call: ToolCall,
        round_: Round,
        found: AnyTool,
        kwargs: dict[str, object],
    ) -> Attempted:
        """`_run_body` once ``on_start`` has finished (if it raises, the body does not run)."""
        await starting
        if self._observer is not None:
            self._observe(ObservationType.STARTED, round_, index, call, None)
        ran = start(found, kwargs, call.id, self._retry)
        return ran if isinstance(ran, Attempted) else await ran

    def _admit(self, call: ToolCall, round_: Round) -> tuple[AnyTool, dict[str, object]]:
        if round_.enabled is not None and call.name not in round_.enabled:
            raise ToolDisabledError(call.name, call.id, self._available(round_))
        found = self.registry.find(call.name)
        if found is None:
            raise UnknownToolError(call.name, self._available(round_), call_id=call.id)
        decisions = round_.decisions
        decision = None if decisions is NO_DECISIONS else decisions.get(call.id)
        # (An allowed server-side tool with no decision always passes: the usual case.)
        if decision is not None or found.client_side or found.policy is not ToolPolicy.ALLOW:
            kwargs = None
            if decision is None and found.policy is not ToolPolicy.DENY:
                # Nobody was asked (a call that cannot validate is not asked about): its
                # arguments are judged first, so that the model learns what to fix.
                kwargs = found.arguments.parse(call.id, call.arguments, self._limits)
            reason = refusal(found.policy, found.client_side, decision)
            if reason is not None:
                raise ToolDeniedError(call.name, call.id, reason)
            if kwargs is not None:
                return found, kwargs
        return found, found.arguments.parse(call.id, call.arguments, self._limits)

    def _unanswerable(self, call: ToolCall, asked: InputRequest) -> tuple[ToolResult, str]:
        """A call whose tool asked the user, in a round nobody can answer it in."""
        info = ToolErrorInfo(
            type="InputRequired",
            message=f"the tool asked the user {asked.question!r}, and this round has no way "
            "to ask: run it in an Agent (which waits in input_required) to answer it",
        )
        result = ToolResult.model_construct(
            call_id=call.id,
            tool_name=call.name,
            status=ToolStatus.ERROR,
            output=None,
            error=info,
            duration=0.0,
            attempts=1,
        )
        return result, failure_content(ToolStatus.ERROR, info)

    def _failed(
        self, call: ToolCall, error: Exception, status: ToolStatus, started: float, attempts: int
    ) -> tuple[ToolResult, str]:
        info = ToolErrorInfo(type=type(error).__name__, message=str(error))
        duration = self._timer() - started
        result = tool_result(call.id, call.name, status, None, info, duration, attempts)
        return result, failure_content(status, info)

    def _observe(
        self,
        kind: ObservationType,
        round_: Round,
        index: int,
        call: ToolCall,
        result: ToolResult | None,
    ) -> None:
        if self._observer is None:
            return
        context = round_.context
        self._observer(
            ToolObservation.model_construct(
                type=kind,
                run_id=context.run_id,
                turn=context.turn,
                iteration=context.iteration,
                index=index,
                call_id=call.id,
                tool_name=call.name,
                at=self._clock(),
                result=result,
            )
        )

    def _waits_or(
        self,
        call: ToolCall,
        answer: tuple[ToolResult, str | ToolReply] | InputRequest | None,
        on_input: Callable[[ToolCall, InputRequest], None] | None,
    ) -> tuple[ToolResult, str | ToolReply] | None:
        """A call's answer, or None if it waits.

        It waits when its tool asked the user and ``on_input`` took the question, or when its
        delegate (a sub-agent) stopped the round.
        """
        if answer is None or not isinstance(answer, InputRequest):
            return answer
        if on_input is None:
            return self._unanswerable(call, answer)
        on_input(call, answer)
        return None


def replied(call: ToolCall, reply: ToolReply, round_: Round) -> Message:
    """The tool message of a call answered with a `ToolReply`; its user content told first."""
    if reply.for_user and round_.on_show is not None:
        round_.on_show(call, reply.for_user)
    return reply.message(call.id, call.name)


def outcome(answer: _Answer) -> Awaitable[_Answered]:
    """``answer`` as an awaitable: itself when it is one, else one that gives it at once."""
    if answer is None or isinstance(answer, (tuple, InputRequest)):
        return _given(answer)
    return answer


async def _given(answer: _Answered) -> _Answered:
    return answer


def _execution_status(error: Exception, call: ToolCall) -> ToolStatus:
    # Only the timeout the executor raised for this very call is a ``timeout``; whatever
    # the body raised itself (even a ToolTimeoutError of its own) is an ``error``.
    if isinstance(error, ToolTimeoutError) and error.call_id == call.id:
        return ToolStatus.TIMEOUT
    return ToolStatus.ERROR
