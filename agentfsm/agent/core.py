"""The `Agent`: drives a run's two machines, its model and its tools, turn after turn.

One async implementation (the ``a``-prefixed methods) and a thin synchronous facade with the
same names without the prefix. Every step is a transition of RunLifecycle or TurnLoop, so
the run is always in a state docs/contract.md names, and anything not allowed there raises
`IllegalTransitionError` and changes nothing.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Mapping, Sequence
from typing import TypeVar, cast, overload

from agentfsm._checks import flag
from agentfsm.agent import checks
from agentfsm.agent._sync import SyncFacade, SyncRunner
from agentfsm.agent.context import ContextControl
from agentfsm.agent.deltas import StreamItem, StreamListener
from agentfsm.agent.emitting import RunEmitter
from agentfsm.agent.ids import draw_run_id
from agentfsm.agent.leasing import take_up
from agentfsm.agent.output import FINAL_ANSWER, OutputSpec, OutputType, OutputValidator
from agentfsm.agent.record import NO_LISTINGS
from agentfsm.agent.restoring import Restoring
from agentfsm.agent.settings import SettingsControl
from agentfsm.agent.steps import DRIVE, StepGuard, step
from agentfsm.agent.vocabulary import (
    ASK_USER,
    AgentListener,
    DecisionLike,
    TurnOutcome,
    ask_user_tool,
    hooks_from,
    to_decision,
)
from agentfsm.errors import ModelSettingsError
from agentfsm.fsm import Engine
from agentfsm.fsm.trace import AnyTraceEntry
from agentfsm.llm.base import Model
from agentfsm.llm.resolve import resolve_model
from agentfsm.llm.settings import ModelSettings, SettingsLike, call_settings
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message, ToolCall
from agentfsm.states.names import FailedReason, InputPolicy, MachineName, RecordKind, RunState
from agentfsm.stores.base import RunStore
from agentfsm.stores.leases import Hold, LeasePolicy
from agentfsm.stores.snapshot import Snapshot
from agentfsm.tools.hooks import HookHandler, HookKind, Hooks
from agentfsm.tools.policy import Decision
from agentfsm.tools.registry import AnyTool, ToolRegistry
from agentfsm.tools.results import ErrorDetails
from agentfsm.tools.sources import ToolSource
from agentfsm.tools.system import ToolSystem

__all__ = ["Agent"]


class Agent(StepGuard, ContextControl, SettingsControl, Restoring, SyncFacade):
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
        ask_user: Offer the built-in ``ask_user`` tool, through which the model asks the
            user a question (the run then waits in ``input_required`` for `provide_input`).
            Off by default: an application that answers questions turns it on.
        action_timeout: Seconds an approval may take before the wait can expire.
        input_timeout: Seconds a user's answer may take before the wait can expire.
        clock: Wall-clock seconds since the epoch (events, deadlines).
        timer: Monotonic seconds (durations).
        engine: ``compiled`` (default) or ``reference`` (python-statemachine's own engine).
        store: Where the run persists (`SQLiteStore`, `MemoryStore`, …). Every transition
            and every change to the conversation is saved before its event is delivered
            (I11). If ``run_id`` names a run the store holds, the Agent is that run,
            restored where it was (its configuration, conversation and trace included),
            and `start` takes it up without re-running any enter action; if it holds none,
            a new run under that id. To take up a run that must exist, use `restore`,
            which raises `RunNotFoundError` instead.
        context_window: The model's context window in tokens, for `context_usage`; None to
            use the model's ``context_window`` attribute or the known window of its name.
        mcp_servers: Tool sources listed when each turn starts (`agentfsm.tools.mcp.MCPServer`,
            or any `ToolSource`), each under its own prefix. Each listing is recorded in
            the run's log (``tools_listed``), and the run offers and runs the recorded
            tools: a restored run uses them without contacting the servers. A source that
            announces a change is listed again between two rounds. A source that cannot be
            listed when a turn starts, or whose tools clash with others, refuses the submit.
        output_type: What the final answer must be: a pydantic model class, or a JSON
            Schema of an object; None (the default) for a text answer. A typed answer is
            validated in the loop's ``validating`` step and is the outcome's ``output``;
            the model is asked for it with its structured output (``response_format``) if
            it has it (`StructuredModel`), else through a ``final_answer`` tool.
        output_retries: How many invalid answers a turn sends back to the model, with what
            was wrong, before it fails with reason ``output_invalid`` (default 2).
        output_validators: The application's checks of an answer that validated, in order:
            each ``validator(output)`` (sync or async) returns None or a new output, or
            raises `OutputRejectedError` to send the answer back with its message.
        lease: How the run holds its lease on a store that keeps leases while a turn works
            (`LeasePolicy`: duration, renewal, wait, owner): another process that restores
            the busy run gets `RunBusyError` until the lease is released or expires, then
            takes it over (recorded as ``lease_taken_over``). None: no lease (any process
            may take the run up, as on a store that keeps none).
        settings: Model settings for every call of the run (`ModelSettings`, or a mapping
            of its fields, e.g. ``{"temperature": 0.2, "max_tokens": 800}``); a turn may
            override some (``submit(text, settings=...)``). Each call's settings are
            recorded in its ``llm_call`` trace entry and ``model_replied`` event. Refused
            (`ModelSettingsError`) when out of range, when ``tool_choice`` names no offered
            tool, or when the model takes no settings.
        deps: The application's objects for tools and hooks (a DB session, an HTTP
            client, the current user…), as ``ToolContext.deps`` and ``HookContext.deps``; a
            turn may bring its own (``submit(text, deps=...)``). Never stored and never sent
            to the model: a restored run gets the dependencies of the process that restored
            it. Sub-agents' child runs get the turn's, unless their factory gives their own.
    """

    __slots__ = (
        "__weakref__",
        "_hold",
        "_lease",
        "_sync",
        "_system_prompt",
        "context_window",
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
        ask_user: bool = False,
        action_timeout: float | None = None,
        input_timeout: float | None = None,
        clock: Callable[[], float] = time.time,
        timer: Callable[[], float] = time.perf_counter,
        engine: Engine = "compiled",
        store: RunStore | None = None,
        context_window: int | None = None,
        mcp_servers: Iterable[ToolSource] = (),
        output_type: OutputType | None = None,
        output_retries: int = 2,
        output_validators: Iterable[OutputValidator] = (),
        lease: LeasePolicy | None = LeasePolicy(),  # noqa: B008 - frozen, shared
        settings: SettingsLike | None = None,
        deps: object = None,
    ) -> None:
        checks.agent_arguments(locals())
        sources = checks.tool_sources(mcp_servers)
        spec = OutputSpec.of(output_type, output_retries, output_validators)
        self.model = resolve_model(model) if isinstance(model, str) else model
        """The model that answers."""
        self.hooks = (
            Hooks() if hooks is None else hooks if isinstance(hooks, Hooks) else hooks_from(hooks)
        )
        """The hook handlers; add more with `on`."""
        registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry._of(tools)
        checks.enabled_tools(enabled_tools, registry, ask_user)
        if ask_user and registry.find(ASK_USER) is None:
            registry.register(ask_user_tool())
        self.tools = ToolSystem._with_defaults(registry, self.hooks, timer, clock)  # (checked)
        """The ToolSystem that runs the tool rounds (its registry changes with the listings
        of ``mcp_servers``)."""
        self._own = registry.enabled()  # (shared by the runs whose registries are alike)
        self._sources = sources
        self._listed = NO_LISTINGS
        self._asking = None
        self._init_children(registry)
        self.enabled_tools = None if enabled_tools is None else frozenset(enabled_tools)
        if self.enabled_tools is not None and ask_user:
            self.enabled_tools |= {ASK_USER}
        structured = getattr(self.model, "structured_output", False) is True
        if spec is not None and not structured:
            checks.final_answer_free(registry)
            registry.register(spec.tool())
            if self.enabled_tools is not None:
                self.enabled_tools |= {FINAL_ANSWER}
        self._typed(spec, structured)
        self._settings = self._override(settings)
        self._call_settings = call_settings(self._settings, None)
        self._deps = self._call_deps = deps
        self.user_id = user_id
        self.action_timeout = action_timeout
        self.input_timeout = input_timeout
        self.store = store
        """Where the run persists; None for a run that lives in memory only."""
        self.context_window = context_window
        """The model's context window in tokens, for `context_usage` (None: the model's own,
        or the known one for its name)."""
        self._clock, self._timer, self._engine = clock, timer, engine
        self._lease, self._hold = lease, cast("Hold | None", None)
        self._listeners: tuple[AgentListener, ...] = tuple(listeners)  # (replaced on change)
        self._delta_listeners: tuple[StreamListener, ...] = ()  # (rarely any: no list)
        self._system_prompt = system_prompt
        self._system = (Message.system(system_prompt),) if system_prompt is not None else ()
        policy = input_policy if type(input_policy) is InputPolicy else InputPolicy(input_policy)
        self._config = _config(max_iterations, max_turns, policy)
        # The emitter holds the Agent weakly: no reference cycle, so an Agent nobody holds is
        # freed at once, and its private event loop closed with it.
        self._emitter = RunEmitter(run_id or draw_run_id(), self, clock)
        self._cancel_requested = False
        self._pause_requested = False
        self._depth = 0
        self._store_failed = self._driven = False
        self._quiet: list[BaseException] | None = None
        self._error: ErrorDetails | None = None
        self._edit: tuple[ToolCall, ...] | None = None
        self._sync: SyncRunner | None = None  # (made by the first synchronous call)
        self._fresh()
        stored = store.load(run_id) if store is not None and run_id is not None else None
        if stored is not None:
            checks.same_output_type(stored, spec)
            self._restore(stored)
            self._resume_settings()
        self._restored = stored is not None

    def _adopt(self, run_id: str, store: object, parent: tuple[str, str]) -> None:
        """Become the child run ``run_id`` of ``parent`` (run, call) in the parent's store."""
        checks.adoptable(self, store)
        self.store = cast("RunStore | None", store)
        self._parent = parent
        self._emitter = RunEmitter(run_id, self, self._clock)
        self._fresh()
        stored = self.store.load(run_id) if self.store is not None else None
        if stored is not None:
            self._restore(stored)
        self._restored = stored is not None

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self._data.run_id

    @property
    def parent(self) -> tuple[str, str] | None:
        """For a sub-agent's child run: the parent run's id and the id of its call."""
        return self._parent

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
        return tuple(self._entries())

    @property
    def pending(self) -> tuple[ToolCall, ...]:
        """The calls awaiting the application (in requires_action / input_required).

        A call a sub-agent's child run waits on is here too, its id the path that addresses
        it: ``"<this run>/<call>/<child run>/<child call>"`` (one run/call pair per level).
        """
        if not self._data.pending:  # (most outcomes: nothing awaits the application)
            return ()
        waiting = set(self._data.pending)
        own = tuple(call for call in self._round if call.id in waiting)
        if not self._agent_tools or len(own) == len(waiting):
            return own
        return own + self._nested_pending()

    @property
    def question(self) -> str | None:
        """The question awaiting the user's answer."""
        return self._data.question

    def outcome(self) -> TurnOutcome:
        """Where the run is now."""
        data = self._data
        state, reason = data.state, data.reason
        last = self._messages[-1] if self._messages else None
        reply = (
            last.content
            if state == _COMPLETED and last is not None and last.role == "assistant"
            else None
        )
        if self._output_spec is None:
            if reason is None and not data.pending and data.question is None:
                return _at_rest(state, reply)  # (``ready``, mostly: no error, nothing pending)
            error = self._failure() if reason in _FAILED_WITH_ERROR else None
            pending = self.pending if data.pending else ()
            return TurnOutcome(state, reason, reply, pending, data.question, error)
        error = self._failure() if reason in _FAILED_WITH_ERROR else None
        output = self._typed_output()
        reply = self._answer_text() if output is not None else reply
        return TurnOutcome(
            self.state, self.reason, reply, self.pending, self.question, error, output
        )

    def _failure(self) -> ErrorDetails | None:
        """The error that failed the last turn; for a restored run, from its ``fail`` event."""
        if self._error is None and self.store is not None:
            for event in reversed(self.store.events(self.run_id)):
                if event.machine == MachineName.RUN and event.event == "fail":
                    self._error = ErrorDetails.of_event(event.data)
                    break
        return self._error

    def on(self, kind: HookKind | str) -> Callable[[HookHandler], HookHandler]:
        """A decorator registering a hook handler: ``@agent.on("before_llm")``."""
        return self.hooks.on(kind)

    @overload
    def add_listener(self, listener: AgentListener) -> None: ...

    @overload
    def add_listener(self, listener: StreamListener, *, deltas: bool) -> None: ...

    def add_listener(self, listener: AgentListener, *, deltas: bool = False) -> None:
        """Tell ``listener`` of every transition and trace entry from now on.

        With ``deltas=True``, also of each `Delta` (a piece of the model's answer, from a
        model that streams), in order with the rest; what it raises on one is a listener's
        exception like any other.
        """
        checks.listener(listener)
        flag("deltas", deltas)
        self._listeners = (*self._listeners, listener)
        if deltas:
            added = cast("StreamListener", listener)  # per overload
            self._delta_listeners = (*self._delta_listeners, added)

    def remove_listener(self, listener: AgentListener) -> None:
        """Stop telling ``listener``.

        Raises:
            ValueError: ``listener`` was never added (or was already removed).
        """
        checks.added_listener(listener, self._listeners)
        self._listeners = _without(self._listeners, listener)
        if listener in self._delta_listeners:
            self._delta_listeners = _without(self._delta_listeners, listener)

    async def stream(
        self,
        text: str,
        *,
        deltas: bool = True,
        settings: SettingsLike | None = None,
        deps: object = None,
    ) -> AsyncIterator[StreamItem]:
        """Submit ``text`` and yield every transition and trace entry of the turn as it happens.

        With ``deltas`` (the default), the pieces of the model's answers too, as `Delta`
        items in order with the rest (from a model that streams). The turn runs as a task;
        the iterator ends when `asubmit` returns, and re-raises what it raised. ``settings``
        is the turn's override of the model settings and ``deps`` its dependencies, as for
        `asubmit`.
        """
        checks.user_text("text", text)
        flag("deltas", deltas)
        self._override(settings)  # (refused before the turn's task is made)
        queue: asyncio.Queue[StreamItem] = asyncio.Queue()
        self.add_listener(queue.put_nowait, deltas=deltas)
        try:
            if settings is None and deps is None:  # (a subclass's asubmit may take neither)
                turn = asyncio.ensure_future(self.asubmit(text))
            else:
                turn = asyncio.ensure_future(self.asubmit(text, settings=settings, deps=deps))
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

    def snapshot(self) -> Snapshot:
        """The run as a `Snapshot` (what a store holds of it after its last event)."""
        return self._snapshot(self._emitter.seq, max(self._version, 1))

    @step
    async def astart(
        self,
        text: str | None = None,
        *,
        settings: SettingsLike | None = None,
        deps: object = None,
    ) -> TurnOutcome:
        """Open the run: created → ready; with ``text``, also submit it, in the same step.

        For a run restored from its store, take it up where it was instead: nothing is
        re-entered, a busy turn goes on from its last stored step, and the run is claimed
        (a save with no event) so that of two processes resuming it, the second gets
        `SnapshotConflictError` before running anything. A restored paused run stays paused
        (resuming is always explicit): call `resume` next; any other call says so.

        ``astart(text)`` is ``astart()`` then ``asubmit(text)``: the same events in the
        same order, the same messages, trace, hooks and outcome; but with no return to the
        caller between them, so on a store the start (or the claim of a restored run) and
        the input are saved in one transaction, the awaited save before the first model
        call, and delivered once it committed (I11). A cancel or pause a listener of
        ``start`` asks for is taken at the turn's first step boundary. ``text`` is checked
        before anything happens: a bad one changes and stores nothing. On a restored run,
        ``text`` is taken only where ``astart()`` leaves the run ``ready``. ``settings``
        overrides the Agent's model settings for ``text``'s turn, and ``deps`` its
        dependencies, as for `asubmit`.

        Raises:
            IllegalTransitionError: The run is shut down (a shut-down run is final: start a
                new one), or it is paused and was not just restored (call `resume`), or it
                was already started; or ``text`` was given for a restored run that
                ``astart()`` would not leave ready (call ``astart()``, then what the run
                awaits). Nothing is written.
            GuardFailedError: ``text`` is empty or blank. Nothing is written.
            TypeError: ``text`` is not a str. Nothing is written.
            ModelSettingsError: ``settings`` out of range, or given without ``text``.
        """
        restored = self._restored
        if text is not None:
            checks.user_text("text", text)
        override = self._override(settings)
        if override is not None and text is None:
            raise ModelSettingsError(
                next(iter(override.model_fields_set)),
                "is a turn's setting: give it with the turn's text (start(text, settings=...))",
            )
        checks.startable(self, restored)
        if text is not None:
            checks.first_input(self, text, restored)
        if restored and self._data.state != RunState.CREATED:
            if self._data.state == RunState.BUSY:
                await take_up(self)  # its lease: refused while live, a takeover recorded
            self._restored = False
            self._claim()
            if self.state == RunState.BUSY:
                return DRIVE
            if self._round and self._loop is not None and self._loop.is_final:
                # The process stopped between ending a turn and closing its round.
                self._close_turn(self._data.reason or "cancelled")
            return self.outcome() if text is None else await self._first_turn(text, override, deps)
        self._restored = False
        max_iterations, max_turns, input_policy = self._config
        parent = self._parent
        extra: JSONObject = {}
        if parent is not None:
            extra["parent_run"], extra["parent_call"] = parent
        if self._output_spec is not None:
            extra["output_retries"] = self._data.output_retries
        self._run.send(
            "start",
            max_iterations=max_iterations,
            max_turns=max_turns,
            input_policy=str(input_policy),
            system_prompt=self._system_prompt,
            **extra,
        )
        return self.outcome() if text is None else await self._first_turn(text, override, deps)

    async def _first_turn(
        self, text: str, settings: ModelSettings | None, deps: object = None
    ) -> TurnOutcome:
        """`astart`'s ``text``: submitted in the step that started the run (its turn driven).

        A cancel or pause asked for by a listener of ``start`` (told at once, without a
        store) is kept for the turn's first step boundary, where a listener told after the
        one save (with a store) asks for it too.
        """
        cancel, pause = self._cancel_requested, self._pause_requested
        await self._open_turn(text, from_queue=False, settings=settings, deps=deps)
        self._cancel_requested |= cancel
        self._pause_requested |= pause
        return DRIVE  # (the step drives the turn, as for `asubmit`)

    @step
    async def asubmit(
        self, text: str, *, settings: SettingsLike | None = None, deps: object = None
    ) -> TurnOutcome:
        """Give the run a user input and run the turn until it ends or waits.

        While busy, the input follows the run's input policy (`IllegalTransitionError`
        under ``reject``). An empty input, or one past the turn limit, raises
        `GuardFailedError` and changes nothing.

        ``settings`` (`ModelSettings`, or a mapping of its fields) overrides the Agent's
        model settings for this turn's calls only, merged over them field by field; it is
        recorded in the ``submit`` event. An input submitted while busy takes none.
        ``deps`` are this turn's dependencies for tools and hooks, instead of the Agent's
        (never stored: a run restored mid-turn has the Agent's).

        Raises:
            ModelSettingsError: ``settings`` out of range, naming no offered tool, for a
                model that takes none, or given with an input that arrives while busy.
                Nothing changes.
        """
        checks.user_text("text", text)
        override = self._override(settings)
        checks.open_for(self, "submit")
        if self._data.deadline is not None:  # (only a wait with a deadline can be overdue)
            await self._expire_if_due()
        if self._data.state == _BUSY:
            if deps is not None:
                raise ValueError(
                    "deps=... is a turn's, and this input arrives while the run is busy (it "
                    "would be queued or interrupt); submit it with its deps once the turn ended"
                )
            if override is not None:
                raise ModelSettingsError(
                    next(iter(override.model_fields_set)),
                    "is a turn's setting, and this input arrives while the run is busy (it "
                    "would be queued or interrupt); submit it with its settings once the "
                    "turn ended",
                )
            self._run.send("submit", text=text)  # queued or interrupting, or refused
            return self.outcome()
        await self._open_turn(text, from_queue=False, settings=override, deps=deps)
        return DRIVE  # (the step drives the turn: this frame is gone meanwhile)

    @step
    async def aresolve_action(self, decisions: Mapping[str, DecisionLike]) -> TurnOutcome:
        """Decide every pending call: approve it, deny it, or supply a client-side output."""
        checks.decisions(self, decisions)
        checks.open_for(self, "resolve_action")
        await self._expire_if_due()
        decided = {call_id: to_decision(call_id, value) for call_id, value in decisions.items()}
        payload: JSONObject = {
            call_id: decision.model_dump(mode="json") for call_id, decision in decided.items()
        }
        self._run.send("resolve_action", decisions=payload)
        self._decisions = {**self._decisions, **decided}  # (a round waiting on a child again)
        self._loop_machine().send("resolved", decisions=payload)
        return DRIVE

    @step
    async def aprovide_input(self, text: str) -> TurnOutcome:
        """Answer the pending question; the answer becomes the ``ask_user`` tool message."""
        checks.user_text("text", text)
        checks.open_for(self, "provide_input")
        await self._expire_if_due()
        pending = self._data.pending
        self._run.send("provide_input", text=text)
        await self._user_input(text, defer=True)
        answers = {call_id: Decision.output(text) for call_id in pending}
        payload: JSONObject = {
            call_id: decision.model_dump(mode="json") for call_id, decision in answers.items()
        }
        if any(call_id in self._inputs for call_id in pending):
            # A tool asked: its call is retried with the answer; the round's decisions stay.
            self._inputs = {
                call_id: {**request, "answer": text} if call_id in pending else request
                for call_id, request in self._inputs.items()
            }
        else:
            self._decisions = {**self._decisions, **answers}  # (a round waiting on a child)
        self._loop_machine().send("resolved", decisions=payload)
        return DRIVE

    @step
    async def acancel(self) -> TurnOutcome:
        """Cancel the turn: at once while it waits, at the next step boundary while busy.

        Asked for while a step runs (from a hook, listener or tool, or another task), it
        takes effect at the step's next boundary; once the turn's outcome is decided it is
        refused with `ReentrantCallError`. A run left busy with no step running (restored
        from its store mid-turn) is cancelled at once.
        """
        busy = self._data.state == RunState.BUSY
        if self._depth > 1:
            self._refuse_late_cancel()
            if busy or self._run.can_send("cancel"):
                self._cancel_requested = True
                if self._active_child is not None:  # cancel propagates down
                    await self._active_child.acancel()
                return self.outcome()
        elif busy:  # no step is running: answer what it left open, then cancel
            if self._restored:
                await take_up(self)  # its lease: refused while live, a takeover recorded
            self._close_turn("cancelled")
            self._data.at_boundary = True
        self._run.send("cancel")
        self._close_turn("cancelled")
        return self.outcome()

    @step
    async def apause(self) -> TurnOutcome:
        """Pause the run: at once when idle or waiting, at the next step boundary while busy.

        Asked for while a step runs, it takes effect at the step's next boundary, or, if the
        turn ends in that step, on the state it ended in (a paused completed run). A run left
        busy with no step running (restored from its store mid-turn) is paused at once.
        """
        busy = self._data.state == RunState.BUSY
        if self._depth > 1 and (busy or self._run.can_send("pause")):
            self._pause_requested = True
            if self._active_child is not None:  # pause propagates down
                await self._active_child.apause()
            return self.outcome()
        if busy:  # no step is running; unless a call may still be (a crash mid-call)
            self._data.at_boundary = not self._started
            if self._restored and self._data.at_boundary:  # (else the pause is refused)
                await take_up(self)  # its lease: refused while live, a takeover recorded
            if self._agent_tools:  # a child it left busy pauses with it (I14)
                await self._pause_stranded_child()
        self._run.send("pause")
        return self.outcome()

    @step
    async def aresume(self) -> TurnOutcome:
        """Return to the state the run was paused in; a busy turn goes on where it stopped."""
        if self.state == RunState.SHUTDOWN:
            checks.open_for(self, "resume")
        self._pause_requested = False  # (a pause asked by a listener of resume is kept)
        self._run.send("resume")
        self._restored = False
        return DRIVE if self.state == RunState.BUSY else self.outcome()

    @step
    async def aexpire(self) -> TurnOutcome:
        """Expire the current wait if its deadline has passed (else `GuardFailedError`)."""
        self._expire(self._clock())
        return self.outcome()

    @step
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
        """Clear the conversation (the system prompt stays) while the run is at rest.

        Raises:
            ReentrantCallError: Called while a step of the run is running.
            IllegalTransitionError: The run is not ready, completed or failed.
        """
        self._at_rest("reset")
        self._messages = self._system
        self._round, self._deferred = (), ()
        self._store_failed = False
        self._depth = 1  # its listeners run inside this step
        try:
            self._note(RecordKind.RESET, {"keep": len(self._system)})
        except BaseException:
            if self._store_failed:  # the store refused: the run is what it holds
                self._reload()
            raise  # (a listener's exception: the reset is made and saved)
        finally:
            self._depth = 0
        self._apply_requests()  # a pause asked for by a listener of the reset


