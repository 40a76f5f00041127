"""Fault injection: property-test that no failure strands your Agent (lifecycle.md I12, I13).

`FaultInjectingMachine` is an `AgentStateMachine` that also arms faults: hypothesis picks a
callback point of your agent (its model, each hook, each listener event, each tool body, the
store's save) and a fault (an `Exception`, `KeyboardInterrupt`, `SystemExit`, another
`BaseException`, an `asyncio.CancelledError`, the cancellation of the task awaiting the
Agent, or a re-entrant call back into the run), and after every step checks, besides the
invariants the base machine checks, that the run is at rest in a named state (I12: never
left busy with no step running, unless the store refused a save, then it is what the store
holds), that the fault reached the caller, never swallowed, and that re-entrant calls kept
the contract (I13)::

    class MyAgentFaults(FaultInjectingMachine):
        def make_agent(self, model: ScriptedModel, store: RunStore | None) -> Agent:
            return Agent(model, tools=[lookup, refund], store=store, clock=self.clock)

    TestMyAgentFaults = MyAgentFaults.TestCase

Needs hypothesis (the ``testing`` extra).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant

from agentfsm._compat import StrEnum
from agentfsm.agent.core import Agent
from agentfsm.agent.vocabulary import AgentEvent, TurnOutcome
from agentfsm.errors import IllegalTransitionError, ReentrantCallError
from agentfsm.fsm.trace import LLMCallTrace, LLMRetryTrace, ToolExecutionTrace, UserInputTrace
from agentfsm.llm.base import Model, ModelResponse, RetryListener
from agentfsm.states.events import Event
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message
from agentfsm.states.names import LoopEvent, MachineName, RecordKind, RunEvent, RunState
from agentfsm.stores.base import RunStore, RunSummary
from agentfsm.stores.snapshot import Snapshot
from agentfsm.testing.invariants import InvariantError
from agentfsm.testing.stateful import AgentStateMachine
from agentfsm.tools.hooks import HookContext, HookKind

__all__ = [
    "Fault",
    "FaultInjectingMachine",
    "FaultInjector",
    "FaultKind",
    "InjectedError",
    "InjectedInterrupt",
    "fault_points",
    "injected_faults",
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


class InjectedError(RuntimeError):
    """The `Exception` an armed fault raises."""


class InjectedInterrupt(BaseException):
    """The `BaseException` (neither `Exception`, `KeyboardInterrupt` nor `SystemExit`)."""


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
                registry._tools[found.name] = faulty

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


class _FaultyStore:
    """The agent's store, with the injector's point before each save."""

    def __init__(self, store: RunStore, injector: FaultInjector) -> None:
        self._store, self._injector = store, injector

    def save(
        self,
        snapshot: Snapshot,
        events: Sequence[Event],
        *,
        expected_version: int | None,
    ) -> None:
        self._injector.hit("store.save")
        self._store.save(snapshot, events, expected_version=expected_version)

    def load(self, run_id: str) -> Snapshot | None:
        return self._store.load(run_id)

    def events(self, run_id: str, after_seq: int = 0) -> list[Event]:
        return self._store.events(run_id, after_seq)

    def list_runs(self) -> list[RunSummary]:
        return self._store.list_runs()

    def delete(self, run_id: str) -> None:
        self._store.delete(run_id)

    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> _FaultyStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class FaultInjectingMachine(AgentStateMachine):
    """An `AgentStateMachine` that arms faults at your agent's callback points (I12, I13).

    Subclass it and implement ``make_agent`` exactly as for `AgentStateMachine`. Besides its
    rules, hypothesis arms one fault at a time (`injected_faults` over `fault_points`); besides its
    invariants, after every step:

    - the fault's exception reached the caller (never swallowed), or nothing escaped;
    - I12: the run is at rest in a state lifecycle.md names, never busy with no step
      running, unless the store refused a save (then it is exactly what the store holds);
      a turn a cancellation ended failed with reason ``cancelled``; an open round exists
      only while the run waits or is paused;
    - I13: a re-entrant call either was refused (`ReentrantCallError`, or
      `IllegalTransitionError` where the run's state has no such transition) or kept its
      meaning: a cancel or pause accepted while busy took effect.

    Whether each invariant holds is judged only from the agent's public behaviour and its
    store, so the machine catches an Agent that strands a run however it does it. Narrow
    `fault_kinds` or `points` to aim the search.
    """

    fault_kinds: Sequence[FaultKind] = tuple(FaultKind)
    """The kinds of fault hypothesis picks from."""
    patience: int = 4
    """Steps an armed fault waits for its point before it is dropped."""

    def __init__(self) -> None:
        super().__init__()
        self.injector = FaultInjector()
        """Strikes the armed fault."""
        self.escaped: BaseException | None = None
        """What escaped the last step because of a fault."""
        self._step_transitions = 0
        self._points: Sequence[str] = ()
        self._waited = 0
        self._stored_busy = False

    @initialize()
    def create_the_agent(self) -> None:
        """Build, listen to and start the agent; then wrap its callback points."""
        super().create_the_agent()
        agent = self._agent()
        self.injector.install(agent)
        self.injector.marker = lambda: len(self.transitions)
        self._points = self.points(agent)

    def points(self, agent: Agent) -> Sequence[str]:
        """The callback points faults strike at: all of `fault_points` by default."""
        return fault_points(agent)

    def _do(self, action: str, data: st.DataObject) -> None:
        """Arm a fault (most of the time, one at a time), then do ``action``."""
        if self.injector.fault is None and data.draw(st.integers(0, 3), label="skip arming") < 3:
            self.injector.arm(
                data.draw(injected_faults(self._points, self.fault_kinds), label="fault")
            )
            self._waited = 0
        super()._do(action, data)

    def _act(self, event: str, action: Callable[..., TurnOutcome], *args: object) -> bool:
        self.injector.begin_step()
        self.escaped = None
        self._step_transitions = len(self.transitions)
        try:
            took = super()._act(event, action, *args)
        except BaseException as escaped:
            if not self._injected(escaped):
                raise
            self.escaped = escaped
            took = any(e.machine == "run" and e.event == event for e in self._step_events())
        self._check_the_fault_surfaced()
        self.the_run_is_at_rest()
        self.reentrant_calls_kept_the_contract()
        self._waited += 1
        if self._waited >= self.patience:
            self.injector.disarm()  # its point was not reached: let another be armed
        return took

    def _injected(self, escaped: BaseException) -> bool:
        struck = self.injector.struck
        if struck is None:
            return False
        if self.injector.raised is not None:
            return escaped is self.injector.raised
        return struck.kind is FaultKind.TASK_CANCELLED and isinstance(
            escaped, asyncio.CancelledError
        )

    def _check_the_fault_surfaced(self) -> None:
        raised = self.injector.raised
        struck = self.injector.struck
        if struck is not None and struck.kind is FaultKind.TASK_CANCELLED:
            # A cancellation that reached the Agent at an await must reach the caller too.
            _check(
                self.escaped is not None or not self.injector.awaited,
                "I12",
                f"the cancellation of the awaiting task ({struck}) was swallowed",
            )
        if raised is None or isinstance(raised, Exception) or self.escaped is raised:
            return
        # A BaseException (KeyboardInterrupt, SystemExit, a cancellation…) must reach the
        # caller: the Agent may settle the run first, never swallow it.
        _check(False, "I12", f"{raised!r} struck at {self.injector.struck} and was swallowed")

    @invariant()
    def the_run_is_at_rest(self) -> None:
        """I12: at rest in a named state, or, after a refused save, what the store holds."""
        if self.agent is None:
            return
        agent = self.agent
        _check(agent.state in tuple(RunState), "I12", f"{agent.state!r} is not a named state")
        stored = agent.store.load(agent.run_id) if agent.store is not None else None
        refused = self.escaped is not None and self._struck_at("store.save")
        if refused:
            # The store refused a save: the run is what it holds, busy included, until the
            # application ends that turn (cancel) or takes it up (start).
            self._stored_busy = stored is not None and stored.state == RunState.BUSY
        if agent.state != RunState.BUSY:
            self._stored_busy = False
        if agent.state == RunState.BUSY:
            _check(
                self._stored_busy and stored is not None and stored.state == RunState.BUSY,
                "I12",
                f"the run is left busy with no step running (after {self.injector.struck})",
            )
        if refused and stored is not None:
            live = (agent.state, agent.turn, agent.messages)
            held = (stored.state, stored.turn, stored.messages)
            _check(live == held, "I12", f"after a refused save the run is {live}, not {held}")
        struck = self.injector.struck
        after = self.transitions[max(self._step_transitions, self.injector.struck_at) :]
        ended = [e for e in after if e.machine == "run" and e.target == "failed"]
        landed = struck is not None and (
            struck.kind is FaultKind.CANCELLED_ERROR or self.injector.awaited
        )
        if landed and struck is not None and struck.kind in CANCELLATIONS and ended:
            _check(
                agent.reason == "cancelled" or agent.state != RunState.FAILED,
                "I12",
                f"a cancellation ({struck}) ended the turn with reason {agent.reason!r}",
            )

    def reentrant_calls_kept_the_contract(self) -> None:
        """I13: a cancel or pause accepted mid-step took effect; the others were refused."""
        events = [e.event for e in self._step_events() if e.machine == "run"]
        for call, state, came in self.injector.calls:
            refused = came in ("ReentrantCallError", "IllegalTransitionError")
            if not refused and call == "cancel":
                _check(
                    "cancel" in events or "fail" in events,
                    "I13",
                    f"cancel accepted in {state} was dropped: the step made {events}",
                )
            elif not refused and call == "pause":
                _check("pause" in events, "I13", f"pause accepted in {state} was dropped")
            elif came not in ("ReentrantCallError", "IllegalTransitionError"):
                # Only a submit while busy (the input policy), a cancel or a pause has a
                # meaning mid-step; anything else must be refused.
                _check(
                    call in ("cancel", "pause") or (call == "submit" and state == "busy"),
                    "I13",
                    f"{call} was accepted from inside a step (in {state}): it came to {came}",
                )

    def _struck_at(self, point: str) -> bool:
        struck = self.injector.struck
        return struck is not None and struck.point == point

    def _step_events(self) -> list[Event]:
        return self.transitions[self._step_transitions :]


def _check(condition: object, invariant_name: str, message: str) -> None:
    if not condition:
        raise InvariantError(invariant_name, message)
