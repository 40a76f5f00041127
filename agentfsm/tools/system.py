"""`ToolSystem`: runs a round of tool calls so that a body runs only when it may (I9).

For each call, in call order: enabled for the run? → registered? → permitted by policy and
decision? → arguments within limits and a JSON object? → valid against the schema? → run
(timeout, retries if idempotent) → `ToolResult` → tool message → observation. The first
check that fails answers the call with a refusal result saying why and what is allowed, and
the body does not run. A body's exception becomes an error result; a `BaseException` that
is not an `Exception` propagates.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from operator import attrgetter
from types import MappingProxyType
from typing import NamedTuple

from tenacity import wait_random_exponential
from tenacity.wait import WaitBaseT

from agentfsm.errors import (
    ToolArgumentsError,
    ToolCallError,
    ToolDeniedError,
    ToolDisabledError,
    ToolOutputError,
    ToolRoundError,
    ToolTimeoutError,
    UnknownToolError,
)
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import Message, ToolCall, tool_message
from agentfsm.tools import checks
from agentfsm.tools.arguments import ArgumentLimits
from agentfsm.tools.context import ToolContext
from agentfsm.tools.execution import (
    PLAIN_VALUES,
    TRIED_ATTRIBUTE,
    Attempted,
    RetrySettings,
    Sleep,
    settled,
    start,
)
from agentfsm.tools.hooks import HookContext, HookKind, Hooks
from agentfsm.tools.policy import Decision, ToolPolicy, refusal
from agentfsm.tools.registry import AnyTool, ToolRegistry
from agentfsm.tools.results import (
    ErrorDetails,
    ObservationType,
    RoundResult,
    ToolErrorInfo,
    ToolObservation,
    ToolResult,
    ToolStatus,
    failure_content,
    json_output,
    round_result,
    tool_result,
)
from agentfsm.tools.sources import InputRequest

Observer = Callable[[ToolObservation], object]
"""Told of each observation as it happens; its return value is ignored and its exceptions
propagate (like an event listener's)."""
Answer = tuple[ToolResult, Message]
"""A call's result and its tool message."""
Timer = Callable[[], float]
"""A monotonic clock in seconds, for durations (`time.perf_counter` by default)."""

Delegate = Callable[[ToolCall, dict[str, object]], Awaitable[Attempted | None]]
"""Runs an admitted call instead of its body (a sub-agent): given the call and its parsed
arguments, it returns what the call produced, or None to stop the round at this call,
unanswered (the call waits for something outside the round: it runs again on resume)."""
Clock = Callable[[], float]
"""Wall-clock seconds since the Unix epoch, for observations (`time.time` by default)."""

_REFUSALS: dict[type[ToolCallError], ToolStatus] = {
    UnknownToolError: ToolStatus.NOT_FOUND,
    ToolDisabledError: ToolStatus.DISABLED,
    ToolDeniedError: ToolStatus.DENIED,
    ToolArgumentsError: ToolStatus.INVALID_ARGUMENTS,
}

_DEFAULT_WAIT = wait_random_exponential(multiplier=0.1, max=5.0)
"""Exponential backoff with jitter between an idempotent call's tries (stateless: shared)."""
_DEFAULT_LIMITS = ArgumentLimits()
"""The default bounds on arguments (frozen: shared)."""
_DEFAULT_RETRY = RetrySettings(
    max_attempts=3, wait=_DEFAULT_WAIT, sleep=asyncio.sleep, cancel_grace=0.1
)
"""The default retry settings (frozen: shared by every `ToolSystem` built with them)."""

_PER_CALL_HOOKS = (HookKind.BEFORE_EACH_TOOL, HookKind.AFTER_EACH_TOOL, HookKind.ON_ERROR)

_Answered = tuple[ToolResult, str] | InputRequest | None
"""A call's answer: its result and tool-message text; or what its tool asked the user; or
None, when its delegate stopped the round at it."""
_Answer = _Answered | Awaitable[_Answered]
"""A call's answer, or an awaitable of it."""

_new_tuple = tuple.__new__
"""``_new_tuple(_Round, (...))`` is ``_Round(...)`` with every field given, without the
Python-level ``__new__`` of a named tuple (a test pins the two equal)."""

_ID = attrgetter("id")
"""A call's id."""

_NO_DECISIONS: Mapping[str, Decision] = MappingProxyType({})
_NO_ANSWERS: Mapping[str, Answer] = MappingProxyType({})


class _Round(NamedTuple):
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


class ToolSystem:
    """Runs rounds of tool calls from a registry, with hooks, an observer and injected effects.

    Args:
        tools: A `ToolRegistry` to use (shared, not copied), or tools and plain functions
            to register in a new one.
        hooks: Handlers for the tool hooks of the contract §3.
        observer: Told of each call's start (when its body is about to run) and finish.
        limits: Bounds on argument size and nesting.
        max_attempts: Tries in all for an idempotent tool's retryable failures.
        retry_wait: Tenacity's wait strategy between tries (exponential with jitter).
        sleep: How the waits between tries happen; inject a fake one in tests.
        cancel_grace: Seconds a timed-out async body gets to finish cancelling.
        timer: Monotonic clock for durations.
        clock: Wall clock for observations.
    """

    __slots__ = ("_clock", "_hooks", "_limits", "_observer", "_retry", "_timer", "registry")

    _straight = True
    """Whether the usual call takes the straight-line path (`_answer`); a test turns it off
    to pin the two paths equal."""

    def __init__(
        self,
        tools: ToolRegistry | Iterable[AnyTool | Callable[..., object]] = (),
        *,
        hooks: Hooks | None = None,
        observer: Observer | None = None,
        limits: ArgumentLimits | None = None,
        max_attempts: int = 3,
        retry_wait: WaitBaseT | None = None,
        sleep: Sleep = asyncio.sleep,
        cancel_grace: float = 0.1,
        timer: Timer = time.perf_counter,
        clock: Clock = time.time,
    ) -> None:
        checks.system_options(
            hooks,
            observer,
            limits,
            max_attempts,
            sleep,
            cancel_grace,
            {"retry_wait": retry_wait or _DEFAULT_WAIT, "timer": timer, "clock": clock},
        )
        self.registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
        """The tools this system can run."""
        self._hooks = hooks if hooks is not None else Hooks()
        self._observer = observer
        self._limits = limits if limits is not None else _DEFAULT_LIMITS
        retry = RetrySettings(
            max_attempts=max_attempts,
            wait=retry_wait if retry_wait is not None else _DEFAULT_WAIT,
            sleep=sleep,
            cancel_grace=cancel_grace,
        )
        # (the settings are frozen: every system with the defaults, one per Agent, shares them)
        self._retry = _DEFAULT_RETRY if retry == _DEFAULT_RETRY else retry
        self._timer = timer
        self._clock = clock

    def openai_tools(self, enabled: Collection[str] | None = None) -> list[JSONObject]:
        """The ``tools=[...]`` for a run's model call: the enabled tools only."""
        return self.registry.openai_tools(enabled)  # (which checks ``enabled``)

    def awaiting_decision(
        self, calls: Sequence[ToolCall], enabled: Collection[str] | None = None
    ) -> tuple[str, ...]:
        """The ids of the calls that need the application before the round can run.

        Those are the calls to registered, enabled tools that are client-side or require
        approval; the others are run or refused without asking.
        """
        if enabled is not None:  # (None, every tool, needs no check: the usual case)
            checks.enabled_names(enabled)
        pending = []
        tools = self.registry._table.tools  # (`find`, inlined: asked of every model reply)
        for call in calls:
            found = tools.get(call.name)
            if found is None or (enabled is not None and call.name not in enabled):
                continue
            if found.client_side or found.policy is ToolPolicy.REQUIRE_APPROVAL:
                pending.append(call.id)
        return tuple(pending)

    def run_round_sync(
        self,
        calls: Sequence[ToolCall],
        context: ToolContext,
        *,
        decisions: Mapping[str, Decision] | None = None,
        enabled: Collection[str] | None = None,
        messages: Sequence[Message] = (),
    ) -> RoundResult:
        """`run_round` for synchronous code: runs it in a new event loop.

        Raises:
            ToolRoundError: Called from a running event loop (await `run_round` there).
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(
                self.run_round(
                    calls, context, decisions=decisions, enabled=enabled, messages=messages
                )
            )
        raise ToolRoundError(
            "run_round_sync was called inside a running event loop; await run_round(...) "
            "there instead"
        )

    async def run_round(
        self,
        calls: Sequence[ToolCall],
        context: ToolContext,
        *,
        decisions: Mapping[str, Decision] | None = None,
        enabled: Collection[str] | None = None,
        messages: Sequence[Message] = (),
        answered: Mapping[str, Answer] | None = None,
        on_start: Callable[[ToolCall], Awaitable[None] | None] | None = None,
        on_answer: Callable[[ToolResult, Message], None] | None = None,
        stop: Callable[[], bool | Awaitable[bool]] | None = None,
        resumes: Mapping[str, JSONObject] | None = None,
        on_input: Callable[[ToolCall, InputRequest], None] | None = None,
        delegates: Mapping[str, Delegate] | None = None,
        resumed: bool = False,
    ) -> RoundResult:
        """Answer every call of one round, sequentially, in call order.

        Args:
            calls: The tool calls of one assistant message, in order.
            context: The run, turn and iteration (and user); each body gets it bound to its
                call.
            decisions: The application's decision per call id, for the calls that need
                one (see `awaiting_decision`).
            enabled: The tools enabled for the run; None for every registered tool.
            messages: The conversation so far, as hooks see it.
            answered: Calls already answered (a round resumed after a crash): their stored
                result and tool message are reused; no check, body or per-call hook runs.
            on_start: Told of each call whose body is about to run, just before it runs, and
                awaited if it returns an awaitable (an Agent with a store saves the start
                there: if it raises, the body does not run).
            on_answer: Told of each call's result and tool message as soon as it has them,
                before the next call starts (an Agent records it there; with a store, it is
                saved with its batch, before the next body runs).
            stop: Asked (and awaited, if it returns an awaitable) at each boundary between
                two calls (once a call of the round has its answer); if it says True, the
                round stops there: the calls not yet started are left unanswered and
                ``after_tools`` does not fire (an Agent takes a cancel or a pause there,
                docs/contract.md §3).
            resumes: For calls whose tool asked the user (an `InputRequest`) and that are
                now retried: their `ToolContext.resume` (the request and the answer).
            on_input: Told of a call whose body returned an `InputRequest`: the round stops
                there, that call and the ones after it unanswered, and ``after_tools`` does
                not fire (an Agent then waits in ``input_required``). Without it, such a
                call is answered with an error result saying what the tool asked.
            delegates: Tool name → a `Delegate` that runs that tool's calls once they are
                admitted (enabled, registered, permitted, arguments valid), instead of the
                body: an Agent runs its sub-agents there. A delegate that returns None stops
                the round at that call, unanswered, as ``stop`` does.
            resumed: The round ran before and stopped at a delegated call (its child
                waited): ``before_tools`` has fired for it already.

        Returns:
            One result and one tool message per call, in call order, then the messages
            that ``before_tools`` / ``after_tools`` handlers added. A round that ``stop``
            stopped has fewer results than calls. ``before_tools`` fires once per round: not
            again when it is resumed with calls ``answered``.

        Raises:
            ToolRoundError: Two calls share an id, or a decision names no call of the
                round; nothing ran.
            HookMessageError: A per-call hook handler added a message.
            HookFailedError: A hook handler raised.
        """
        calls = checks.round_inputs(calls, context, decisions, enabled, messages)
        return await self.run_checked_round(
            calls,
            context,
            decisions=decisions,
            enabled=enabled,
            messages=messages,
            answered=answered,
            on_start=on_start,
            on_answer=on_answer,
            stop=stop,
            resumes=resumes,
            on_input=on_input,
            delegates=delegates,
            resumed=resumed,
        )

    async def run_checked_round(
        self,
        calls: tuple[ToolCall, ...],
        context: ToolContext,
        *,
        decisions: Mapping[str, Decision] | None = None,
        enabled: Collection[str] | None = None,
        messages: Sequence[Message] = (),
        answered: Mapping[str, Answer] | None = None,
        on_start: Callable[[ToolCall], Awaitable[None] | None] | None = None,
        on_answer: Callable[[ToolResult, Message], None] | None = None,
        stop: Callable[[], bool | Awaitable[bool]] | None = None,
        resumes: Mapping[str, JSONObject] | None = None,
        on_input: Callable[[ToolCall, InputRequest], None] | None = None,
        delegates: Mapping[str, Delegate] | None = None,
        resumed: bool = False,
    ) -> RoundResult:
        """`run_round` for inputs of the right types, as the `Agent` passes its own.

        The types of the arguments are not checked again (walking the whole conversation
        every round would cost more than the round's bookkeeping); the round's own rules
        (unique call ids, decisions that name calls of the round) still are.

        Raises:
            ToolRoundError: As `run_round`.
            HookMessageError: As `run_round`.
            HookFailedError: As `run_round`.
        """
        _check_round(calls, decisions)
        hooks = self._hooks
        hooked = bool(hooks._handlers)  # (no handler at all: the usual case, and no call)
        round_: _Round = _new_tuple(  # (`_Round(...)` without its Python-level ``__new__``)
            _Round,
            (
                context,
                decisions or _NO_DECISIONS,
                None if enabled is None else frozenset(enabled),
                hooked and hooks.has_any(_PER_CALL_HOOKS),
                on_start,
                resumes,
                delegates,
                on_input,
            ),
        )
        known = answered or _NO_ANSWERS
        if hooked or known or self._observer is not None or not self._straight:
            return await self._general_round(
                round_, calls, known, messages, stop, on_answer, resumed
            )
        # The usual round (no hook, no observer, no call answered before): its calls in
        # order, straight through (`_general_round` answers any round alike; the
        # differential property test pins the two equal).
        results: list[ToolResult] = []
        new: list[Message] = []
        told = _ignore if on_answer is None else on_answer
        for index, call in enumerate(calls):
            if results and stop is not None:
                asked = stop()  # (awaited only if it must be: a coroutine costs)
                if asked if isinstance(asked, bool) else await asked:
                    break
            answer = self._answer(index, call, round_)
            if not isinstance(answer, tuple):  # to await, or a call that waits
                answer = self._waits_or(call, await _outcome(answer), round_.on_input)
                if answer is None:  # its tool asked the user, or its sub-agent waits
                    break
            result, text = answer
            message = tool_message(call.id, text, call.name)
            new.append(message)
            results.append(result)
            told(result, message)
        return round_result(tuple(results), tuple(new))

    async def _general_round(
        self,
        round_: _Round,
        calls: tuple[ToolCall, ...],
        known: Mapping[str, Answer],
        messages: Sequence[Message],
        stop: Callable[[], bool | Awaitable[bool]] | None,
        on_answer: Callable[[ToolResult, Message], None] | None,
        resumed: bool,
    ) -> RoundResult:
        """Any round: with its hooks, its observer, and the calls it answered before."""
        added: tuple[Message, ...] = ()
        hooks = self._hooks
        if not (known or resumed) and HookKind.BEFORE_TOOLS in hooks:
            added = await self._fire(HookKind.BEFORE_TOOLS, round_, list(messages))
        results: list[ToolResult] = []
        new: list[Message] = []  # the round's tool messages so far (after ``messages``)
        ran = self._run_calls(round_, calls, known, messages, results, new, stop, on_answer)
        if not await ran:  # stopped at a call: no after_tools
            return round_result(tuple(results), (*new, *added))
        if HookKind.AFTER_TOOLS in hooks:
            conversation = [*messages, *new, *added]
            added += await self._fire(HookKind.AFTER_TOOLS, round_, conversation)
        return round_result(tuple(results), (*new, *added))

    async def _run_calls(
        self,
        round_: _Round,
        calls: tuple[ToolCall, ...],
        known: Mapping[str, Answer],
        messages: Sequence[Message],
        results: list[ToolResult],
        new: list[Message],
        stop: Callable[[], bool | Awaitable[bool]] | None,
        on_answer: Callable[[ToolResult, Message], None] | None,
    ) -> bool:
        """Answer the calls in order, into ``results`` and ``new``: whether all were answered.

        Not all are when ``stop`` stopped the round, or a call waits (see `run_round`).
        """
        answered = _ignore if on_answer is None else on_answer
        for index, call in enumerate(calls):
            call_id = call.id
            if results and stop is not None and call_id not in known:
                asked = stop()  # (awaited only if it must be: a coroutine costs)
                if asked if isinstance(asked, bool) else await asked:
                    return False
            if call_id in known:
                result, message = known[call_id]
                new.append(message)
                results.append(result)
                continue
            if round_.hooked:
                await self._fire(HookKind.BEFORE_EACH_TOOL, round_, [*messages, *new], call)
            answer = self._answer(index, call, round_)
            if not isinstance(answer, tuple):  # to await, or a call that waits
                answer = self._waits_or(call, await _outcome(answer), round_.on_input)
                if answer is None:  # its tool asked the user, or its sub-agent waits
                    return False
            result, text = answer
            message = tool_message(call_id, text, call.name)
            new.append(message)
            results.append(result)
            answered(result, message)
            if round_.hooked or self._observer is not None:
                await self._finish_call(round_, index, call, result, messages, new)
        return True

    async def _finish_call(
        self,
        round_: _Round,
        index: int,
        call: ToolCall,
        result: ToolResult,
        messages: Sequence[Message],
        new: list[Message],
    ) -> None:
        """A call has its answer (``on_answer`` told of it): tell the observer; the hooks."""
        if self._observer is not None:
            self._observe(ObservationType.FINISHED, round_, index, call, result)
        if round_.hooked:
            await self._after_call(round_, [*messages, *new], call, result)

    def _waits_or(
        self,
        call: ToolCall,
        answer: tuple[ToolResult, str] | InputRequest | None,
        on_input: Callable[[ToolCall, InputRequest], None] | None,
    ) -> tuple[ToolResult, str] | None:
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

    async def _after_call(
        self, round_: _Round, conversation: list[Message], call: ToolCall, result: ToolResult
    ) -> None:
        # on_error first, then after_each_tool (ConnectOnion's order): both see the call's
        # tool message, already recorded.
        if result.status is not ToolStatus.SUCCESS:
            await self._fire(HookKind.ON_ERROR, round_, conversation, call, result)
        await self._fire(HookKind.AFTER_EACH_TOOL, round_, conversation, call, result)

    def _available(self, round_: _Round) -> tuple[str, ...]:
        """The tools the round may call, by name (for the message of a refusal)."""
        allowed = round_.enabled
        return tuple(n for n in self.registry.names if allowed is None or n in allowed)

    def _answer(self, index: int, call: ToolCall, round_: _Round) -> _Answer:
        """A call's answer, at once when it comes at once, else an awaitable of it.

        The usual call (a registered, enabled, allowed server-side tool with a plain sync or
        async body and no context, no decision, no delegate, no observer; arguments `plain`
        takes) goes straight through here: arguments, start, body, result. Any other goes
        through `_checked`, each step in turn; both give the same answer (a differential
        property test pins them equal).
        """
        started = self._timer()
        name = call.name  # (read once: a pydantic model's attributes cost more than locals)
        found = self.registry._table.tools.get(name)  # (`find`, inlined)
        if (
            found is None
            or found._plain_parser is None
            or found.function is None
            or found.timeout is not None
            or found.client_side
            or found.policy is not ToolPolicy.ALLOW
            or (found.idempotent and found.retry_on)
            or (round_.enabled is not None and name not in round_.enabled)
            or (round_.decisions is not _NO_DECISIONS and call.id in round_.decisions)
            or (round_.delegates is not None and name in round_.delegates)
            or self._observer is not None
            or not self._straight
        ):
            return self._checked(index, call, round_, started)
        kwargs = found._plain_parser.plain(call.arguments, self._limits)
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
            result = tool_result(call.id, name, ToolStatus.SUCCESS, value, None, duration, 1)
            return result, value
        if type(value) not in PLAIN_VALUES and inspect.isawaitable(value):
            return self._ran(settled(value), call, started)
        return self._answered(call, Attempted(value, None, 1), started)

    def _checked(self, index: int, call: ToolCall, round_: _Round, started: float) -> _Answer:
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
    ) -> tuple[ToolResult, str] | InputRequest:
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

    def _run_body(
        self, index: int, call: ToolCall, round_: _Round, found: AnyTool, kwargs: dict[str, object]
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
        round_: _Round,
        found: AnyTool,
        kwargs: dict[str, object],
    ) -> Attempted:
        """`_run_body` once ``on_start`` has finished (if it raises, the body does not run)."""
        await starting
        if self._observer is not None:
            self._observe(ObservationType.STARTED, round_, index, call, None)
        ran = start(found, kwargs, call.id, self._retry)
        return ran if isinstance(ran, Attempted) else await ran

    def _admit(self, call: ToolCall, round_: _Round) -> tuple[AnyTool, dict[str, object]]:
        if round_.enabled is not None and call.name not in round_.enabled:
            raise ToolDisabledError(call.name, call.id, self._available(round_))
        found = self.registry.find(call.name)
        if found is None:
            raise UnknownToolError(call.name, self._available(round_), call_id=call.id)
        decisions = round_.decisions
        decision = None if decisions is _NO_DECISIONS else decisions.get(call.id)
        # (An allowed server-side tool with no decision always passes: the usual case.)
        if decision is not None or found.client_side or found.policy is not ToolPolicy.ALLOW:
            reason = refusal(found.policy, found.client_side, decision)
            if reason is not None:
                raise ToolDeniedError(call.name, call.id, reason)
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
        round_: _Round,
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

    async def _fire(
        self,
        kind: HookKind,
        round_: _Round,
        conversation: list[Message],
        call: ToolCall | None = None,
        result: ToolResult | None = None,
    ) -> tuple[Message, ...]:
        if kind not in self._hooks:
            return ()
        context = round_.context
        return await self._hooks.fire(
            HookContext(
                kind,
                context.run_id,
                conversation,
                turn=context.turn,
                iteration=context.iteration,
                pending_tool=call,
                result=result,
                error=ErrorDetails.of_result(result)
                if result is not None and kind is HookKind.ON_ERROR
                else None,
            )
        )


def _check_round(calls: tuple[ToolCall, ...], decisions: Mapping[str, Decision] | None) -> None:
    """Check a round's rules: its call ids are unique, its decisions name its calls.

    Raises:
        ToolRoundError: A rule is broken (the message names the ids that break it).
    """
    ids = set(map(_ID, calls))  # (no comprehension: a call less per round)
    if len(ids) != len(calls):
        counts = Counter(call.id for call in calls)
        duplicates = tuple(sorted(i for i, count in counts.items() if count > 1))
        raise ToolRoundError("call ids must be unique within a round", duplicates)
    if decisions and not ids.issuperset(decisions):
        strays = tuple(sorted(set(decisions) - ids))
        raise ToolRoundError("decisions name calls that are not in the round", strays)


def _outcome(answer: _Answer) -> Awaitable[_Answered]:
    """``answer`` as an awaitable: itself when it is one, else one that gives it at once."""
    if answer is None or isinstance(answer, (tuple, InputRequest)):
        return _given(answer)
    return answer


def _ignore(result: ToolResult, message: Message) -> None:
    """An ``on_answer`` that does nothing (for a round run without one)."""


async def _given(answer: _Answered) -> _Answered:
    return answer


def _execution_status(error: Exception, call: ToolCall) -> ToolStatus:
    # Only the timeout the executor raised for this very call is a ``timeout``; whatever
    # the body raised itself (even a ToolTimeoutError of its own) is an ``error``.
    if isinstance(error, ToolTimeoutError) and error.call_id == call.id:
        return ToolStatus.TIMEOUT
    return ToolStatus.ERROR