_COMPLETED = RunState.COMPLETED
_BUSY = RunState.BUSY

_FAILED_WITH_ERROR = (FailedReason.ERROR, FailedReason.OUTPUT_INVALID)
"""The reasons whose outcome carries the error (an enum member read costs a lookup)."""


_PLAIN: dict[str, TurnOutcome] = {}
"""The outcomes that say only a state (no reason, reply, call, question or error), by state:
immutable, so shared (there are as many as states)."""


def _at_rest(state: str, reply: str | None) -> TurnOutcome:
    """``TurnOutcome(state, None, reply, (), None)``: for no reply, the shared one."""
    if reply is not None or type(state) is not str:
        return TurnOutcome(state, None, reply, (), None)
    found = _PLAIN.get(state)
    if found is None:
        found = _PLAIN[state] = TurnOutcome(state, None, None, (), None)
    return found


@functools.lru_cache(maxsize=64)
def _config(
    max_iterations: int, max_turns: int | None, input_policy: InputPolicy
) -> tuple[int, int | None, InputPolicy]:
    """The run's limits and policy as one tuple, shared by the Agents configured alike."""
    return (max_iterations, max_turns, input_policy)


L = TypeVar("L")


def _without(listeners: tuple[L, ...], listener: object) -> tuple[L, ...]:
    """``listeners`` without the first occurrence of ``listener`` (which it holds)."""
    at = listeners.index(listener)
    return listeners[:at] + listeners[at + 1 :]
