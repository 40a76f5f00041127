"""Driving a turn: model calls, replies, waits, and how a turn ends.

`TurnDriver` moves TurnLoop and RunLifecycle together through one turn (docs/contract.md §2),
on top of `ToolRounds` (agentfsm.agent.rounds), which runs its tool rounds and stops, and
`RunRecord`, which holds and saves what the turn changes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, cast

from agentfsm.agent.deltas import Delta, StreamListener, takes_deltas
from agentfsm.agent.rounds import ToolRounds
from agentfsm.agent.vocabulary import ASK_USER, INCOMPLETE_MESSAGE, question_of
from agentfsm.errors import AgentFSMError, ModelError
from agentfsm.fsm.trace import (
    LLMRetryTrace,
    entry_of,
    packed_llm_call,
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
from agentfsm.llm.settings import (
    CallSettings,
    ModelSettings,
    call_settings,
    check_tool_choice,
    named_choice,
    tool_names,
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
from agentfsm.tools.hooks import HookContext, HookKind, Hooks
from agentfsm.tools.registry import ToolRegistry
from agentfsm.tools.results import ErrorDetails
from agentfsm.tools.sources import ToolSource

if TYPE_CHECKING:
    from agentfsm.agent.emitting import RunEmitter

_IN_ROUND = frozenset({LoopState.ACTING, LoopState.DELEGATING})
"""The loop states in which a turn goes on with its open round."""

# The members the hot path compares with or records, read once (a member read costs a lookup
# in Python 3.11).
_THINKING, _ACTING, _VALIDATING = LoopState.THINKING, LoopState.ACTING, LoopState.VALIDATING
_BUSY = RunState.BUSY
_BEFORE_LLM, _AFTER_LLM = HookKind.BEFORE_LLM, HookKind.AFTER_LLM
_AWAITING_ACTION, _AWAITING_INPUT = LoopState.AWAITING_ACTION, LoopState.AWAITING_INPUT


_FREE_CHOICE = (None, "auto", "none")
"""The ``tool_choice`` values that leave the model free to answer in words."""

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


class TurnDriver(ToolRounds):
    """Runs a turn from where its loop is until it ends, waits or pauses."""

    __slots__ = (
        "_call_deps",
        "_call_settings",
        "_delta_listeners",
        "_deps",
        "_edit",
        "_error",
        "_settings",
        "_timer",
        "hooks",
        "model",
    )

    model: Model
    hooks: Hooks
    _timer: Callable[[], float]
    _emitter: RunEmitter
    """(Also the model's retry listener: see `RunEmitter.__call__`.)"""
    _delta_listeners: tuple[StreamListener, ...]
    """The listeners that asked for deltas (each is among the listeners too)."""
    _error: ErrorDetails | None
    """The error that failed the last turn that failed (None if none did, here)."""
    _edit: tuple[ToolCall, ...] | None
    """The tool calls as the last ``after_llm`` handler edited them, until applied."""
    _settings: ModelSettings | None
    """The Agent's model settings (None: none)."""
    _call_settings: CallSettings | None
    """What each model call of the current turn asks for: the Agent's settings with the
    turn's override merged over them, and their JSON (None: nothing)."""
    _deps: object
    """The Agent's dependencies for tools and hooks (None: none)."""
    _call_deps: object
    """The current turn's dependencies: the turn's own, else the Agent's. Never stored."""

    async def _open_turn(
        self,
        text: str,
        *,
        from_queue: bool,
        settings: ModelSettings | None = None,
        deps: object = None,
    ) -> None:
        """Submit an input that starts a turn; its user message is part of the transition.

        The caller then drives the turn (`_drive`): so that this frame is gone while the
        turn runs (each waiting run holds one frame less).
        """
        args: dict[str, JSONValue] = {"text": text}
        if from_queue:
            args["from_queue"] = True
        if settings is not None:  # the turn's override, in its log: a restored turn keeps it
            args["settings"] = settings.to_json()
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
        self._call_deps = self._deps if deps is None else deps  # (likewise)
        # (every turn starts from the Agent's settings: an override never outlives its turn)
        if settings is not None or self._settings is not None:
            self._call_settings = call_settings(self._settings, settings)
        else:
            self._call_settings = None
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
        """Offer the tools of fresh listings from now on, each recorded (``tools_listed``).

        A listing equal to the one last recorded for its source is not recorded again (a
        server may announce a change at every call and list the same tools).
        """
        self._offer(registry)
        for prefix, listing in fresh.items():
            last = self._listed.get(prefix)
            if last is None or tuple(last) != tuple(listing):
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
            deps=self._call_deps,
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
        if self._call_settings is not None:
            self._loop_machine().send("model_failed", settings=self._call_settings[1], **details)
        else:
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
            None if self._call_settings is None else self._call_settings[1],
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
        if self._call_settings is not None:
            settings = self._call_settings[0]
            if self._data.iteration > 1 and settings.tool_choice not in _FREE_CHOICE:
                # A forcing tool_choice holds for a turn's first call only (as the peers'
                # default): forced on every call, the model could never answer.
                self._call_settings = call_settings(settings.without_tool_choice(), None)
                if self._call_settings is None:
                    return self._call_model()
                settings = self._call_settings[0]
            return self._call_with_settings(messages, tools, settings)
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

    def _call_with_settings(
        self, messages: tuple[Message, ...], tools: tuple[JSONObject, ...], settings: ModelSettings
    ) -> Awaitable[ModelResponse]:
        """`_call_model`, for a turn that asks for settings (checked: the model takes them).

        Raises:
            ModelSettingsError: Its ``tool_choice`` names a tool not offered now (a tool
                source's listing changed since the turn began).
        """
        named = named_choice(settings)
        if named is not None:
            check_tool_choice(settings, tool_names(tools))
        kwargs: dict[str, object] = {"on_retry": self._emitter, "settings": settings}
        if self._response_format is not None:
            kwargs["response_format"] = self._response_format
        if self._delta_listeners and takes_deltas(self.model):
            kwargs["on_delta"] = self._on_delta
        complete = cast("Callable[..., Awaitable[ModelResponse]]", self.model.complete)
        return complete(messages, tools, **kwargs)

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
        # (JSON by construction, from the validated reply: `send` would walk it again)
        replied: JSONObject = {
            "tool_calls": self._answer_calls(calls) if self._answer_by_tool else len(calls),
            "needing_action": len(waiting) - len(asking),
            "asking_user": len(asking),
            # (`_dump`, inlined: once per model reply)
            "message": _reply_json(reply, content, calls)
            if self.store is not None or self._listeners
            else {},
        }
        if self._call_settings is not None:  # what the call asked for, in the run's log
            replied["settings"] = self._call_settings[1]
        loop.send_trusted("model_replied", replied)
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

    async def _complete(self) -> None:
        self._run.send("complete")
        self._append(await self._fire(HookKind.ON_COMPLETE))

    async def _next_queued(self) -> None:
        """Submit the oldest queued input, if the turn ended and the run accepts it."""
        if not self._data.queued or self._data.state not in (RunState.COMPLETED, RunState.FAILED):
            return
        text = self._data.queued[0]
        if self._run.can_send("submit", text=text, from_queue=True):
            await self._open_turn(text, from_queue=True)  # the transition pops the queue's head
            await self._drive()

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
