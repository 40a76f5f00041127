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
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from operator import attrgetter
from types import MappingProxyType

from tenacity import wait_random_exponential
from tenacity.wait import WaitBaseT

from agentfsm.errors import (
    ToolRoundError,
)
from agentfsm.states.content import ContentPart
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message, ToolCall, tool_message
from agentfsm.tools import checks
from agentfsm.tools.answers import NO_DECISIONS, CallAnswers, Round, outcome, replied
from agentfsm.tools.answers import Delegate as Delegate  # (re-exported: the Agent's)
from agentfsm.tools.arguments import ArgumentLimits
from agentfsm.tools.context import ToolContext
from agentfsm.tools.execution import (
    RetrySettings,
    Sleep,
)
from agentfsm.tools.hooks import HookContext, HookKind, Hooks
from agentfsm.tools.policy import Decision, ToolPolicy
from agentfsm.tools.registry import AnyTool, ToolRegistry
from agentfsm.tools.results import (
    ErrorDetails,
    ObservationType,
    RoundResult,
    ToolObservation,
    ToolResult,
    ToolStatus,
    round_result,
)
from agentfsm.tools.sources import InputRequest

Observer = Callable[[ToolObservation], object]
"""Told of each observation as it happens; its return value is ignored and its exceptions
propagate (like an event listener's)."""
Answer = tuple[ToolResult, Message]
"""A call's result and its tool message."""
Timer = Callable[[], float]
"""A monotonic clock in seconds, for durations (`time.perf_counter` by default)."""

Clock = Callable[[], float]
"""Wall-clock seconds since the Unix epoch, for observations (`time.time` by default)."""


_DEFAULT_WAIT = wait_random_exponential(multiplier=0.1, max=5.0)
"""Exponential backoff with jitter between an idempotent call's tries (stateless: shared)."""
_DEFAULT_LIMITS = ArgumentLimits()
"""The default bounds on arguments (frozen: shared)."""
_DEFAULT_RETRY = RetrySettings(
    max_attempts=3, wait=_DEFAULT_WAIT, sleep=asyncio.sleep, cancel_grace=0.1
)
"""The default retry settings (frozen: shared by every `ToolSystem` built with them)."""

_PER_CALL_HOOKS = (HookKind.BEFORE_EACH_TOOL, HookKind.AFTER_EACH_TOOL, HookKind.ON_ERROR)


_new_tuple = tuple.__new__
"""``_new_tuple(Round, (...))`` is ``Round(...)`` with every field given, without the
Python-level ``__new__`` of a named tuple (a test pins the two equal)."""

_ID = attrgetter("id")
"""A call's id."""
_REQUIRE_APPROVAL = ToolPolicy.REQUIRE_APPROVAL  # (read once: a member read costs a lookup)

_NO_ANSWERS: Mapping[str, Answer] = MappingProxyType({})


class ToolSystem(CallAnswers):
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

    @classmethod
    def _with_defaults(
        cls, registry: ToolRegistry, hooks: Hooks, timer: Timer, clock: Clock
    ) -> ToolSystem:
        """``ToolSystem(registry, hooks=hooks, timer=timer, clock=clock)``, unchecked.

        For the `Agent`, which builds one per run from arguments it has checked already
        (a `Hooks`, two callables): the same system, without checking them again. A test
        pins it equal to the checked construction.
        """
        system = cls.__new__(cls)
        system.registry = registry
        system._hooks = hooks
        system._observer = None
        system._limits = _DEFAULT_LIMITS
        system._retry = _DEFAULT_RETRY
        system._timer = timer
        system._clock = clock
        return system

    def openai_tools(self, enabled: Collection[str] | None = None) -> list[JSONObject]:
        """The ``tools=[...]`` for a run's model call: the enabled tools only."""
        return self.registry.openai_tools(enabled)  # (which checks ``enabled``)

    def awaiting_decision(
        self, calls: Sequence[ToolCall], enabled: Collection[str] | None = None
    ) -> tuple[str, ...]:
        """The ids of the calls that need the application before the round can run.

        Those are the calls to registered, enabled tools that are client-side or require
        approval, whose arguments validate; the others are run or refused without asking (a
        call whose arguments can never validate is refused for them, not asked about first).
        """
        if enabled is not None:  # (None, every tool, needs no check: the usual case)
            checks.enabled_names(enabled)
        pending = []
        tools = self.registry._table.tools  # (`find`, inlined: asked of every model reply)
        for call in calls:
            found = tools.get(call.name)
            if found is None or (enabled is not None and call.name not in enabled):
                continue
            if (found.client_side or found.policy is _REQUIRE_APPROVAL) and found.arguments.valid(
                call.arguments, self._limits
            ):
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
        on_show: Callable[[ToolCall, tuple[ContentPart, ...]], None] | None = None,
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
            on_show: Told of the content a call's body meant for the user only (a
                `ToolContent`'s ``for_user``), just before ``on_answer`` (an Agent records
                it as ``user_content``); without it, that content is dropped. It never
                reaches the tool message.

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
            on_show=on_show,
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
        on_show: Callable[[ToolCall, tuple[ContentPart, ...]], None] | None = None,
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
        round_: Round = _new_tuple(  # (`Round(...)` without its Python-level ``__new__``)
            Round,
            (
                context,
                decisions or NO_DECISIONS,
                None if enabled is None else frozenset(enabled),
                hooked and hooks.has_any(_PER_CALL_HOOKS),
                on_start,
                resumes,
                delegates,
                on_input,
                on_show,
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
            fields = call.__dict__  # (a dict item costs less than a pydantic attribute)
            answer = self._answer(index, call, fields, round_)
            if not isinstance(answer, tuple):  # to await, or a call that waits
                answer = self._waits_or(call, await outcome(answer), round_.on_input)
                if answer is None:  # its tool asked the user, or its sub-agent waits
                    break
            result, text = answer
            if type(text) is str:
                message = tool_message(fields["id"], text, fields["name"])
            else:  # media, or content for the user only
                message = replied(call, text, round_)  # type: ignore[arg-type]  # not a str
            new.append(message)
            results.append(result)
            told(result, message)
        return round_result(tuple(results), tuple(new))

    async def _general_round(
        self,
        round_: Round,
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
        round_: Round,
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
            answer = self._answer(index, call, call.__dict__, round_)
            if not isinstance(answer, tuple):  # to await, or a call that waits
                answer = self._waits_or(call, await outcome(answer), round_.on_input)
                if answer is None:  # its tool asked the user, or its sub-agent waits
                    return False
            result, text = answer
            if type(text) is str:
                message = tool_message(call_id, text, call.name)
            else:  # media, or content for the user only
                message = replied(call, text, round_)  # type: ignore[arg-type]  # not a str
            new.append(message)
            results.append(result)
            answered(result, message)
            if round_.hooked or self._observer is not None:
                await self._finish_call(round_, index, call, result, messages, new)
        return True

    async def _finish_call(
        self,
        round_: Round,
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

    async def _after_call(
        self, round_: Round, conversation: list[Message], call: ToolCall, result: ToolResult
    ) -> None:
        # on_error first, then after_each_tool (ConnectOnion's order): both see the call's
        # tool message, already recorded.
        if result.status is not ToolStatus.SUCCESS:
            await self._fire(HookKind.ON_ERROR, round_, conversation, call, result)
        await self._fire(HookKind.AFTER_EACH_TOOL, round_, conversation, call, result)

    async def _fire(
        self,
        kind: HookKind,
        round_: Round,
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
                deps=context.deps,
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


def _ignore(result: ToolResult, message: Message) -> None:
    """An ``on_answer`` that does nothing (for a round run without one)."""
