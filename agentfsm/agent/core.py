"""The `Agent`: drives a run's two machines, its model and its tools, turn after turn.

One async implementation (the ``a``-prefixed methods) and a thin synchronous facade with the
same names without the prefix. Every step is a transition of RunLifecycle or TurnLoop, so
the run is always in a state docs/contract.md names, and anything not allowed there raises
`IllegalTransitionError` and changes nothing.

This module holds the constructor (its options); the Agent's other parts are mixins beside
it: its lifecycle calls (`agentfsm.agent.lifecycle`), its read-only view of the run
(`agentfsm.agent.view`), its hooks, listeners and stream (`agentfsm.agent.listening`).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import cast

from agentfsm.agent import checks
from agentfsm.agent._sync import SyncFacade, SyncRunner
from agentfsm.agent.context import ContextControl
from agentfsm.agent.deltas import StreamListener
from agentfsm.agent.emitting import RunEmitter
from agentfsm.agent.ids import draw_run_id
from agentfsm.agent.lifecycle import Lifecycle
from agentfsm.agent.listening import Listening
from agentfsm.agent.output import FINAL_ANSWER, OutputSpec, OutputType, OutputValidator
from agentfsm.agent.record import NO_LISTINGS
from agentfsm.agent.restoring import Restoring
from agentfsm.agent.vocabulary import (
    ASK_USER,
    AgentListener,
    ask_user_tool,
    hooks_from,
)
from agentfsm.fsm import Engine
from agentfsm.llm.base import Model
from agentfsm.llm.resolve import resolve_model
from agentfsm.llm.settings import SettingsLike, call_settings
from agentfsm.states.messages import Message, ToolCall
from agentfsm.states.names import InputPolicy
from agentfsm.stores.base import RunStore
from agentfsm.stores.leases import Hold, LeasePolicy
from agentfsm.tools.hooks import HookHandler, HookKind, Hooks
from agentfsm.tools.registry import AnyTool, ToolRegistry
from agentfsm.tools.results import ErrorDetails
from agentfsm.tools.sources import ToolSource
from agentfsm.tools.system import ToolSystem

__all__ = ["Agent"]


class Agent(Lifecycle, Listening, ContextControl, Restoring, SyncFacade):
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


@functools.lru_cache(maxsize=64)
def _config(
    max_iterations: int, max_turns: int | None, input_policy: InputPolicy
) -> tuple[int, int | None, InputPolicy]:
    """The run's limits and policy as one tuple, shared by the Agents configured alike."""
    return (max_iterations, max_turns, input_policy)
