"""TurnLoop: the inner iteration loop of one turn (the contract §2).

Declared with python-statemachine.
Like `RunLifecycle`, this class is the declaration and the reference semantics; runs
dispatch through its compiled table. It shares the run's `RunData` and keeps its state in
the ``loop_state`` field, so its guards see the turn's iteration count.
"""

from __future__ import annotations

from statemachine import State, StateChart

from agentfsm.fsm import effects as fx
from agentfsm.fsm import guards as g
from agentfsm.fsm.data import RunData


class TurnLoop(StateChart[RunData]):
    """thinking → acting → thinking … until answered, exhausted, errored, aborted or rejected.

    Construct it with ``state_field="loop_state"``; entering ``thinking`` counts an iteration.
    """

    allow_event_without_transition = False  # I4: an illegal event raises, never passes
    catch_errors_as_events = False  # a failing guard or effect is a bug: let it propagate

    thinking = State(initial=True, enter=fx.count_iteration)
    acting = State()
    awaiting_action = State()
    awaiting_input = State()
    delegating = State()
    validating = State()
    answered = State(final=True)
    exhausted = State(final=True)
    errored = State(final=True)
    aborted = State(final=True)
    rejected = State(final=True)

    model_replied = (  # the five guards are mutually exclusive and cover every response
        thinking.to(answered, cond=g.no_tool_calls)
        | thinking.to(validating, cond=g.answer_to_validate)
        | thinking.to(awaiting_action, cond=g.needs_action)
        | thinking.to(awaiting_input, cond=g.asks_user_only)
        | thinking.to(acting, cond=g.may_run_now)
    )
    model_failed = thinking.to(errored)
    resolved = awaiting_action.to(
        acting, cond=g.decides_every_pending_call, on=fx.clear_pending
    ) | awaiting_input.to(acting, cond=g.decides_every_pending_call, on=fx.clear_pending)
    tools_finished = acting.to(thinking, cond=g.below_max_iterations) | acting.to(
        exhausted, cond=g.at_max_iterations
    )
    input_requested = acting.to(awaiting_input)
    delegated = acting.to(delegating)  # a call runs a sub-agent (agentfsm.agent.children)
    child_returned = delegating.to(acting)
    child_asked = delegating.to(awaiting_action, cond=g.child_needs_action) | delegating.to(
        awaiting_input, cond=g.child_asks_user
    )
    abort = (
        thinking.to(aborted)
        | acting.to(aborted)
        | awaiting_action.to(aborted)
        | awaiting_input.to(aborted)
        | delegating.to(aborted)
        | validating.to(aborted)
    )
    output_valid = validating.to(answered)
    output_invalid = validating.to(
        thinking, cond=g.may_retry_output, on=fx.count_invalid_output
    ) | validating.to(rejected, cond=g.output_retries_spent, on=fx.count_invalid_output)
