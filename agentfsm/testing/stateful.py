"""`AgentStateMachine`: property-test your own Agent by subclassing one class.

Hypothesis drives the agent you build — your tools, hooks, guards and store — with random
user inputs, approvals and denials, answers, cancels, pauses, expiries and shutdowns, while
a scripted model answers with random responses built from your tools' own schemas (valid
and invalid arguments, malformed JSON, unknown tools, model errors). After every step it
checks the invariants of the contract: I1, I4, I5, I6, I7, I8, I9 and, when the agent has a
store, I11::

    class MyAgentMachine(AgentStateMachine):
        def make_agent(self, model: ScriptedModel, store: RunStore | None) -> Agent:
            return Agent(model, tools=[lookup, refund], clock=self.clock, action_timeout=60)

    TestMyAgent = MyAgentMachine.TestCase

Needs hypothesis (the ``testing`` extra).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from agentfsm.agent.core import Agent
from agentfsm.agent.vocabulary import AgentEvent, TurnOutcome
from agentfsm.errors import (
    HookFailedError,
    HookMessageError,
    IllegalTransitionError,
    InvariantError,
)
from agentfsm.llm.base import ModelResponse
from agentfsm.llm.scripted import ScriptedModel
from agentfsm.states.events import Event
from agentfsm.states.messages import Message, ToolCall
from agentfsm.states.names import RunState
from agentfsm.states.tables import RUN_TABLE
from agentfsm.stores.base import RunStore
from agentfsm.stores.memory import MemoryStore
from agentfsm.testing.clock import FakeClock
from agentfsm.testing.invariants import (
    DurabilityProbe,
    assert_history_valid,
    assert_iterations_within_cap,
    assert_pending_valid,
    assert_tools_permitted,
    is_transition,
)
from agentfsm.testing.strategies import (
    UNKNOWN_TOOL_NAMES,
    ModelStep,
    decisions,
    model_responses,
    user_inputs,
)
from agentfsm.tools.policy import Decision

FALLBACK_ANSWER = "That is all I can do."
"""What the scripted model answers once the responses scripted for it run out."""

_WAITING = (RunState.REQUIRES_ACTION, RunState.INPUT_REQUIRED)

ACTIONS = ("submit", "resolve_action", "provide_input", "cancel", "pause", "resume", "expire")
"""What the application may do to a run, besides shutting it down."""

_WEIGHTS = {"submit": 4, "resolve_action": 4, "provide_input": 4, "resume": 2}
# How often `application_acts` picks an allowed action: the moves that make progress most.


@dataclass(frozen=True, slots=True)
class _Before:
    """What an action may not change when it is refused (I4)."""

    state: str
    loop_state: str | None
    turn: int
    iteration: int
    messages: tuple[Message, ...]
    trace: int
    pending: tuple[ToolCall, ...]
    transitions: int
    version: int | None


class AgentStateMachine(RuleBasedStateMachine):
    """A hypothesis state machine that drives your Agent and checks the contract's invariants.

    Subclass it, implement `make_agent`, and expose ``TestCase`` to pytest (or unittest)::

        class MyAgentMachine(AgentStateMachine):
            def make_agent(self, model, store):
                return Agent(model, tools=[lookup], hooks=my_hooks, clock=self.clock)

        TestMyAgent = MyAgentMachine.TestCase

    Build the agent with the ``model`` given (a `ScriptedModel` the machine scripts with
    random responses, answering `FALLBACK_ANSWER` when they run out), pass ``store`` on as
    its store (None if `make_store` returns None), and pass ``clock=self.clock`` if its waits
    have timeouts, so that the machine can make them expire. Override `responses` or
    `inputs` to steer what the model and the user say.

    The invariants checked after every step (the contract §5): I1 (nothing leaves
    ``shutdown``), I4 (a refused action raises `IllegalTransitionError` and changes nothing;
    an action the run's state has no transition for is refused), I5 (``turn`` counts accepted
    submits), I6 (pending calls are unanswered calls of the last assistant message), I7 (tool
    messages follow their calls, in the agent's history and in every request the model
    got), I8 (``iteration ≤ max_iterations``), I9 (no tool body ran unless registered,
    enabled, permitted and valid) and I11 (with a store: every event is stored before it is
    delivered, and the stored run matches the live one between calls).

    A hook of yours that raises fails the turn, as the contract §3 says; the machine
    accepts that (and checks the run is ``failed``, or ``completed`` when the handler was
    ``on_complete``'s). Any other exception fails the test.
    """

    max_calls: int = 3
    """The most tool calls in one scripted response."""
    unknown_tools: Sequence[str] = UNKNOWN_TOOL_NAMES
    """Tool names the model may call that no agent registers."""
    expire_after: Sequence[float] = (0.0, 1.0, 60.0, 3_600.0, 86_400.0)
    """Seconds the clock may move forward in one step."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        """The clock to give the agent (``clock=self.clock``) so its waits can expire."""
        self.model = ScriptedModel(fallback=lambda messages, tools: _fallback())
        """The model the agent is built with; the machine scripts its responses."""
        self.store: RunStore | None = None
        """The store the agent is built with, if any."""
        self.agent: Agent | None = None
        """The agent under test."""
        self.transitions: list[Event] = []
        """Every transition of the run so far, in order."""
        self.decisions: dict[str, Decision] = {}
        """The decision the application gave each call it resolved or answered."""
        self._probe: DurabilityProbe | None = None
        self._responses: st.SearchStrategy[ModelStep] | None = None
        self._submits = 0
        self._shutdown_at: int | None = None
        self._requests_checked = 0

    # -- what a subclass provides --------------------------------------------------------

    def make_agent(self, model: ScriptedModel, store: RunStore | None) -> Agent:
        """Build the agent under test with ``model`` (and ``store``, and ``self.clock``).

        Raises:
            NotImplementedError: Always: a subclass must build its agent.
        """
        raise NotImplementedError("subclass AgentStateMachine and implement make_agent")

    def make_store(self) -> RunStore | None:
        """The store handed to `make_agent`: a fresh `MemoryStore`; None for no store."""
        return MemoryStore()

    def responses(self, agent: Agent) -> st.SearchStrategy[ModelStep]:
        """What the model may answer: `model_responses` over the agent's own tools."""
        return model_responses(
            agent.tools.registry, max_calls=self.max_calls, unknown_names=self.unknown_tools
        )

    def inputs(self) -> st.SearchStrategy[str]:
        """What the user may submit or answer: `user_inputs`."""
        return user_inputs()

    # -- set-up and tear-down --------------------------------------------------------------

    @initialize()
    def create_the_agent(self) -> None:
        """Build the agent, listen to it, and start it if `make_agent` did not."""
        self.store = self.make_store()
        agent = self.make_agent(self.model, self.store)
        self.agent = agent
        self._responses = self.responses(agent)
        store = getattr(agent, "store", None)  # agents without a store skip I11
        if store is not None:
            self._probe = DurabilityProbe(store, agent.run_id)
            agent.add_listener(self._probe)
        agent.add_listener(self._heard)
        if agent.state == RunState.CREATED:
            self._act("start", agent.start)

    def teardown(self) -> None:
        """Close the agent's event loop (and the store)."""
        if self.agent is not None:
            self.agent.close()
        if self.store is not None:
            self.store.close()

    def _heard(self, item: AgentEvent) -> None:
        if isinstance(item, Event) and is_transition(item):
            self.transitions.append(item)
            if str(item.machine) == "run" and item.event == "submit" and item.source != "busy":
                self._submits += 1

    # -- the rules -------------------------------------------------------------------------

    @rule(data=st.data())
    def model_will_respond(self, data: st.DataObject) -> None:
        """Script the model's next response."""
        self._script(data.draw(self._strategy(), label="response"))

    @rule(data=st.data())
    def application_acts(self, data: st.DataObject) -> None:
        """Do one of the actions the run's state has a transition for (or any, if none)."""
        state = self._agent().state
        allowed = [
            name
            for name in ACTIONS
            if name in RUN_TABLE.allowed(state)
            for _ in range(_WEIGHTS.get(name, 1))
        ]
        action = data.draw(st.sampled_from(allowed or ACTIONS), label="action")
        self._do(action, data)

    @rule(data=st.data())
    def application_tries_anything(self, data: st.DataObject) -> None:
        """Do any action, allowed or not (I4: a refused one changes nothing)."""
        self._do(data.draw(st.sampled_from(ACTIONS), label="action"), data)

    @rule(seconds=st.sampled_from([0.0, 1.0, 3_600.0, 86_400.0]))
    def time_passes(self, seconds: float) -> None:
        """Move the clock forward (a due wait expires at the next call)."""
        self.clock.advance(seconds)

    @rule(chance=st.integers(0, 7))
    def shutdown(self, chance: int) -> None:
        """Shut the run down (one time in eight: it ends everything else)."""
        if chance == 0:
            self._act("shutdown", self._agent().shutdown)
            if self._agent().state == RunState.SHUTDOWN and self._shutdown_at is None:
                self._shutdown_at = len(self.transitions)

    # -- the actions -----------------------------------------------------------------------

    def _do(self, action: str, data: st.DataObject) -> None:
        agent = self._agent()
        if action == "submit":
            script = st.lists(self._strategy(), min_size=1, max_size=3)
            for step in data.draw(script, label="responses"):
                self._script(step)
            self._act("submit", agent.submit, data.draw(self.inputs(), label="text"))
        elif action == "resolve_action":
            self._resolve(data)
        elif action == "provide_input":
            text = data.draw(self.inputs(), label="text")
            pending = [call.id for call in agent.pending]
            if self._act("provide_input", agent.provide_input, text):
                self.decisions.update(dict.fromkeys(pending, Decision.output(text)))
        elif action == "expire":
            self.clock.advance(data.draw(st.sampled_from(self.expire_after), label="seconds"))
            self._act("expire", agent.expire)
        else:
            self._act(action, getattr(agent, action))

    def _resolve(self, data: st.DataObject) -> None:
        agent = self._agent()
        client_side = [
            call.id
            for call in agent.pending
            if (found := agent.tools.registry.find(call.name)) is not None and found.client_side
        ]
        complete = data.draw(st.integers(0, 4), label="complete") > 0
        chosen = data.draw(
            decisions(agent.pending, client_side=client_side, complete=complete),
            label="decisions",
        )
        if self._act("resolve_action", agent.resolve_action, chosen):
            self.decisions.update(chosen)

    # -- the invariants --------------------------------------------------------------------

    @invariant()
    def lifecycle_invariants_hold(self) -> None:
        """I1, I5, I6, I7, I8, I9 and I11 (I4 is checked by every action as it happens).

        Each is a method of its own, which a subclass may extend.
        """
        if self.agent is None:
            return
        self.shutdown_is_absorbing()
        self.turn_counts_accepted_submits()
        self.pending_calls_are_unanswered_calls()
        self.tool_messages_follow_their_calls()
        self.iterations_stay_within_the_cap()
        self.only_permitted_valid_calls_ran()
        self.the_store_has_the_run()

    def shutdown_is_absorbing(self) -> None:
        """I1: once shut down, the run stays so and no transition follows."""
        if self._shutdown_at is not None:
            agent = self._agent()
            _check(agent.state == RunState.SHUTDOWN, "I1", f"left shutdown for {agent.state}")
            after = self.transitions[self._shutdown_at :]
            _check(not after, "I1", f"transitions after shutdown: {after}")

    def turn_counts_accepted_submits(self) -> None:
        """I5: ``turn`` is the number of accepted submits."""
        if self.agent is not None:
            turn = self.agent.turn
            _check(turn == self._submits, "I5", f"turn {turn} after {self._submits} submits")

    def pending_calls_are_unanswered_calls(self) -> None:
        """I6."""
        if self.agent is not None:
            assert_pending_valid(self.agent)

    def tool_messages_follow_their_calls(self) -> None:
        """I7, in the agent's history and in every conversation the model was sent."""
        if self.agent is None:
            return
        agent = self.agent
        # A round is open while the run waits, or is paused in a wait or mid-round (a pause
        # between two tool calls, docs/contract.md §3), or is busy as its store holds it (a save
        # was refused mid-round): its calls' message is the last one.
        messages = agent.messages
        waiting = agent.state in _WAITING or (
            agent.state in (RunState.PAUSED, RunState.BUSY)
            and bool(messages)
            and bool(messages[-1].tool_calls)
        )
        assert_history_valid(messages, open_round=waiting)
        for request in self.model.requests[self._requests_checked :]:
            assert_history_valid(request.messages)
        self._requests_checked = len(self.model.requests)

    def iterations_stay_within_the_cap(self) -> None:
        """I8."""
        if self.agent is not None:
            # The cap is not public on the Agent; the machine reads it from the run's data.
            assert_iterations_within_cap(self.agent, self.agent.max_iterations)

    def only_permitted_valid_calls_ran(self) -> None:
        """I9."""
        if self.agent is not None:
            assert_tools_permitted(
                self.agent.trace,
                self.agent.tools.registry,
                enabled=self.agent.enabled_tools,
                decisions=self.decisions,
            )

    def the_store_has_the_run(self) -> None:
        """I11 between calls (the probe checks it at every event)."""
        if self.agent is not None and self._probe is not None:
            self._probe.assert_at_rest(self.agent)

    # -- driving the agent -----------------------------------------------------------------

    def _agent(self) -> Agent:
        assert self.agent is not None, "the agent is built by the first (initialize) rule"
        return self.agent

    def _strategy(self) -> st.SearchStrategy[ModelStep]:
        assert self._responses is not None
        return self._responses

    def _script(self, step: ModelStep) -> None:
        if not isinstance(step, ModelResponse):
            self.model.fail(step)
        elif step.tool_calls:
            # Renumbered by the model, so call ids are unique across the run.
            self.model.tool_calls(
                *((call.name, call.arguments) for call in step.tool_calls), content=step.content
            )
        else:
            self.model.respond(step)

    def _snapshot(self) -> _Before:
        agent = self._agent()
        stored = None if self._probe is None else self._probe.store.load(agent.run_id)
        return _Before(
            agent.state,
            agent.loop_state,
            agent.turn,
            agent.iteration,
            agent.messages,
            len(agent.trace),
            agent.pending,
            len(self.transitions),
            None if stored is None else stored.version,
        )

    def _act(self, event: str, action: Callable[..., TurnOutcome], *args: object) -> bool:
        """Do one action; check I4 whether it is accepted or refused.

        Returns:
            Whether the run took the action's transition (even if a hook then failed).
        """
        before = self._snapshot()
        try:
            action(*args)
        except IllegalTransitionError as refused:
            self._check_refusal(event, before, refused)
            return self._took(event, before)
        except (HookFailedError, HookMessageError) as failure:
            # the contract §3: the turn fails (an on_complete handler fails once the turn
            # has completed, so the run stays completed); it is never left busy.
            state = self._agent().state
            _check(
                state in (RunState.FAILED, RunState.COMPLETED),
                "§3",
                f"{failure!r} left the run {state}",
            )
            return self._took(event, before)
        expired = event != "expire" and self._expired_first(before)
        state = RunState.FAILED if expired else before.state
        _check(
            event in RUN_TABLE.allowed(state),
            "I4",
            f"{event!r} was accepted in state {state!r}, which has no such transition",
        )
        return self._took(event, before)

    def _expired_first(self, before: _Before) -> bool:
        """Whether the action began by expiring an overdue wait (the run is failed then)."""
        during = self.transitions[before.transitions : before.transitions + 1]
        return bool(during) and (str(during[0].machine), during[0].event) == ("run", "expire")

    def _took(self, event: str, before: _Before) -> bool:
        return any(
            str(e.machine) == "run" and e.event == event
            for e in self.transitions[before.transitions :]
        )

    def _check_refusal(self, event: str, before: _Before, refused: IllegalTransitionError) -> None:
        agent = self._agent()
        during = [(str(e.machine), e.event) for e in self.transitions[before.transitions :]]
        if self._expired_first(before):
            # The wait was overdue: the agent expired it first, then refused the action in
            # the failed state it left (an expiry is a transition of its own).
            _check(
                set(during[1:]) <= {("loop", "abort")} and agent.state == RunState.FAILED,
                "I4",
                f"refusing {event!r} after an expiry, the run made {during}",
            )
            return
        after = self._snapshot()
        _check(
            after == before,
            "I4",
            f"{event!r} was refused in {before.state!r} ({refused}) but the run changed:\n"
            f"  before {before}\n  after  {after}",
        )
        _check(
            (refused.state, refused.event) == (before.state, event),
            "I4",
            f"refusing {event!r} in {before.state!r}, the error names "
            f"{refused.event!r} in {refused.state!r}",
        )


def _check(condition: object, invariant: str, message: str) -> None:
    if not condition:
        raise InvariantError(invariant, message)


def _fallback() -> ModelResponse:
    return ModelResponse(content=FALLBACK_ANSWER)
