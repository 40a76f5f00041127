"""RunLifecycle: the run's formal states (the contract §1), declared with python-statemachine.

This class is the declaration and the reference semantics. Runs do not dispatch through it
at run time: `agentfsm.fsm.compiled` compiles it once into a shared table that does the
same thing faster, and a differential property test proves the two agree.
"""

from __future__ import annotations

from statemachine import Event, State, StateChart

from agentfsm.fsm import effects as fx
from agentfsm.fsm import guards as g
from agentfsm.fsm.data import RunData


class RunLifecycle(StateChart[RunData]):
    """The run: created → ready → busy ⇄ waits → completed / failed → … → shutdown.

    The model is the run's `RunData`; the state lives in its ``state`` field.
    """

    allow_event_without_transition = False  # I4: an illegal event raises, never passes
    catch_errors_as_events = False  # a failing guard or effect is a bug: let it propagate

    created = State(initial=True)
    ready = State()
    busy = State()
    requires_action = State()
    input_required = State()
    completed = State()
    failed = State()
    paused = State()
    shutdown = State(final=True)

    start = created.to(ready)
    submit = (
        ready.to(busy, cond=g.submit_allowed, on=fx.begin_turn)
        | completed.to(busy, cond=g.submit_allowed, on=fx.begin_turn)
        | failed.to(busy, cond=g.submit_allowed, on=fx.begin_turn)
        | busy.to(busy, internal=True, cond=g.input_queued, on=fx.queue_input)
        | busy.to(busy, internal=True, cond=g.input_interrupts, on=fx.interrupt_turn)
    )
    need_action = busy.to(requires_action, cond=g.has_calls, on=fx.record_pending)
    resolve_action = requires_action.to(busy, cond=g.decides_every_pending_call)
    need_input = busy.to(input_required, cond=g.asks_question, on=fx.record_question)
    provide_input = input_required.to(busy, cond=g.has_answer)
    complete = busy.to(completed, cond=g.turn_finished, on=fx.finish_turn)
    fail = busy.to(failed, on=fx.record_error)
    cancel = (
        busy.to(failed, cond=g.at_boundary, on=fx.cancel_turn)
        | requires_action.to(failed, on=fx.cancel_turn)
        | input_required.to(failed, on=fx.cancel_turn)
    )
    expire = requires_action.to(failed, cond=g.deadline_passed, on=fx.expire_wait) | (
        input_required.to(failed, cond=g.deadline_passed, on=fx.expire_wait)
    )
    pause = (
        ready.to(paused, on=fx.remember_pause)
        | busy.to(paused, cond=g.at_boundary, on=fx.remember_pause)
        | requires_action.to(paused, on=fx.remember_pause)
        | input_required.to(paused, on=fx.remember_pause)
        | completed.to(paused, on=fx.remember_pause)
        | failed.to(paused, on=fx.remember_pause)
    )
    resume = (  # back to the state it was paused in (a history transition, made explicit)
        paused.to(ready, cond=g.paused_in_ready, on=fx.forget_pause)
        | paused.to(busy, cond=g.paused_in_busy, on=fx.forget_pause)
        | paused.to(requires_action, cond=g.paused_in_requires_action, on=fx.forget_pause)
        | paused.to(input_required, cond=g.paused_in_input_required, on=fx.forget_pause)
        | paused.to(completed, cond=g.paused_in_completed, on=fx.forget_pause)
        | paused.to(failed, cond=g.paused_in_failed, on=fx.forget_pause)
    )
    shutdown_ = Event(  # not from busy: cancel the turn first; named apart from its state
        created.to(shutdown)
        | ready.to(shutdown)
        | requires_action.to(shutdown)
        | input_required.to(shutdown)
        | completed.to(shutdown)
        | failed.to(shutdown)
        | paused.to(shutdown),
        id="shutdown",
    )
