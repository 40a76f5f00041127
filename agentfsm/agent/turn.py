"""Driving a turn: model calls, tool rounds, waits, and how a turn ends.

`TurnDriver` moves TurnLoop and RunLifecycle together through one turn (docs/contract.md §2),
on top of `RunRecord`, which holds and saves what the turn changes.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, cast

from agentfsm.agent.deltas import Delta, StreamListener, takes_deltas
from agentfsm.agent.record import NO_DECISIONS, NO_INPUTS
from agentfsm.agent.typed import TypedAnswers
from agentfsm.agent.vocabulary import ASK_USER, INCOMPLETE_MESSAGE, question_of
from agentfsm.errors import AgentFSMError, ModelError
from agentfsm.fsm import AnyMachine
from agentfsm.fsm.rounds import round_messages
from agentfsm.fsm.trace import (
    LLMRetryTrace,
    ToolExecutionTrace,
    entry_of,
    packed_llm_call,
    packed_tool_entries,
    user_input_entry,
)
from agentfsm.llm.base import (
    UNUSABLE_FINISH,
    Model,
    ModelDelta,
    ModelResponse,
    RetryNotice,
    StreamingModel,
    StructuredModel,
    check_finish,
)
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import (
    Message,
    ToolCall,
    assistant_message,
    message_json,
    user_message,
)
from agentfsm.states.names import LoopState, RecordKind, RunState
from agentfsm.tools.context import context_of
from agentfsm.tools.hooks import HookContext, HookKind, Hooks
from agentfsm.tools.policy import Decision
from agentfsm.tools.registry import ToolRegistry
from agentfsm.tools.results import (
    ErrorDetails,
    RoundResult,
    ToolErrorInfo,
    ToolResult,
    ToolStatus,
    failure_content,
    result_json,
)
from agentfsm.tools.sources import InputRequest, ToolSource
from agentfsm.tools.system import Delegate

if TYPE_CHECKING:
    from agentfsm.agent.emitting import RunEmitter

OUTCOME_UNKNOWN = "ToolOutcomeUnknown"
"""The error type of the tool message a resumed run gives a non-idempotent call that had
started before a crash without its result being stored (at-most-once, I11)."""


_IN_ROUND = frozenset({LoopState.ACTING, LoopState.DELEGATING})
"""The loop states in which a turn goes on with its open round."""

# The members the hot path compares with or records, read once (a member read costs a lookup
# in Python 3.11).
_THINKING, _ACTING, _VALIDATING = LoopState.THINKING, LoopState.ACTING, LoopState.VALIDATING
_EXHAUSTED = LoopState.EXHAUSTED
_BUSY = RunState.BUSY
_BEFORE_LLM, _AFTER_LLM = HookKind.BEFORE_LLM, HookKind.AFTER_LLM
_TOOL_STARTED, _TOOL_RESULT = RecordKind.TOOL_STARTED, RecordKind.TOOL_RESULT
_ROUND_CLOSED = RecordKind.ROUND_CLOSED
_AWAITING_ACTION, _AWAITING_INPUT = LoopState.AWAITING_ACTION, LoopState.AWAITING_INPUT


_UNKNOWN = object()
"""What a reply was made of, when it is not known (see `_reply_json`)."""


def _reply_json(reply: Message, content: object, calls: tuple[ToolCall, ...]) -> JSONObject:
    """``message_json(reply)``, without reading ``reply`` when what it was made of is known.

    A ``reply`` made by ``assistant_message(content, calls)`` on that function's fast path
    is dumped from ``content`` and ``calls`` (pydantic attributes cost several dict items).
    That path keeps its arguments as they are, and it is the one taken for a tuple of exact
    `ToolCall`s and a text or None content (anything else is validated, and may be changed:
    then ``reply`` is dumped). A property test pins the two equal.
    """
    if content is _UNKNOWN or type(calls) is not tuple:
        return message_json(reply)
    if content is not None and type(content) is not str:
        return message_json(reply)
    dumped: list[JSONValue] = []
    for call in calls:  # (a loop: a comprehension costs a call)
        if type(call) is not ToolCall:
            return message_json(reply)
        dumped.append(call.__dict__.copy())  # (all text, in field order: see `message_json`)
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": dumped,
        "tool_call_id": None,
        "name": None,
    }


class TurnDriver(TypedAnswers):
    """Runs a turn from where its loop is until it ends, waits or pauses."""

    __slots__ = (
        "_asking",
        "_clock",
        "_delegates",
        "_delta_listeners",
        "_edit",
        "_error",
        "_timer",
        "action_timeout",
        "enabled_tools",
        "hooks",
        "input_timeout",
        "model",
        "user_id",
    )

    model: Model
    hooks: Hooks
    enabled_tools: frozenset[str] | None
    user_id: str | None
    action_timeout: float | None
    input_timeout: float | None
    _clock: Callable[[], float]
    _timer: Callable[[], float]
    _emitter: RunEmitter
    """(Also the model's retry listener: see `RunEmitter.__call__`.)"""
    _delta_listeners: tuple[StreamListener, ...]
    """The listeners that asked for deltas (each is among the listeners too)."""
    _error: ErrorDetails | None
    """The error that failed the last turn that failed (None if none did, here)."""
    _edit: tuple[ToolCall, ...] | None
    """The tool calls as the last ``after_llm`` handler edited them, until applied."""
    _asking: tuple[ToolCall, InputRequest] | None
    """The call of the running round whose tool asked the user, and what it asked."""
    _delegates: Mapping[str, Delegate] | None
    """The sub-agent tools' delegates, by tool name (`agentfsm.agent.children`); None when
    the run has no sub-agent tool."""

    async def _open_turn(self, text: str, *, from_queue: bool) -> None:
        """Submit an input that starts a turn; its user message is part of the transition.

        The caller then drives the turn (`_drive`): so that this frame is gone while the
        turn runs (each waiting run holds one frame less).
        """
        args: dict[str, JSONValue] = {"text": text}
        if from_queue:
            args["from_queue"] = True
        # Listed before the turn starts: a source that cannot be listed, or whose tools
        # clash, refuses the submit, and nothing changes.
        listings = await self._list_sources() if self._sources else None
        self._messages += (user_message(text),)  # in the transition's snapshot
        # Requests of an earlier turn are forgotten; those made from now on (a listener of
        # this very submit) are this turn's.
        self._cancel_requested = self._pause_requested = False
        try:
            self._run.send("submit", **args)
        except BaseException:
            if self._data.state != RunState.BUSY:  # refused (not a listener of the submit)
                self._messages = self._messages[:-1]
            raise
        self._round = ()
        if listings is not None:
            self._install(*listings)
        await self._user_input(text, defer=False)

    async def _list_sources(
        self, sources: tuple[ToolSource, ...] | None = None
    ) -> tuple[dict[str, tuple[JSONObject, ...]], ToolRegistry]:
        """List ``sources`` (all by default) and the registry their listings make.

        Raises:
            AgentFSMError: A source could not be listed, or its tools cannot be offered
                (a name clash included).
        """
        await self._commit()  # listing is an external effect
        fresh = {source.prefix: await source.listing() for source in sources or self._sources}
        return fresh, self._registry({**self._listed, **fresh})

    def _install(self, fresh: dict[str, tuple[JSONObject, ...]], registry: ToolRegistry) -> None:
        """Offer the tools of fresh listings from now on, each recorded (``tools_listed``)."""
        self._offer(registry)
        for prefix, listing in fresh.items():
            self._record_listing(prefix, listing)

    async def _relist_changed(self) -> None:
        """Between two rounds: list again the sources that announced a change.

        A source that cannot be listed now keeps its last listing (the turn goes on with it).
        """
        changed = tuple(source for source in self._sources if source.take_changed())
        if not changed:
            return
        try:
            listings = await self._list_sources(changed)
        except AgentFSMError:
            return
        self._install(*listings)

    def _loop_machine(self) -> AnyMachine:
        if self._loop is None:  # resolve_action etc. before any turn: the run refuses first
            raise AgentFSMError("no turn is running")
        return self._loop

    async def _user_input(self, text: str, *, defer: bool) -> None:
        self._record(user_input_entry(self._data.turn, text, self._clock()))
        added = await self._fire(HookKind.AFTER_USER_INPUT)
        if defer:
            self._defer(added)
        else:
            self._append(added)

    async def _fire(
        self, kind: HookKind, *extra: Message, error: ErrorDetails | None = None
    ) -> tuple[Message, ...]:
        if kind not in self.hooks:
            return ()
        context = HookContext(
            kind,
            self._data.run_id,
            [*self._messages, *extra] if extra else self._messages,
            turn=self._data.turn,
            iteration=self._data.iteration,
            error=error,
        )
        added = await self.hooks.fire(context)
        if context.compaction is not None:  # asked for by a before_llm handler
            self._compact(*context.compaction)
        self._edit = context.tool_calls  # edited by an after_llm handler
        return added

    def _edited(self, reply: Message) -> Message:
        """The reply with the tool calls an ``after_llm`` handler left it (recorded)."""
        calls, self._edit = self._edit, None
        if calls is None or calls == reply.tool_calls:
            return reply
        content = reply.content if reply.content is not None or calls else ""
        edited = Message.assistant(content, calls)
        self._note(
            RecordKind.TOOL_CALLS_EDITED,
            {"original": self._dump(reply), "edited": self._dump(edited)},
        )
        return edited

    def _compact(self, summary: Message, end: int) -> None:
        """Replace the messages after the system prompt, up to ``end``, with ``summary``."""
        start = len(self._system)
        self._messages = (*self._messages[:start], summary, *self._messages[end:])
        self._note(
            RecordKind.COMPACTED, {"start": start, "end": end, "summary": self._dump(summary)}
        )

    async def _drive(self) -> None:
        """Run the turn from where its loop is until it ends, waits or pauses."""
        self._driven = True
        data = self._data  # (its ``loop_state`` is the loop's state: read without a call)
        if self._loop_machine().state != _THINKING:
            await self._go_on()
        while data.loop_state == _THINKING:
            # (`_due`, `_stop_requested` and ``in self.hooks``, inlined: once per iteration)
            if self._undelivered or self._claim_due or self._flight is not None:
                await self._tell()
            if (
                self._cancel_requested or self._pause_requested or data.cancel_requested
            ) and self._stop_at_boundary():
                break
            if (self.hooks._handlers and _BEFORE_LLM in self.hooks) or (
                self._undelivered or self._claim_due or self._flight is not None
            ):
                await self._before_model()
            # The model call is awaited here, not in a coroutine of its own: a run waiting on
            # its model (most of a run's life) holds one frame less.
            started = self._timer()
            data.at_boundary = False
            try:
                response = await self._call_model()
                if response.finish_reason in UNUSABLE_FINISH:  # whatever the model
                    check_finish(response, self.model.name)  # (length, filter: refused)
            except ModelError as error:
                await self._model_failed(error)
                break
            await self._replied(response, started)
            # (not held while the next call is awaited: a response a model builds, with its
            # dict and its fields-set set, is some 500 bytes the run would keep for nothing)
            del response
        if data.state == _BUSY:
            await self._finish(data.loop_state)
        if self._due():
            await self._commit()
        self._apply_requests()
        await self._next_queued()

    async def _go_on(self) -> None:
        """Go on with a turn restored in a round, or between an answer and its check."""
        state = self._loop_machine().state
        if state in _IN_ROUND:
            await self._tool_round()
        elif state == _VALIDATING:
            await self._validate()

    async def _finish(self, loop_state: str | None) -> None:
        """End a turn whose loop has ended (also one a crash left between two steps)."""
        if loop_state == LoopState.ANSWERED:
            await self._complete()
        elif loop_state == LoopState.EXHAUSTED:
            final = INCOMPLETE_MESSAGE.format(n=self._data.max_iterations)
            last = self._messages[-1] if self._messages else None
            if last is None or last.role != "assistant" or last.content != final:
                self._append((Message.assistant(final),))
            await self._complete()
        elif loop_state == LoopState.REJECTED:
            self._error = self._rejection()
            self._run.send("fail", **self._error.event_data())
        elif loop_state == LoopState.ERRORED:  # a crash came between the loop's and the run's
            self._error = ErrorDetails(
                "ModelError", "the model call failed just before the process stopped"
            )
            self._run.send("fail", **self._error.event_data())

    def _stop_at_boundary(self) -> bool:
        """At a step boundary of a busy turn: take a cancel or a pause asked for meanwhile."""
        if self._cancel_requested or self._data.cancel_requested:
            self._cancel_requested = False
            self._data.at_boundary = True
            self._run.send("cancel")
            self._close_turn("cancelled")
            return True
        if self._pause_requested:
            self._pause_requested = False
            self._data.at_boundary = True
            self._run.send("pause")
            return True
        return False

    def _stop_requested(self) -> bool:
        return self._cancel_requested or self._pause_requested or self._data.cancel_requested

    def _stop_between_calls(self) -> bool | Awaitable[bool]:
        # (`_due` and `_stop_requested`, inlined: asked between every two calls of a round)
        if (self._undelivered or self._claim_due or self._flight is not None) and self._listeners:
            self._before_call()
            flight = self._flight
            if not (self._behind and flight is not None and not flight.pending.begun):
                return self._told_then_stop()
            # (writing behind a save not begun yet, `_tell` has nothing to do: no coroutine)
        return self._cancel_requested or self._pause_requested or self._data.cancel_requested

    def _before_call(self) -> None:
        """At the boundary before a round's next call: store and tell all first if it must.

        If the call's tool is not idempotent, the boundary stores (and tells) all before the
        call is started, as without write-behind.
        """
        if self._behind:
            answered = {result.call_id for result, _ in self._answers}
            call = next((c for c in self._round if c.id not in answered), None)
            if call is None or not self._idempotent(call.name):
                self._behind = False

    async def _told_then_stop(self) -> bool:
        await self._tell()
        return self._stop_requested()

    def _apply_requests(self) -> bool:
        """At the end of a step whose turn came to rest: take the requests it left.

        A pause asked for while the turn's last step ran pauses the run where the turn left
        it (completed, failed, or a wait); a cancel cancels the wait the turn entered. A
        request the run's state has no transition for is moot (the turn already ended).

        Returns:
            Whether a request was taken.
        """
        taken = False
        if self._data.state == RunState.BUSY:
            return taken
        if self._cancel_requested or self._data.cancel_requested:
            self._cancel_requested = False
            if self._run.can_send("cancel"):
                self._run.send("cancel")
                self._close_turn("cancelled")
                taken = True
        if self._pause_requested:
            self._pause_requested = False
            if self._run.can_send("pause"):
                self._run.send("pause")
                taken = True
        return taken

    async def _before_model(self) -> None:
        if HookKind.BEFORE_LLM in self.hooks:
            self._append(await self._fire(HookKind.BEFORE_LLM))
        if self._due():
            if self._behind:  # a crash during the call only repeats it: the save goes on
                self._write_behind(keep=True)
            else:
                await self._commit()  # the model call is an external effect

    async def _model_failed(self, error: ModelError) -> None:
        self._data.at_boundary = True
        self._error = ErrorDetails.of(error)
        await self._fire(HookKind.ON_ERROR, error=self._error)
        details = self._error.event_data()
        self._loop_machine().send("model_failed", **details)
        self._run.send("fail", **details)

    async def _replied(self, response: ModelResponse, started: float) -> None:
        """Take the model's reply (asked for at ``started``), then the round or check it asks."""
        self._data.at_boundary = True
        given = response.__dict__  # (a dict item costs less than a pydantic attribute)
        item = packed_llm_call(
            # (the model's name is asked only if the response does not say it)
            given["model"] or self.model.name,
            response,
            self._data.turn,
            self._data.iteration,
            self._timer() - started,
            self._clock(),
        )
        if self._tells():
            self._record(entry_of(item), item)
        else:
            self._keep((item,), None)
        content: object = _UNKNOWN  # (what the reply is made of, when that is known)
        if type(response) is ModelResponse:  # (`to_message`, inlined: a subclass may differ)
            text, calls = given["content"], given["tool_calls"]
            content = text if text is not None or calls else ""
            reply = assistant_message(content, calls)
        else:
            reply = response.to_message()
        hooked = self.hooks._handlers and _AFTER_LLM in self.hooks  # (no handler: no call)
        added = await self._fire(_AFTER_LLM, reply) if hooked else ()
        if self._edit is not None:  # (only an after_llm handler sets it)
            reply, content = self._edited(reply), _UNKNOWN
        if self._cancel_requested or self._data.cancel_requested:
            # The boundary after the model call: the reply is kept, its calls are answered
            # "cancelled" and none runs, and the turn is cancelled even if it was the answer.
            self._round = reply.tool_calls
            self._append((reply,))
            self._defer(added)
            self._stop_at_boundary()
            return
        calls = reply.tool_calls  # (read once: a pydantic model's attributes cost more)
        self._classify(reply, calls, content)
        if added:  # (what after_llm handlers added: held back while a round is open)
            if calls:
                self._defer(added)
            else:
                self._append(added)
        state = self._data.loop_state  # (the loop's state, read without a call)
        if state == _ACTING:
            await self._tool_round()
        elif state == _VALIDATING:  # (only a typed run's answer)
            await self._validate()

    def _call_model(self) -> Awaitable[ModelResponse]:
        messages = self._messages  # a tuple: the model cannot change the history (I10)
        tools = self.tools.registry.offered_tools(self.enabled_tools)  # shared, not copied
        if self._response_format is not None:  # a typed run, on a model with structured output
            return self._call_structured(messages, tools)
        if self._delta_listeners and takes_deltas(self.model):
            model = cast("StreamingModel", self.model)
            on_delta = self._on_delta
            return model.complete(messages, tools, on_retry=self._emitter, on_delta=on_delta)
        return self.model.complete(messages, tools, on_retry=self._emitter)

    def _call_structured(
        self, messages: tuple[Message, ...], tools: tuple[JSONObject, ...]
    ) -> Awaitable[ModelResponse]:
        model = cast("StructuredModel", self.model)
        on_delta = self._on_delta if self._delta_listeners and takes_deltas(model) else None
        if on_delta is None:
            return model.complete(
                messages, tools, on_retry=self._emitter, response_format=self._response_format
            )
        return model.complete(
            messages,
            tools,
            on_retry=self._emitter,
            on_delta=on_delta,
            response_format=self._response_format,
        )

    def _on_delta(self, delta: ModelDelta) -> None:
        """Tell the listeners that asked for them of a piece of the model's answer."""
        data = self._data
        item = Delta.of(data.run_id, data.turn, data.iteration, delta)
        for listener in self._delta_listeners:  # (replaced, never changed in place)
            listener(item)

    def _classify(
        self, reply: Message, calls: tuple[ToolCall, ...], content: object = _UNKNOWN
    ) -> None:
        """Append the reply and send model_replied with the round's shape (and the reply).

        ``calls`` are the reply's tool calls; ``content`` the content ``reply`` was made
        from by ``assistant_message(content, calls)``, or `_UNKNOWN`.
        """
        waiting = self.tools.awaiting_decision(calls, self.enabled_tools) if calls else ()
        asking: Sequence[ToolCall] = ()
        if waiting and any(c.name == ASK_USER for c in calls):
            # An ask_user call without a usable question is left to the round, which
            # answers it with an error tool message the model can correct itself from.
            malformed = {c.id for c in calls if c.name == ASK_USER and question_of(c) is None}
            waiting = tuple(call_id for call_id in waiting if call_id not in malformed)
            asking = [c for c in calls if c.name == ASK_USER and c.id in waiting]
        self._round = calls
        self._messages += (reply,)
        loop = self._loop if self._loop is not None else self._loop_machine()  # (no call)
        loop.send(
            "model_replied",
            tool_calls=self._answer_calls(calls) if self._answer_by_tool else len(calls),
            needing_action=len(waiting) - len(asking),
            asking_user=len(asking),
            # (`_dump`, inlined: once per model reply)
            message=_reply_json(reply, content, calls)
            if self.store is not None or self._listeners
            else {},
        )
        state = self._data.loop_state  # (the loop's state, read without a call)
        if state == _AWAITING_ACTION:
            self._run.send("need_action", calls=list(waiting), deadline=self._deadline(True))
        elif state == _AWAITING_INPUT:
            self._run.send(
                "need_input",
                question=question_of(asking[0]),
                calls=[call.id for call in asking],
                deadline=self._deadline(False),
            )

    def _deadline(self, action: bool) -> float | None:
        timeout = self.action_timeout if action else self.input_timeout
        return None if timeout is None else self._clock() + timeout

    async def _tool_round(self) -> None:
        if self._undelivered or self._claim_due or self._flight is not None:  # (`_due`)
            self._before_call()
            await self._tell()
        data = self._data
        if self._cancel_requested or self._pause_requested or data.cancel_requested:
            self._stop_at_boundary()  # the boundary before the round's first call
            return
        context = context_of(data.run_id, data.turn, data.iteration, "", self.user_id)
        data.at_boundary = False
        if self._started:  # (only a round resumed after a crash has calls started)
            self._settle_unknown()
        calls = self._round
        answers = self._answers
        decisions, resumed = self._decisions, False
        if self._delegates is not None:  # a round may have stopped at a sub-agent's call
            decisions, resumed = self._delegated_decisions(calls)
        round_ = await self.tools.run_checked_round(  # the run's own inputs: types known
            calls,
            context,
            decisions=decisions,
            enabled=self.enabled_tools,
            messages=self._messages,
            answered={result.call_id: (result, message) for result, message in answers}
            if answers
            else None,
            on_start=self._on_start,
            on_answer=self._on_answer,
            stop=self._stop_between_calls,
            resumes=self._resumes() if self._inputs else None,
            on_input=self._on_input,
            delegates=self._delegates,
            resumed=resumed,
        )
        results = round_.results
        if self._asking is not None or len(results) < len(calls):
            self._round_stopped(calls, round_)
            return
        # The round's tool messages, in call order, are the first of its messages (those it
        # had answered before included): no need to order the answers again.
        self._close_round(round_.messages[: len(calls)])
        if len(round_.messages) > len(calls):  # (what after_tools handlers added)
            self._append(round_.messages[len(calls) :])
        if self._deferred:  # (messages held back while the round was open)
            self._flush_deferred()
        self._trace_round(calls, results)
        loop = self._loop if self._loop is not None else self._loop_machine()  # (no call)
        loop.send("tools_finished")
        if data.loop_state == _EXHAUSTED:
            await self._finish(_EXHAUSTED)
        elif self._sources:
            await self._relist_changed()

    def _delegated_decisions(
        self, calls: tuple[ToolCall, ...]
    ) -> tuple[Mapping[str, Decision], bool]:
        """The decisions of the round's calls, and whether it resumes (sub-agent tools).

        A round of a run with sub-agent tools may have stopped at a sub-agent's call before.
        """
        ids = {call.id for call in calls}
        decisions = {key: value for key, value in self._decisions.items() if key in ids}
        resumed = len(decisions) < len(self._decisions) or (
            self._loop_machine().state == LoopState.DELEGATING
        )
        return decisions, resumed

    def _round_stopped(self, calls: tuple[ToolCall, ...], round_: RoundResult) -> None:
        """The round stopped before its last call: a call asks the user, or at a boundary."""
        if self._asking is not None:
            self._defer(round_.messages[len(round_.results) :])
            self._ask_user(*self._asking)
            return
        # Stopped at the boundary between two calls: a cancel answers the rest
        # "cancelled"; a pause keeps the round open, and the rest run on resume.
        done = len(round_.results)
        self._defer(round_.messages[done:])
        if self._data.state != RunState.BUSY:
            return  # a sub-agent's call waits for its child's wait to be answered
        if self._cancel_requested or self._data.cancel_requested:
            self._trace_round(calls[:done], round_.results)
        self._stop_at_boundary()

    def _resumes(self) -> dict[str, JSONObject] | None:
        """The `ToolContext.resume` of the open round's calls the user has answered."""
        return {c: r for c, r in self._inputs.items() if "answer" in r} or None

    def _on_input(self, call: ToolCall, asked: InputRequest) -> None:
        self._asking = (call, asked)

    def _ask_user(self, call: ToolCall, asked: InputRequest) -> None:
        """A call's tool asked the user: the round waits in input_required with the question."""
        self._asking = None
        self._started = tuple(i for i in self._started if i != call.id)
        self._data.at_boundary = not self._started
        self._inputs = {**self._inputs, call.id: {"request": asked.request}}
        question = asked.question.strip() or f"The tool {call.name!r} needs your answer."
        self._loop_machine().send(
            "input_requested", call_id=call.id, question=question, request=asked.request
        )
        self._run.send(
            "need_input", question=question, calls=[call.id], deadline=self._deadline(False)
        )

    def _trace_round(self, calls: tuple[ToolCall, ...], results: tuple[ToolResult, ...]) -> None:
        data = self._data
        told: list[ToolExecutionTrace] | None = [] if self._tells() else None
        self._keep(
            packed_tool_entries(calls, results, data.turn, data.iteration, self._clock(), told),
            told,
        )

    def _settle_unknown(self) -> None:
        """Resuming a round: a call that started with no stored answer ran, or may have.

        An idempotent tool's call runs again; any other gets an error tool message saying
        its outcome is unknown, and never runs twice (I11).
        """
        for call_id in tuple(self._started):
            call = next((c for c in self._round if c.id == call_id), None)
            found = None if call is None else self.tools.registry.find(call.name)
            if call is not None and found is not None and found.idempotent:
                self._started = tuple(i for i in self._started if i != call_id)
                continue
            name = call.name if call is not None else "unknown"
            info = ToolErrorInfo(
                type=OUTCOME_UNKNOWN,
                message="the call started before the process stopped and its outcome is "
                "unknown; it was not run again, since the tool is not idempotent",
            )
            result = ToolResult(
                call_id=call_id, tool_name=name, status=ToolStatus.ERROR, error=info
            )
            text = failure_content(ToolStatus.ERROR, info)
            self._on_answer(result, Message.tool(call_id, text, name=name))

    def _on_start(self, call: ToolCall) -> Awaitable[None] | None:
        self._data.at_boundary = False  # a body runs
        fields = call.__dict__  # (a dict item costs less than a pydantic attribute)
        call_id = fields["id"]
        self._started = (*self._started, call_id)
        self._note(_TOOL_STARTED, {"call_id": call_id, "name": fields["name"]})
        if not (self._undelivered or self._claim_due or self._flight is not None):
            return None  # (`_due`, inlined: nothing to store or tell before the body)
        if self._grouping and self._may_start_unsaved(call):
            if self._behind:
                self._write_behind()
            return None
        return self._commit()  # stored before the body runs: it never runs twice (I11)

    def _may_start_unsaved(self, call: ToolCall) -> bool:
        """Whether ``call``'s body may run before its ``tool_started`` is stored.

        Only an idempotent tool's, which a crash in its body runs again (I11), and only when
        all else is stored (with listeners, the step boundary before the call stored it), or,
        writing behind, when all that is not stored yet is replayable (`_behind`): the
        call's input, the claim of a restored run (a losing resumer runs nothing) and a
        non-idempotent call's answer are never lost to a crash in a body.
        """
        return self._idempotent(call.name) and (self._behind or self._holds_only_starts())

    def _idempotent(self, name: str) -> bool:
        """Whether the registered tool ``name`` is declared idempotent (unknown: it is not)."""
        found = self.tools.registry.find(name)
        return found is not None and found.idempotent

    def _answered_once(self, name: str) -> None:
        """A non-idempotent body has answered: stored before the next effect (no write-behind)."""
        if not self._idempotent(name):
            self._behind = False

    def _on_answer(self, result: ToolResult, message: Message) -> None:
        started = self._started
        given = result.__dict__  # (a dict item costs less than a pydantic attribute)
        call_id = given["call_id"]
        if self._behind and call_id in started:
            self._answered_once(result.tool_name)
        if started == (call_id,):  # (calls run one at a time: the usual case)
            self._started = ()
        elif call_id in started:
            self._started = tuple(i for i in started if i != call_id)
        self._answers = (*self._answers, (result, message))
        if call_id in self._inputs:
            self._inputs = {c: r for c, r in self._inputs.items() if c != call_id}
        # Between two calls of a round is a step boundary (docs/contract.md §3).
        self._data.at_boundary = not self._started
        if self.store is None and not self._listeners:  # (`_dump`, inlined: nobody reads it)
            data: JSONObject = {"result": {}, "message": {}}
        elif (
            type(result) is ToolResult
            and type(message) is Message
            and type(output := given["output"]) is str
            and given["error"] is None
        ):
            # `result_json` and `message_json`, inlined for a text output (the usual one),
            # the result's JSON copied from its fields, in their order (JSON but for its
            # status and error): the record of every call (a test pins the two equal). The
            # tool message of such a result (a text output, no error) is
            # ``tool_message(call_id, output, tool_name)``: the `ToolSystem` makes every
            # message it answers with from its result, a text output being the message's
            # text (a test pins it). So its JSON is made from the result's fields, without
            # reading the message's (a pydantic attribute costs several dict items).
            dumped = given.copy()
            dumped["status"] = str(given["status"])
            data = {
                "result": dumped,
                "message": {
                    "role": "tool",
                    "content": output,
                    "tool_calls": [],
                    "tool_call_id": call_id,
                    "name": given["tool_name"],
                },
            }
        else:
            data = {"result": result_json(result), "message": message_json(message)}
        self._note(_TOOL_RESULT, data)

    def _close_round(self, messages: tuple[Message, ...] | None = None) -> None:
        """The open round's tool messages join the conversation, in call order.

        Args:
            messages: Those messages, if the caller has them in call order already.
        """
        self._data.at_boundary = True
        self._messages += (
            tuple(round_messages(self._round, self._answers)) if messages is None else messages
        )
        self._answers, self._started, self._decisions = (), (), NO_DECISIONS
        self._inputs = NO_INPUTS
        self._round = ()
        self._note(_ROUND_CLOSED, {})

    async def _complete(self) -> None:
        self._run.send("complete")
        self._append(await self._fire(HookKind.ON_COMPLETE))

    def _close_turn(self, why: str) -> None:
        """After cancel or expire: end the loop and answer what was left unanswered (I7)."""
        if self._loop is not None and not self._loop.is_final:
            self._loop.send("abort", reason=why)
        self._answer_unanswered(why)
        self._flush_deferred()

    def _answer_unanswered(self, why: str) -> None:
        if not self._round:
            return
        answered = {result.call_id for result, _ in self._answers}
        for call in self._round:
            if call.id in answered:
                continue
            info = ToolErrorInfo(type=why, message=f"the call was {why}")
            content = json.dumps({"error": info.model_dump()})
            result = ToolResult(
                call_id=call.id, tool_name=call.name, status=ToolStatus.ERROR, error=info
            )
            self._on_answer(result, Message.tool(call.id, content, name=call.name))
        self._close_round()

    async def _next_queued(self) -> None:
        """Submit the oldest queued input, if the turn ended and the run accepts it."""
        if not self._data.queued or self._data.state not in (RunState.COMPLETED, RunState.FAILED):
            return
        text = self._data.queued[0]
        if self._run.can_send("submit", text=text, from_queue=True):
            await self._open_turn(text, from_queue=True)  # the transition pops the queue's head
            await self._drive()

    async def _expire_if_due(self) -> None:
        """Expire an overdue wait before a call goes on; the expiry is stored first.

        Stored (and told) on its own, so that what the call then refuses names a state the
        store holds, and a save the store refuses is what escapes, the run staying as stored
        (I12): its wait, still overdue, expires at the next call.
        """
        # The machine's own guard decides whether the wait is overdue.
        now = self._clock()
        if self._run.can_send("expire", now=now):
            self._expire(now)
            await self._commit()

    def _expire(self, now: float) -> None:
        self._run.send("expire", now=now)
        self._close_turn("expired")

    def _on_retry(self, notice: RetryNotice) -> None:
        self._record(
            LLMRetryTrace(
                model=self.model.name,
                turn=self._data.turn,
                iteration=self._data.iteration,
                **notice.model_dump(),
                at=self._clock(),
            )
        )
