"""Faults at an Agent's callback points: what they are, where they strike, and the injector.

`FaultInjector` wraps an Agent's model, store and tool bodies, adds a handler to every hook
and a listener, and strikes an armed `Fault` at its point. `FaultInjectingMachine`
(`agentfsm.testing.faults`) drives it with hypothesis.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from agentfsm._compat import StrEnum
from agentfsm.agent.core import Agent
from agentfsm.agent.vocabulary import AgentEvent, TurnOutcome
from agentfsm.errors import (
    IllegalTransitionError,
    InjectedError,
    InjectedInterrupt,
    ReentrantCallError,
)
from agentfsm.fsm.trace import LLMCallTrace, LLMRetryTrace, ToolExecutionTrace, UserInputTrace
from agentfsm.llm.base import Model, ModelResponse, RetryListener
from agentfsm.states.events import Event
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message
from agentfsm.states.names import LoopEvent, MachineName, RecordKind, RunEvent
from agentfsm.stores.base import DelegatingStore, RunStore
from agentfsm.stores.snapshot import Snapshot
from agentfsm.tools.hooks import HookContext, HookKind

__all__ = [
    "CANCELLATIONS",
    "REENTRANT_CALLS",
    "Fault",
    "FaultInjector",
    "FaultKind",
    "InjectedError",
    "InjectedInterrupt",
    "fault_points",
    "injected_faults",
    "listener_point",
]


class FaultKind(StrEnum):
    """What an armed fault does at its callback point."""

    EXCEPTION = "exception"
    """Raise `InjectedError` (a plain `RuntimeError`, as a user's own code would)."""
    KEYBOARD_INTERRUPT = "keyboard_interrupt"
    """Raise `KeyboardInterrupt`."""
    SYSTEM_EXIT = "system_exit"
    """Raise `SystemExit`."""
    BASE_EXCEPTION = "base_exception"
    """Raise `InjectedInterrupt`, a `BaseException` that is none of the above."""
    CANCELLED_ERROR = "cancelled_error"
    """Raise `asyncio.CancelledError` from the callback itself."""
    TASK_CANCELLED = "task_cancelled"
    """Cancel the task awaiting the Agent (``asyncio.wait_for`` timing out, a web request
    dropped): the cancellation arrives at the Agent's next ``await``."""
    REENTRANT_CALL = "reentrant_call"
    """Call back into the run (``submit``, ``cancel``, ``shutdown``… through the sync facade)."""


CANCELLATIONS = frozenset({FaultKind.CANCELLED_ERROR, FaultKind.TASK_CANCELLED})
"""The faults that are cancellations: a turn they fail fails with reason ``cancelled``."""

REENTRANT_CALLS = (
    "cancel",
    "pause",
    "submit",
    "resolve_action",
    "provide_input",
    "resume",
    "expire",
    "shutdown",
    "reset",
)
"""The calls a re-entrant fault makes into the run."""


@dataclass(frozen=True, slots=True)
class Fault:
    """One fault: at the ``after + 1``-th time ``point`` is reached, do ``kind``.

    Points: ``"model"``, ``"store.save"``, ``"tool:<name>"``, ``"hook:<kind>"``,
    ``"listener:<machine>.<event>"`` (``"listener:run.submit"``,
    ``"listener:conversation.message"``, ``"listener:trace.LLMCallTrace"``…).
    """

    point: str
    """Where the fault strikes."""
    kind: FaultKind
    """What it does there."""
    after: int = 0
    """How many times the point is passed first."""
    call: str = "cancel"
    """The call a `FaultKind.REENTRANT_CALL` makes."""


_TRACE_TYPES = (UserInputTrace, LLMCallTrace, LLMRetryTrace, ToolExecutionTrace)


def listener_point(item: AgentEvent) -> str:
    """The listener point an item delivered to listeners belongs to."""
    if isinstance(item, Event):
        return f"listener:{item.machine}.{item.event}"
    return f"listener:trace.{type(item).__name__}"


_HOT = (
    "model",
    "store.save",
    "hook:before_llm",
    "hook:after_llm",
    "hook:after_user_input",
    "hook:before_each_tool",
    "hook:after_tools",
    "hook:on_complete",
    "listener:run.submit",
    "listener:loop.model_replied",
    "listener:trace.LLMCallTrace",
    "listener:loop.tools_finished",
    "listener:run.complete",
)
"""The points most steps pass, first: a fault armed there strikes soon."""


def fault_points(agent: Agent) -> tuple[str, ...]:
    """Every callback point of ``agent``: its model, hooks, listener events, tools, store.

    The points most steps pass come first (`injected_faults` draws them more often), then the tool
    bodies, then every other hook and listener event.
    """
    events = [f"{MachineName.RUN}.{event}" for event in RunEvent]
    events += [f"{MachineName.LOOP}.{event}" for event in LoopEvent]
    events += [f"{MachineName.CONVERSATION}.{kind}" for kind in RecordKind]
    events += [f"trace.{kind.__name__}" for kind in _TRACE_TYPES]
    points = [p for p in _HOT if p != "store.save" or agent.store is not None]
    points += [
        f"tool:{found.name}"
        for found in agent.tools.registry
        if found.function is not None and not found.client_side
    ]
    points += [f"hook:{kind}" for kind in HookKind]
    points += [f"listener:{event}" for event in events]
    return tuple(dict.fromkeys(points))


def injected_faults(
    points: Sequence[str], kinds: Sequence[FaultKind] = tuple(FaultKind)
) -> st.SearchStrategy[Fault]:
    """A fault at one of ``points``, of one of ``kinds``, after a few passes of the point.

    Half the time the point is one of the first dozen (`fault_points` puts the points most
    steps pass there).
    """
    return st.builds(
        Fault,
        point=st.one_of(st.sampled_from(tuple(points[:12])), st.sampled_from(tuple(points))),
        kind=st.sampled_from(tuple(kinds)),
        after=st.integers(0, 2),
        call=st.sampled_from(REENTRANT_CALLS),
    )


class FaultInjector:
    """Wraps an Agent's callback points so that an armed `Fault` strikes there.

    `install` wraps the agent's model, store and tool bodies and adds a hook handler for
    every hook and a listener; `arm` sets the next fault. A fault strikes once.
    """

    def __init__(self) -> None:
        self.agent: Agent | None = None
        """The agent the injector is installed on."""
        self.fault: Fault | None = None
        """The armed fault, until it strikes."""
        self.struck: Fault | None = None
        """The fault that struck during the current step, if any."""
        self.raised: BaseException | None = None
        """What it raised (None for a task cancellation or a re-entrant call)."""
        self.calls: list[tuple[str, str, str]] = []
        """The re-entrant calls of the current step: (call, state before, what came of it)."""
        self.marker: Callable[[], int] = lambda: 0
        """Called when a fault strikes; what it returns is kept as `struck_at`."""
        self.struck_at = 0
        """What `marker` returned when the fault struck (the machine: transitions so far)."""
        self.awaited = False
        """Whether the fault struck at a point that awaits right there (a cancellation of
        the task lands at the point itself)."""
        self._passes = 0
        self._task: asyncio.Task[Any] | None = None

    def install(self, agent: Agent) -> None:
        """Wrap ``agent``'s model, store and tools; add a handler to every hook; listen."""
        self.agent = agent
        agent.model = _FaultyModel(agent.model, self)
        if agent.store is not None:
            agent.store = _FaultyStore(agent.store, self)
        for kind in HookKind:
            agent.hooks.add(kind, self._hook_handler(kind))
        agent.add_listener(self._listener)
        registry = agent.tools.registry
        for found in tuple(registry):
            if found.function is not None and not found.client_side:
                faulty = copy.copy(found)
                faulty.function = self._tool_body(found.name, found.function)
                faulty.is_async = True
                registry._replace(faulty)  # (this Agent's registry only: tables are shared)

    def arm(self, fault: Fault) -> None:
        """Strike with ``fault`` when its point is reached (replacing any armed fault)."""
        self.fault, self._passes = fault, 0

    def disarm(self) -> None:
        """Forget the armed fault."""
        self.fault = None

    def begin_step(self) -> None:
        """Forget what struck in the last step."""
        self.struck, self.raised, self._task = None, None, None
        self.awaited = False
        self.calls.clear()

    def hit(self, point: str) -> bool:
        """Pass ``point``; strike if the armed fault is due there.

        Returns:
            Whether the caller should yield to the event loop (a task cancellation was
            requested from a point that can await).
        """
        with contextlib.suppress(RuntimeError):  # no running loop: keep the last task
            self._task = asyncio.current_task() or self._task
        fault = self.fault
        if fault is None or fault.point != point:
            return False
        if self._passes < fault.after:
            self._passes += 1
            return False
        self.fault, self.struck, self.struck_at = None, fault, self.marker()
        return self._strike(fault)

    async def ahit(self, point: str) -> None:
        """`hit`, from a point that can await (a task cancellation lands here)."""
        if self.hit(point):
            self.awaited = True
            await asyncio.sleep(0)

    def _strike(self, fault: Fault) -> bool:
        raised: BaseException
        if fault.kind is FaultKind.TASK_CANCELLED:
            if self._task is not None:
                self._task.cancel()
            return True
        if fault.kind is FaultKind.REENTRANT_CALL:
            self._call_back(fault.call)
            return False
        if fault.kind is FaultKind.EXCEPTION:
            raised = InjectedError(f"injected at {fault.point}")
        elif fault.kind is FaultKind.KEYBOARD_INTERRUPT:
            raised = KeyboardInterrupt(f"injected at {fault.point}")
        elif fault.kind is FaultKind.SYSTEM_EXIT:
            raised = SystemExit(f"injected at {fault.point}")
        elif fault.kind is FaultKind.BASE_EXCEPTION:
            raised = InjectedInterrupt(f"injected at {fault.point}")
        else:
            raised = asyncio.CancelledError(f"injected at {fault.point}")
        self.raised = raised
        raise raised

    def _call_back(self, call: str) -> None:
        agent = self.agent
        assert agent is not None, "install the injector first"
        state = agent.state
        method: Callable[..., object] = getattr(agent, call)
        args: tuple[object, ...] = ()
        if call in ("submit", "provide_input"):
            args = ("said from inside a step",)
        elif call == "resolve_action":
            args = ({call.id: "approve" for call in agent.pending},)
        try:
            result = method(*args)
        except (ReentrantCallError, IllegalTransitionError) as refused:
            self.calls.append((call, state, type(refused).__name__))
            return
        outcome = result.state if isinstance(result, TurnOutcome) else "done"
        self.calls.append((call, state, outcome))

    def _hook_handler(self, kind: HookKind) -> Callable[[HookContext], Any]:
        point = f"hook:{kind}"

        async def handler(context: HookContext) -> None:
            await self.ahit(point)

        handler.__qualname__ = f"fault_injector.{kind}"
        return handler

    def _listener(self, item: AgentEvent) -> None:
        self.hit(listener_point(item))

    def _tool_body(self, name: str, body: Callable[..., Any]) -> Callable[..., Any]:
        point = f"tool:{name}"

        async def faulty(**kwargs: Any) -> Any:
            await self.ahit(point)
            value = body(**kwargs)
            return await value if asyncio.iscoroutine(value) else value

        return faulty


class _FaultyModel:
    """The agent's model, with the injector's point before each call."""

    def __init__(self, model: Model, injector: FaultInjector) -> None:
        self._model, self._injector = model, injector

    @property
    def name(self) -> str:
        return self._model.name

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[JSONObject],
        *,
        on_retry: RetryListener | None = None,
    ) -> ModelResponse:
        await self._injector.ahit("model")
        return await self._model.complete(messages, tools, on_retry=on_retry)


class _FaultyStore(DelegatingStore):
    """The agent's store, with the injector's point before each save."""

    def __init__(self, store: RunStore, injector: FaultInjector) -> None:
        super().__init__(store)
        self._injector = injector

    def save(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        """The fault point ``store.save``, then the inner store's save."""
        self._injector.hit("store.save")
        super().save(snapshot, events, expected_version=expected_version)
