"""The `Agent`: drives a run's two machines, its model and its tools, turn after turn.

One async implementation (the ``a``-prefixed methods) and a thin synchronous facade with the
same names without the prefix. Every step is a transition of RunLifecycle or TurnLoop, so
the run is always in a state lifecycle.md names, and anything not allowed there raises
`IllegalTransitionError` and changes nothing.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
import uuid
import weakref
from collections.abc import (
    AsyncIterator,
    Callable,
    Collection,
    Coroutine,
    Iterable,
    Mapping,
    Sequence,
)
from types import MappingProxyType
from typing import Any, Concatenate, ParamSpec, TypeVar

from agentfsm.agent._sync import SyncFacade, SyncRunner
from agentfsm.agent.turns import (
    ASK_USER,
    INCOMPLETE_MESSAGE,
    AgentEvent,
    AgentListener,
    DecisionLike,
    TurnOutcome,
    ask_user_tool,
    hooks_from,
    question_of,
    to_decision,
)
from agentfsm.errors import (
    AgentFSMError,
    HookFailedError,
    HookMessageError,
    IllegalTransitionError,
    ModelError,
    StoreError,
)
from agentfsm.fsm import AnyMachine, Emitter, Engine, RunData, loop_machine, run_machine
from agentfsm.fsm.rounds import open_round, round_messages
from agentfsm.fsm.trace import (
    AnyTraceEntry,
    LLMRetryTrace,
    UserInputTrace,
    llm_call_entry,
    tool_entries,
)
from agentfsm.llm.base import Model, RetryNotice
from agentfsm.llm.resolve import resolve_model
from agentfsm.states.events import Event
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import Message, ToolCall
from agentfsm.states.names import InputPolicy, LoopState, MachineName, RecordKind, RunState
from agentfsm.stores.base import RunStore
from agentfsm.stores.snapshot import Snapshot, ToolAnswer
from agentfsm.tools.context import ToolContext
from agentfsm.tools.hooks import HookContext, HookHandler, HookKind, Hooks
from agentfsm.tools.policy import Decision
from agentfsm.tools.registry import AnyTool, ToolRegistry
from agentfsm.tools.results import (
    ToolErrorInfo,
    ToolResult,
    ToolStatus,
    failure_content,
)
from agentfsm.tools.system import Answer, ToolSystem

P = ParamSpec("P")
R = TypeVar("R")

_NO_DECISIONS: Mapping[str, Decision] = MappingProxyType({})

OUTCOME_UNKNOWN = "ToolOutcomeUnknown"
"""The error type of the tool message a resumed run gives a non-idempotent call that had
started before a crash without its result being stored (at-most-once, I11)."""


def _durable(
    method: Callable[Concatenate[Agent, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[Agent, P], Coroutine[Any, Any, R]]:
    """On a store error, put the Agent back to what its store holds, then re-raise."""

    @functools.wraps(method)
    async def wrapper(self: Agent, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await method(self, *args, **kwargs)
        except StoreError:
            self._reload()
            raise

    return wrapper


class Agent(SyncFacade):
    """An agent loop whose every step is a transition of RunLifecycle or TurnLoop.

    Args:
        model: The model that answers: any `Model`, or a spec for `resolve_model`
            (``"scripted:demo"``, ``"openai:<model id>"``).
        tools: Tools or plain functions (made into tools), or a `ToolRegistry`.
        system_prompt: The conversation's first message, if any.
        max_iterations: Model calls allowed in one turn (default 10). A turn that reaches
            the cap completes with reason ``max_iterations`` and a final message saying the
            task is incomplete.
        max_turns: Turns allowed in the run (1 for a single-turn run); None for no cap.
        input_policy: What a `submit` while busy does: ``reject`` (raise), ``queue`` or
            ``interrupt``.
        hooks: Hook handlers, as a `Hooks` or a mapping from hook to handler(s); more can
            be added with `on`.
        listeners: Told of every transition and trace entry.
        run_id: The run's id (a new UUID by default).
        user_id: Passed to tools in their `ToolContext`.
        enabled_tools: The tools offered to the model and allowed to run; None for all.
        ask_user: Offer the built-in ``ask_user`` tool (default True).
        action_timeout: Seconds an approval may take before the wait can expire.
        input_timeout: Seconds a user's answer may take before the wait can expire.
        clock: Wall-clock seconds since the epoch (events, deadlines).
        timer: Monotonic seconds (durations).
        engine: ``compiled`` (default) or ``reference`` (python-statemachine's own engine).
        store: Where the run persists (`SQLiteStore`, `MemoryStore`, …). Every transition
            and every change to the conversation is saved before its event is delivered
            (I11). If ``run_id`` names a run the store holds, the Agent is that run,
            restored where it was (its configuration, conversation and trace included),
            and `start` takes it up without re-running any enter action.
    """

    __slots__ = (
        "__weakref__",
        "_answers",
        "_cancel_requested",
        "_clock",
        "_config",
        "_data",
        "_decisions",
        "_deferred",
        "_emitter",
        "_engine",
        "_listeners",
        "_loop",
        "_messages",
        "_pause_requested",
        "_restored",
        "_round",
        "_run",
        "_started",
        "_sync",
        "_system",
        "_system_prompt",
        "_timer",
        "_trace",
        "_version",
        "action_timeout",
        "enabled_tools",
        "hooks",
        "input_timeout",
        "model",
        "store",
        "tools",
        "user_id",
    )

    def __init__(
        self,
        model: Model | str,
        tools: ToolRegistry | Iterable[AnyTool | Callable[..., object]] = (),
        *,
        system_prompt: str | None = None,
        max_iterations: int = 10,
        max_turns: int | None = None,
        input_policy: InputPolicy | str = InputPolicy.REJECT,
        hooks: Hooks | Mapping[HookKind | str, HookHandler | Sequence[HookHandler]] | None = None,
        listeners: Iterable[AgentListener] = (),
        run_id: str | None = None,
        user_id: str | None = None,
        enabled_tools: Collection[str] | None = None,
        ask_user: bool = True,
        action_timeout: float | None = None,
        input_timeout: float | None = None,
        clock: Callable[[], float] = time.time,
        timer: Callable[[], float] = time.perf_counter,
        engine: Engine = "compiled",
        store: RunStore | None = None,
    ) -> None:
        if isinstance(max_iterations, bool) or not isinstance(max_iterations, int):
            raise TypeError(f"max_iterations must be an int, not {max_iterations!r}")
        if max_iterations < 1:
            raise ValueError(f"max_iterations must be at least 1, not {max_iterations!r}")
        self.model = resolve_model(model) if isinstance(model, str) else model
        """The model that answers."""
        self.hooks = hooks if isinstance(hooks, Hooks) else hooks_from(hooks or {})
        """The hook handlers; add more with `on`."""
        registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
        if ask_user and registry.find(ASK_USER) is None:
            registry.register(ask_user_tool())
        self.tools = ToolSystem(registry, hooks=self.hooks, timer=timer, clock=clock)
        """The ToolSystem that runs the tool rounds."""
        self.enabled_tools = None if enabled_tools is None else frozenset(enabled_tools)
        if self.enabled_tools is not None and ask_user:
            self.enabled_tools |= {ASK_USER}
        self.user_id = user_id
        self.action_timeout = action_timeout
        self.input_timeout = input_timeout
        self.store = store
        """Where the run persists; None for a run that lives in memory only."""
        self._clock, self._timer, self._engine = clock, timer, engine
        self._listeners: list[AgentListener] = list(listeners)
        self._system_prompt = system_prompt
        self._system = (Message.system(system_prompt),) if system_prompt is not None else ()
        self._config = (max_iterations, max_turns, InputPolicy(input_policy))
        # The emitter holds the Agent weakly: no reference cycle, so an Agent nobody holds is
        # freed at once, and its private event loop closed with it.
        self._emitter = Emitter(run_id or uuid.uuid4().hex, [_weak_listener(self)], clock=clock)
        self._cancel_requested = False
        self._pause_requested = False
        self._sync = SyncRunner()
        self._fresh()
        stored = store.load(run_id) if store is not None and run_id is not None else None
        if stored is not None:
            self._restore(stored)
        self._restored = stored is not None

    def _fresh(self) -> None:
        """A new run, in created: nothing said, nothing stored."""
        max_iterations, max_turns, input_policy = self._config
        self._data = RunData(
            self._emitter.run_id,
            max_iterations=max_iterations,
            max_turns=max_turns,
            input_policy=input_policy,
        )
        self._run: AnyMachine = run_machine(self._data, self._emitter, self._engine)
        self._loop: AnyMachine | None = None
        self._messages: list[Message] = list(self._system)
        self._trace: list[AnyTraceEntry] = []
        self._round: tuple[ToolCall, ...] = ()
        # Empty between rounds, so immutable (and shared) until a round fills them: an idle
        # run costs no containers.
        self._deferred: tuple[Message, ...] = ()
        self._decisions: Mapping[str, Decision] = _NO_DECISIONS
        self._answers: tuple[Answer, ...] = ()
        self._started: tuple[str, ...] = ()
        self._version = 0
        self._emitter.seq = 0

    def _restore(self, snapshot: Snapshot) -> None:
        """Become the stored run: its machines where they were, without entering a state."""
        self._data = snapshot.to_data()
        self._run = run_machine(self._data, self._emitter, self._engine)
        self._loop = (
            None
            if self._data.loop_state is None
            else loop_machine(self._data, self._emitter, self._engine)
        )
        self._messages = list(snapshot.messages)
        self._trace = list(snapshot.trace)
        self._deferred = tuple(snapshot.deferred)
        self._decisions = dict(snapshot.decisions)
        self._answers = tuple((answer.result, answer.message) for answer in snapshot.answers)
        self._started = tuple(snapshot.started)
        self._round = open_round(self._messages)
        self._version = snapshot.version
        self._emitter.seq = snapshot.seq

    def _reload(self) -> None:
        """After a failed save: be exactly what the store holds (nothing unsaved is kept)."""
        stored = self.store.load(self.run_id) if self.store is not None else None
        if stored is None:
            self._fresh()
        else:
            self._restore(stored)
        self._cancel_requested = self._pause_requested = False

    # -- what the application reads --------------------------------------------------------

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self._data.run_id

    @property
    def state(self) -> str:
        """RunLifecycle's state."""
        return self._data.state

    @property
    def loop_state(self) -> str | None:
        """The current turn's TurnLoop state (None before the first turn)."""
        return self._data.loop_state

    @property
    def turn(self) -> int:
        """Turns started so far."""
        return self._data.turn

    @property
    def iteration(self) -> int:
        """Model calls in the current turn."""
        return self._data.iteration

    @property
    def max_iterations(self) -> int:
        """Model calls allowed in one turn (I8: ``iteration`` never exceeds it)."""
        return self._data.max_iterations

    @property
    def reason(self) -> str | None:
        """Why the last turn ended."""
        return self._data.reason

    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation: the system prompt first, then every message in order."""
        return tuple(self._messages)

    @property
    def trace(
        self,
    ) -> tuple[AnyTraceEntry, ...]:
        """User inputs, model calls, retries and tool executions, in order."""
        return tuple(self._trace)

    @property
    def pending(self) -> tuple[ToolCall, ...]:
        """The calls awaiting the application (in requires_action / input_required)."""
        waiting = set(self._data.pending)
        return tuple(call for call in self._round if call.id in waiting)

    @property
    def question(self) -> str | None:
        """The question awaiting the user's answer."""
        return self._data.question

    def outcome(self) -> TurnOutcome:
        """Where the run is now."""
        last = self._messages[-1] if self._messages else None
        reply = (
            last.content
            if self.state == RunState.COMPLETED and last is not None and last.role == "assistant"
            else None
        )
        return TurnOutcome(self.state, self.reason, reply, self.pending, self.question)

    # -- how the application listens -------------------------------------------------------

    def on(self, kind: HookKind | str) -> Callable[[HookHandler], HookHandler]:
        """A decorator registering a hook handler: ``@agent.on("before_llm")``."""
        return self.hooks.on(kind)

    def add_listener(self, listener: AgentListener) -> None:
        """Tell ``listener`` of every transition and trace entry from now on."""
        self._listeners.append(listener)

    def remove_listener(self, listener: AgentListener) -> None:
        """Stop telling ``listener``."""
        self._listeners.remove(listener)

    async def stream(self, text: str) -> AsyncIterator[AgentEvent]:
        """Submit ``text`` and yield every transition and trace entry of the turn as it happens.

        The turn runs as a task; the iterator ends when `asubmit` returns, and re-raises
        what it raised.
        """
        queue: asyncio.Queue[AgentEvent] = asyncio.Queue()
        self.add_listener(queue.put_nowait)
        try:
            turn = asyncio.ensure_future(self.asubmit(text))
            while not (turn.done() and queue.empty()):
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait({getter, turn}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    yield getter.result()
                else:
                    getter.cancel()
            turn.result()
        finally:
            self.remove_listener(queue.put_nowait)

    def _on_event(self, event: Event) -> None:
        if self._data.loop_state is None and self._data.state == RunState.BUSY:
            # A turn's loop enters thinking as part of the transition that starts the turn,
            # so the transition's snapshot has it (replay does the same).
            self._loop = loop_machine(self._data, self._emitter, self._engine)
        if self.store is not None:
            version = self._version + 1
            self.store.save(
                self._snapshot(event.seq, version),
                (event,),
                expected_version=self._version or None,
            )
            self._version = version
        self._deliver(event)

    def _snapshot(self, seq: int, version: int) -> Snapshot:
        return Snapshot.from_data(
            self._data,
            self._messages,
            self._trace,
            seq,
            version,
            deferred=self._deferred,
            decisions=self._decisions,
            answers=[
                ToolAnswer.model_construct(result=result, message=message)
                for result, message in self._answers
            ],
            started=self._started,
            trusted=True,
        )

    def snapshot(self) -> Snapshot:
        """The run as a `Snapshot` (what a store holds of it after its last event)."""
        return self._snapshot(self._emitter.seq, max(self._version, 1))

    def _dump(self, model: Message | ToolResult) -> JSONObject:
        """``model`` as a record's JSON, if anyone hears of records: a store or a listener.

        With neither, the record is still numbered (``seq`` stays the same either way), but
        the dump, a few µs per message, is skipped: nobody could read it.
        """
        if self.store is None and not self._listeners:
            return {}
        return model.model_dump(mode="json")

    def _note(self, kind: RecordKind, data: JSONObject) -> None:
        """Record a change to the conversation (already made) as a ``conversation`` event."""
        state = self._data.state
        self._emitter.emit(MachineName.CONVERSATION, kind, state, state, data)

    def _append(self, messages: Iterable[Message]) -> None:
        for message in messages:
            self._messages.append(message)
            self._note(RecordKind.MESSAGE, {"message": self._dump(message)})

    def _defer(self, messages: Iterable[Message]) -> None:
        for message in messages:
            self._deferred = (*self._deferred, message)
            self._note(RecordKind.DEFERRED, {"message": self._dump(message)})

    def _flush_deferred(self) -> None:
        if self._deferred:
            self._messages.extend(self._deferred)
            self._deferred = ()
            self._note(RecordKind.FLUSH_DEFERRED, {})

    def _deliver(self, item: AgentEvent) -> None:
        for listener in tuple(self._listeners):
            listener(item)

    def _record(self, entry: AnyTraceEntry) -> None:
        self._trace.append(entry)
        self._deliver(entry)

    # -- the async core ---------------------------------------------------------------------

    @_durable
    async def astart(self) -> TurnOutcome:
        """Open the run: created → ready.

        For a run restored from its store, take it up where it was instead: nothing is
        re-entered, a busy turn goes on from its last stored step, and the run is claimed
        (a save with no event) so that of two processes resuming it, the second gets
        `SnapshotConflictError` before running anything.
        """
        if self._restored and self.state != RunState.CREATED:
            self._restored = False
            self._claim()
            if self.state == RunState.BUSY:
                await self._drive()
            elif self._round and self._loop is not None and self._loop.is_final:
                # The process stopped between ending a turn and closing its round.
                self._close_turn(self._data.reason or "cancelled")
            return self.outcome()
        self._restored = False
        max_iterations, max_turns, input_policy = self._config
        self._run.send(
            "start",
            max_iterations=max_iterations,
            max_turns=max_turns,
            input_policy=str(input_policy),
            system_prompt=self._system_prompt,
        )
        return self.outcome()

    def _claim(self) -> None:
        if self.store is not None:
            version = self._version + 1
            self.store.save(
                self._snapshot(self._emitter.seq, version), (), expected_version=self._version
            )
            self._version = version

    @_durable
    async def asubmit(self, text: str) -> TurnOutcome:
        """Give the run a user input and run the turn until it ends or waits.

        While busy, the input follows the run's input policy (`IllegalTransitionError`
        under ``reject``). An empty input, or one past the turn limit, raises
        `GuardFailedError` and changes nothing.
        """
        self._expire_if_due()
        if self.state == RunState.BUSY:
            self._run.send("submit", text=text)  # queued or interrupting, or refused
            return self.outcome()
        await self._submit(text, from_queue=False)
        return self.outcome()

    async def _submit(self, text: str, *, from_queue: bool) -> None:
        """Submit an input that starts a turn; its user message is part of the transition."""
        args: dict[str, JSONValue] = {"text": text}
        if from_queue:
            args["from_queue"] = True
        self._messages.append(Message.user(text))  # in the transition's snapshot
        try:
            self._run.send("submit", **args)
        except IllegalTransitionError:
            self._messages.pop()
            raise
        self._cancel_requested = self._pause_requested = False
        self._round = ()
        await self._failing_the_turn(self._user_input(text, defer=False))
        await self._drive()

    @_durable
    async def aresolve_action(self, decisions: Mapping[str, DecisionLike]) -> TurnOutcome:
        """Decide every pending call: approve it, deny it, or supply a client-side output."""
        self._expire_if_due()
        decided = {call_id: to_decision(call_id, value) for call_id, value in decisions.items()}
        payload: JSONObject = {
            call_id: decision.model_dump(mode="json") for call_id, decision in decided.items()
        }
        self._run.send("resolve_action", decisions=payload)
        self._decisions = decided
        self._loop_machine().send("resolved", decisions=payload)
        await self._drive()
        return self.outcome()

    @_durable
    async def aprovide_input(self, text: str) -> TurnOutcome:
        """Answer the pending question; the answer becomes the ``ask_user`` tool message."""
        self._expire_if_due()
        pending = self._data.pending
        self._run.send("provide_input", text=text)
        await self._failing_the_turn(self._user_input(text, defer=True))
        self._decisions = {call_id: Decision.output(text) for call_id in pending}
        payload: JSONObject = {
            call_id: decision.model_dump(mode="json")
            for call_id, decision in self._decisions.items()
        }
        self._loop_machine().send("resolved", decisions=payload)
        await self._drive()
        return self.outcome()

    @_durable
    async def acancel(self) -> TurnOutcome:
        """Cancel the turn: at once while it waits, at the next step boundary while busy."""
        if self.state == RunState.BUSY:
            self._cancel_requested = True
            return self.outcome()
        self._run.send("cancel")
        self._close_turn("cancelled")
        return self.outcome()

    @_durable
    async def apause(self) -> TurnOutcome:
        """Pause the run: at once when idle or waiting, at the next step boundary while busy."""
        if self.state == RunState.BUSY:
            self._pause_requested = True
            return self.outcome()
        self._run.send("pause")
        return self.outcome()

    @_durable
    async def aresume(self) -> TurnOutcome:
        """Return to the state the run was paused in; a busy turn goes on where it stopped."""
        self._run.send("resume")
        self._restored = False
        self._pause_requested = False
        if self.state == RunState.BUSY:
            await self._drive()
        return self.outcome()

    @_durable
    async def aexpire(self) -> TurnOutcome:
        """Expire the current wait if its deadline has passed (else `GuardFailedError`)."""
        self._expire(self._clock())
        return self.outcome()

    @_durable
    async def ashutdown(self) -> TurnOutcome:
        """Close the run for good. Not while busy.

        An unfinished turn (waiting, or paused mid-turn) is closed as for cancel.
        """
        unfinished = self._loop is not None and not self._loop.is_final
        self._run.send("shutdown")
        if unfinished:
            self._close_turn("cancelled")
        return self.outcome()

    def reset(self) -> None:
        """Clear the conversation (the system prompt stays) while the run is at rest."""
        if self.state not in (RunState.READY, RunState.COMPLETED, RunState.FAILED):
            raise IllegalTransitionError(
                run_id=self.run_id,
                machine="run",
                state=self.state,
                event="reset",
                allowed=self._run.allowed_events(),
                detail=" (reset only while ready, completed or failed)",
            )
        self._messages = list(self._system)
        self._round, self._deferred = (), ()
        try:
            self._note(RecordKind.RESET, {"keep": len(self._system)})
        except StoreError:
            self._reload()
            raise

    # -- the turn ---------------------------------------------------------------------------

    def _loop_machine(self) -> AnyMachine:
        if self._loop is None:  # resolve_action etc. before any turn: the run refuses first
            raise AgentFSMError("no turn is running")
        return self._loop

    async def _user_input(self, text: str, *, defer: bool) -> None:
        self._record(UserInputTrace(turn=self.turn, text=text, at=self._clock()))
        added = await self._fire(HookKind.AFTER_USER_INPUT)
        if defer:
            self._defer(added)
        else:
            self._append(added)

    async def _fire(self, kind: HookKind, *extra: Message) -> tuple[Message, ...]:
        if kind not in self.hooks:
            return ()
        context = HookContext(
            kind,
            self.run_id,
            [*self._messages, *extra] if extra else self._messages,
            turn=self.turn,
            iteration=self.iteration,
        )
        return await self.hooks.fire(context)

    async def _drive(self) -> None:
        """Run the turn from where its loop is until it ends, waits or pauses."""
        loop = self._loop_machine()
        try:
            if loop.state == LoopState.ACTING:
                await self._tool_round()
            while loop.state == LoopState.THINKING:
                if self._stop_at_boundary():
                    break
                await self._think()
                if loop.state == LoopState.ACTING:
                    await self._tool_round()
            if self.state == RunState.BUSY:
                await self._finish(loop.state)
        except (HookFailedError, HookMessageError) as error:
            # lifecycle.md §3: a handler's exception fails the turn (naming the handler)
            # and propagates.
            self._fail_turn(error)
            raise
        await self._next_queued()

    async def _failing_the_turn(self, step: Coroutine[Any, Any, None]) -> None:
        """Run a step of a busy turn whose hook failure fails the turn (lifecycle.md §3)."""
        try:
            await step
        except (HookFailedError, HookMessageError) as error:
            self._fail_turn(error)
            raise

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
        elif loop_state == LoopState.ERRORED:  # a crash came between the loop's and the run's
            self._run.send(
                "fail",
                error_type="ModelError",
                message="the model call failed just before the process stopped",
            )

    def _stop_at_boundary(self) -> bool:
        if self._cancel_requested or self._data.cancel_requested:
            self._cancel_requested = False
            self._run.send("cancel")
            self._close_turn("cancelled")
            return True
        if self._pause_requested:
            self._pause_requested = False
            self._run.send("pause")
            return True
        return False

    async def _think(self) -> None:
        self._append(await self._fire(HookKind.BEFORE_LLM))
        started = self._timer()
        self._data.at_boundary = False
        try:
            response = await self.model.complete(
                self._messages,
                self.tools.openai_tools(self.enabled_tools),
                on_retry=self._on_retry,
            )
        except ModelError as error:
            self._data.at_boundary = True
            await self._fire(HookKind.ON_ERROR)
            details = {"error_type": type(error).__name__, "message": str(error)}
            self._loop_machine().send("model_failed", **details)
            self._run.send("fail", **details)
            return
        self._data.at_boundary = True
        self._record(
            llm_call_entry(
                self.model.name,
                response,
                self.turn,
                self.iteration,
                self._timer() - started,
                self._clock(),
            )
        )
        reply = response.to_message()
        added = await self._fire(HookKind.AFTER_LLM, reply)
        self._classify(reply)
        if response.tool_calls:
            self._defer(added)
        else:
            self._append(added)

    def _classify(self, reply: Message) -> None:
        """Append the reply and send model_replied with the round's shape (and the reply)."""
        calls = reply.tool_calls
        # An ask_user call without a usable question is left to the round, which answers it
        # with an error tool message the model can correct itself from.
        malformed = {c.id for c in calls if c.name == ASK_USER and question_of(c) is None}
        waiting = tuple(
            call_id
            for call_id in self.tools.awaiting_decision(calls, self.enabled_tools)
            if call_id not in malformed
        )
        asking = [c for c in calls if c.name == ASK_USER and c.id in waiting]
        self._round = calls
        self._messages.append(reply)
        loop = self._loop_machine()
        loop.send(
            "model_replied",
            tool_calls=len(calls),
            needing_action=len(waiting) - len(asking),
            asking_user=len(asking),
            message=self._dump(reply),
        )
        if loop.state == LoopState.AWAITING_ACTION:
            self._run.send("need_action", calls=list(waiting), deadline=self._deadline(True))
        elif loop.state == LoopState.AWAITING_INPUT:
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
        context = ToolContext(self.run_id, self.turn, self.iteration, user_id=self.user_id)
        self._data.at_boundary = False
        self._settle_unknown()
        calls = self._round
        round_ = await self.tools.run_round(
            calls,
            context,
            decisions=self._decisions,
            enabled=self.enabled_tools,
            messages=self._messages,
            answered={result.call_id: (result, message) for result, message in self._answers},
            on_start=self._on_start,
            on_answer=self._on_answer,
        )
        self._close_round()
        self._append(round_.messages[len(calls) :])
        self._flush_deferred()
        for entry in tool_entries(calls, round_.results, self.turn, self.iteration, self._clock()):
            self._record(entry)
        loop = self._loop_machine()
        loop.send("tools_finished")
        if loop.state == LoopState.EXHAUSTED:
            await self._finish(loop.state)

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

    def _on_start(self, call: ToolCall) -> None:
        self._started = (*self._started, call.id)
        self._note(RecordKind.TOOL_STARTED, {"call_id": call.id, "name": call.name})

    def _on_answer(self, result: ToolResult, message: Message) -> None:
        if result.call_id in self._started:
            self._started = tuple(i for i in self._started if i != result.call_id)
        self._answers = (*self._answers, (result, message))
        self._note(
            RecordKind.TOOL_RESULT,
            {"result": self._dump(result), "message": self._dump(message)},
        )

    def _close_round(self) -> None:
        """The open round's tool messages join the conversation, in call order."""
        self._data.at_boundary = True
        self._messages.extend(round_messages(self._round, self._answers))
        self._answers, self._started, self._decisions = (), (), _NO_DECISIONS
        self._round = ()
        self._note(RecordKind.ROUND_CLOSED, {})

    async def _complete(self) -> None:
        self._run.send("complete")
        self._append(await self._fire(HookKind.ON_COMPLETE))

    def _fail_turn(self, error: AgentFSMError) -> None:
        """A hook failed mid-turn: end the loop, close the history, fail the run."""
        self._close_turn("failed")
        if self.state == RunState.BUSY:
            self._run.send("fail", error_type=type(error).__name__, message=str(error))

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
        if not self._data.queued or self.state not in (RunState.COMPLETED, RunState.FAILED):
            return
        text = self._data.queued[0]
        if self._run.can_send("submit", text=text, from_queue=True):
            await self._submit(text, from_queue=True)  # the transition pops the queue's head

    def _expire_if_due(self) -> None:
        # The machine's own guard decides whether the wait is overdue.
        now = self._clock()
        if self._run.can_send("expire", now=now):
            self._expire(now)

    def _expire(self, now: float) -> None:
        self._run.send("expire", now=now)
        self._close_turn("expired")

    def _on_retry(self, notice: RetryNotice) -> None:
        self._record(
            LLMRetryTrace(
                model=self.model.name,
                turn=self.turn,
                iteration=self.iteration,
                **notice.model_dump(),
                at=self._clock(),
            )
        )


def _weak_listener(agent: Agent) -> Callable[[Event], None]:
    ref = weakref.ref(agent)

    def on_event(event: Event) -> None:
        alive = ref()
        if alive is not None:
            alive._on_event(event)

    return on_event
