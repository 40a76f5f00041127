"""Deliberately broken machines: the shipped declarations, rebuilt with one thing changed.

Each is registered in `MUTANTS` with the class of mistake it makes, the property the
verifier must fail on it (under ``strict``, so warnings count), and the length of its
shortest counterexample. They never touch the shipped classes (see `tests.verify.rebuild`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentfsm.fsm import LOOP_MACHINE, RUN_MACHINE, RunData
from agentfsm.fsm import effects as fx
from agentfsm.fsm import guards as g
from tests.verify.rebuild import (
    MUTANTS,
    Edge,
    adding,
    changed,
    guarded,
    mutant,
    rebuild,
    without,
)

__all__ = ["MUTANTS", "ReopeningRun", "loop_thinking"]

Pair = tuple[type[Any], type[Any]]
RUN, LOOP = RUN_MACHINE, LOOP_MACHINE
SHIPPED_RUN, SHIPPED_LOOP = RUN_MACHINE.chart, LOOP_MACHINE.chart


def run_with(name: str, *edits: Any, **options: Any) -> Pair:
    """The shipped loop with a rebuilt run whose edges went through ``edits`` in turn."""

    def edit(edges: list[Edge]) -> list[Edge]:
        for one in edits:
            edges = one(edges)
        return edges

    return rebuild(RUN, name, edit=edit, **options), SHIPPED_LOOP


def loop_with(name: str, *edits: Any, **options: Any) -> Pair:
    """The shipped run with a rebuilt loop."""

    def edit(edges: list[Edge]) -> list[Edge]:
        for one in edits:
            edges = one(edges)
        return edges

    return SHIPPED_RUN, rebuild(LOOP, name, edit=edit, **options)


def acting(only: Any, *actions: Any) -> Any:
    """An edit: every edge whose one action is ``only`` runs ``actions`` instead."""

    def edit(edges: list[Edge]) -> list[Edge]:
        return [
            Edge(e.event, e.source, e.target, e.cond, actions, e.internal)
            if e.on == (only,)
            else e
            for e in edges
        ]

    return edit


# -- guards and effects the mutants use -------------------------------------------------------


def never(model: RunData, **_: object) -> bool:
    """A guard that cannot hold while I8 does."""
    return model.iteration > model.max_iterations


def any_call(model: RunData, tool_calls: object = 0, **_: object) -> bool:
    """Some call in the response: overlaps asks_user_only and may_run_now."""
    return isinstance(tool_calls, int) and tool_calls > 0


def peeking(model: RunData, **args: object) -> bool:
    """decides_every_pending_call, but it leaves a mark on the data when it is asked."""
    model.reason = "peeked"
    return g.decides_every_pending_call(model, **args)


def counts_decisions(model: RunData, decisions: object = None, **_: object) -> bool:
    """As many decisions as pending calls: the right count for the wrong ids passes."""
    return (
        isinstance(decisions, Mapping)
        and bool(model.pending)
        and (len(decisions) == len(model.pending))
    )


def any_decision(model: RunData, decisions: object = None, **_: object) -> bool:
    """Some decision, for some call."""
    return isinstance(decisions, Mapping) and bool(decisions) and bool(model.pending)


def message_only(model: RunData, text: object = None, **_: object) -> bool:
    """submit_allowed without the turn limit."""
    return isinstance(text, str) and bool(text.strip())


def calls_only(model: RunData, calls: object = None, **_: object) -> bool:
    """has_calls as it was before 2026-12-05: any deadline, even one that is no time."""
    return g.has_calls(model, calls=calls)


def deadline_compared(model: RunData, now: float = 0.0, **_: object) -> bool:
    """deadline_passed, forgetting that a wait may have no deadline (TypeError on None)."""
    return now >= model.deadline  # type: ignore[operator]  # the bug under test


def first_pending_decided(model: RunData, decisions: Any = None, **_: object) -> bool:
    """Looks at the first pending call without asking whether there is one (IndexError)."""
    return model.pending[0] in decisions


def record_float_deadline(
    model: RunData, source: object = None, calls: Any = (), deadline: Any = None, **_: object
) -> None:
    """record_pending, converting a missing deadline too (TypeError on None)."""
    model.pending = tuple(calls)
    model.deadline = float(deadline)


def one_more_turn(model: RunData, source: object = None, **_: object) -> None:
    """Counts a turn."""
    model.turn += 1


def record_deadline_only(
    model: RunData, source: object = None, deadline: object = None, **_: object
) -> None:
    """record_pending, forgetting the calls."""
    model.deadline = float(deadline) if isinstance(deadline, int | float) else None


def record_a_stranger(model: RunData, source: object = None, calls: Any = (), **args: Any) -> None:
    """record_pending, plus an id that is no call of the response."""
    fx.record_pending(model, source, calls=[*calls, "c9"], **args)


def record_twice(model: RunData, source: object = None, calls: Any = (), **args: Any) -> None:
    """record_pending, every id twice."""
    fx.record_pending(model, source, calls=[*calls, *calls], **args)
    model.pending = (*model.pending, *model.pending)


def answered_always(model: RunData, source: object = None, **_: object) -> None:
    """finish_turn, forgetting the iteration cap."""
    model.reason = "answered"


def after_an_error(model: RunData, **_: object) -> bool:
    """Reads the turn's reason, which no configuration holds."""
    return model.reason == "error"


def queue_empty(model: RunData, **_: object) -> bool:
    """Reads the queue, which no configuration holds."""
    return not model.queued


def named_run(model: RunData, **_: object) -> bool:
    """Reads the run id, which never varies."""
    return model.run_id != ""


def loop_thinking(model: RunData, **_: object) -> bool:
    """The loop is thinking: never so when the Agent has failed the run."""
    return model.loop_state == "thinking"


def run_waits_for_action(model: RunData, **_: object) -> bool:
    """The run waits in requires_action: the Agent sends no loop event then."""
    return model.state == "requires_action" and model.iteration < model.max_iterations


def loop_asks(model: RunData, **_: object) -> bool:
    """The loop awaits an answer while the run is busy: only between two coupled events."""
    return model.loop_state == "awaiting_input"


# -- the properties the verifier always had ----------------------------------------------------


@mutant("I1", "I1", 2)
def edge_out_of_shutdown() -> Pair:
    # python-statemachine refuses transitions out of a final state, so shutdown is declared
    # non-final here; the verifier knows it by name (Domains.absorbing).
    return run_with("ReopeningRun", adding(Edge("reopen", "shutdown", "ready")), final=frozenset())


@mutant("guard", "conformance", 3)
def complete_without_guard() -> Pair:
    return run_with("EagerRun", guarded("complete", "busy", "completed"))


@mutant("guard", "conformance", 3)
def cancel_while_a_tool_runs() -> Pair:
    # Only the spec's guard reads at_boundary here: the verifier must still vary it.
    return run_with("HastyRun", guarded("cancel", "busy", "failed"))


@mutant("guard", "conformance", 5)
def submit_past_the_turn_limit() -> Pair:
    return run_with("Unlimited", guarded("submit", "completed", "busy", message_only))


@mutant("guard", "conformance", 3)
def wait_with_a_deadline_that_is_no_time() -> Pair:
    return run_with("Undated", guarded("need_action", "busy", "requires_action", calls_only))


@mutant("I3", "I3", 0)
def state_with_no_way_in() -> Pair:
    return run_with(
        "LimboRun",
        adding(Edge("leave", "limbo", "ready")),
        states=["limbo"],
        validate_disconnected_states=False,
    )


@mutant("I3", "I3", 0)
def guard_that_never_holds() -> Pair:
    # Connected in the graph (so python-statemachine accepts it), unreachable in fact.
    return loop_with("NeverExhausted", guarded("tools_finished", "acting", "exhausted", never))


@mutant("I2", "I2", 3)
def wait_with_only_an_answer_out() -> Pair:
    quiet = ("cancel", "expire")
    return run_with(
        "StuckRun",
        lambda edges: [
            e for e in edges if (e.source, e.event) not in {("input_required", q) for q in quiet}
        ],
    )


@mutant("I2", "I2", 3)
def loop_wait_without_abort() -> Pair:
    return loop_with("StuckLoop", without("abort", "awaiting_input"))


@mutant("bounded-loop", "bounded-loop", 4)
def loop_that_does_not_count() -> Pair:
    return SHIPPED_RUN, rebuild(LOOP, "UncountedLoop", enters={"thinking": ()})


@mutant("I8", "I8", 4)
def loop_without_a_cap() -> Pair:
    return loop_with("UncappedLoop", guarded("tools_finished", "acting", "thinking"))


@mutant("determinism", "determinism", 3)
def overlapping_guards() -> Pair:
    return loop_with(
        "OverlappingLoop", guarded("model_replied", "thinking", "awaiting_action", any_call)
    )


@mutant("I4", "I4", 4)
def guard_with_a_side_effect() -> Pair:
    return run_with("PeekingRun", guarded("resolve_action", "requires_action", "busy", peeking))


def counting_refusal(model: RunData, **args: object) -> bool:
    """submit_allowed, but it counts a turn each time it is asked."""
    held = g.submit_allowed(model, **args)
    model.turn += 1
    return held


def clears_when_refusing(model: RunData, **args: object) -> bool:
    """decides_every_pending_call, but a refusal forgets the pending calls."""
    held = g.decides_every_pending_call(model, **args)
    if not held:
        model.pending = ()
    return held


def off_by_one(model: RunData, **_: object) -> bool:
    """below_max_iterations, one too many."""
    return model.iteration <= model.max_iterations


@mutant("I1", "I1", 2)
def shutdown_can_be_paused() -> Pair:
    edge = Edge("pause", "shutdown", "paused", on=(fx.remember_pause,))
    return run_with("PausableShutdown", adding(edge), final=frozenset())


@mutant("I1", "I1", 2)
def shutdown_restarts() -> Pair:
    return run_with("Restarting", adding(Edge("start", "shutdown", "ready")), final=frozenset())


@mutant("I2", "I2", 2)
def pause_without_a_way_out() -> Pair:
    return run_with(
        "TrappedPause",
        without("resume", "paused"),
        without("shutdown", "paused"),
        validate_trap_states=False,
        validate_final_reachability=False,
    )


@mutant("I3", "I3", 0)
def input_required_without_a_way_in() -> Pair:
    return run_with("NeverAsks", without("need_input", "busy"), validate_disconnected_states=False)


@mutant("I4", "I4", 2)
def refusal_that_counts_a_turn() -> Pair:
    return run_with("CountingRefusal", guarded("submit", "ready", "busy", counting_refusal))


@mutant("I4", "I4", 4)
def refusal_that_forgets_the_calls() -> Pair:
    return run_with(
        "ForgetfulRefusal",
        guarded("resolve_action", "requires_action", "busy", clears_when_refusing),
    )


@mutant("I8", "I8", 4)
def cap_off_by_one() -> Pair:
    return loop_with("OffByOne", guarded("tools_finished", "acting", "thinking", off_by_one))


@mutant("I8", "I8", 3)
def failed_call_retried_uncapped() -> Pair:
    return loop_with("RetryingModel", adding(Edge("retry_call", "thinking", "thinking")))


@mutant("determinism", "determinism", 3)
def answered_without_a_guard() -> Pair:
    return loop_with("EagerAnswer", guarded("model_replied", "thinking", "answered"))


@mutant("determinism", "determinism", 4)
def resume_to_ready_without_a_guard() -> Pair:
    return run_with("AlwaysReady", guarded("resume", "paused", "ready"))


@mutant("bounded-loop", "bounded-loop", 4)
def acting_stalls() -> Pair:
    return loop_with("StallingLoop", adding(Edge("stall", "acting", "acting", internal=True)))


@mutant("bounded-loop", "bounded-loop", 5)
def waits_ping_pong() -> Pair:
    return loop_with(
        "PingPongLoop",
        adding(
            Edge("reask", "awaiting_action", "awaiting_input"),
            Edge("reask", "awaiting_input", "awaiting_action"),
        ),
    )


# -- a row of the table missing ----------------------------------------------------------------


@mutant("missing-row", "conformance", 3)
def no_shutdown_from_paused() -> Pair:
    return run_with("UnclosablePause", without("shutdown", "paused"))


@mutant("missing-row", "conformance", 4)
def no_expire_from_requires_action() -> Pair:
    return run_with("EndlessApproval", without("expire", "requires_action"))


@mutant("missing-row", "conformance", 5)
def no_resume_into_failed() -> Pair:
    return run_with("FailedForever", without("resume", "paused", "failed"))


# -- a row the table does not have -------------------------------------------------------------


@mutant("extra-row", "conformance", 1)
def pause_from_created() -> Pair:
    return run_with(
        "EarlyPause", adding(Edge("pause", "created", "paused", on=(fx.remember_pause,)))
    )


@mutant("extra-row", "conformance", 1)
def submit_from_created() -> Pair:
    edge = Edge("submit", "created", "busy", cond=(g.submit_allowed,), on=(fx.begin_turn,))
    return run_with("UnstartedSubmit", adding(edge))


@mutant("extra-row", "conformance", 5)
def complete_from_requires_action() -> Pair:
    edge = Edge(
        "complete", "requires_action", "completed", cond=(g.turn_finished,), on=(fx.finish_turn,)
    )
    return run_with("CompletesWhileWaiting", adding(edge))


@mutant("extra-row", "conformance", 3)
def busy_skips_to_completed() -> Pair:
    # An event the table does not know, between two states it does: the contract is closed,
    # so this shortcut past the turn loop is an extra row like any other (it passed before).
    return run_with("ShortcutRun", adding(Edge("skip", "busy", "completed")))


# -- effects -------------------------------------------------------------------------------


@mutant("effects", "effects", 4)
def expire_records_cancelled() -> Pair:
    return run_with("MislabelledExpiry", changed("expire", None, on=(fx.cancel_turn,)))


@mutant("effects", "effects", 5)
def resolved_leaves_pending() -> Pair:
    return loop_with("StickyPending", changed("resolved", None, on=()))


@mutant("effects", "effects", 3)
def fail_records_cancelled() -> Pair:
    return run_with("MislabelledFailure", changed("fail", "busy", on=(fx.cancel_turn,)))


@mutant("effects", "effects", 5)
def exhausted_turn_reads_as_answered() -> Pair:
    return run_with("ForgetsTheCap", changed("complete", "busy", on=(answered_always,)))


# -- effects on what no configuration holds (queued inputs, a cancellation request) ---------


def record_and_drop_the_queue(
    model: RunData, source: object = None, calls: Any = (), **args: Any
) -> None:
    """record_pending, and the inputs queued while busy are lost."""
    fx.record_pending(model, source, calls=calls, **args)
    model.queued = ()


def pause_and_drop_the_queue(model: RunData, source: object = None, **_: object) -> None:
    """remember_pause, and the inputs queued while busy are lost."""
    fx.remember_pause(model, source)
    model.queued = ()


def clear_and_forget_the_interrupt(model: RunData, source: object = None, **_: object) -> None:
    """clear_pending, and an interrupt the user asked for is forgotten."""
    fx.clear_pending(model, source)
    model.cancel_requested = False


@mutant("effects", "effects", 3)
def need_action_drops_the_queue() -> Pair:
    return run_with(
        "QueueDroppingWait", changed("need_action", "busy", on=(record_and_drop_the_queue,))
    )


@mutant("effects", "effects", 2)
def pause_drops_the_queue() -> Pair:
    return run_with("QueueDroppingPause", changed("pause", None, on=(pause_and_drop_the_queue,)))


@mutant("effects", "effects", 5)
def resolved_forgets_the_interrupt() -> Pair:
    return loop_with(
        "InterruptForgettingLoop", changed("resolved", None, on=(clear_and_forget_the_interrupt,))
    )


# -- I5 --------------------------------------------------------------------------------------


@mutant("I5", "I5", 2)
def submit_counts_two_turns() -> Pair:
    return run_with("DoubleTurn", changed("submit", "ready", on=(fx.begin_turn, one_more_turn)))


@mutant("I5", "I5", 3)
def queued_input_counts_a_turn() -> Pair:
    return run_with("QueueCountsTurns", acting(fx.queue_input, fx.queue_input, one_more_turn))


@mutant("I5", "I5", 3)
def resume_counts_a_turn() -> Pair:
    return run_with(
        "ResumeCountsTurns", changed("resume", None, on=(fx.forget_pause, one_more_turn))
    )


# -- I6 --------------------------------------------------------------------------------------


@mutant("I6", "I6", 4)
def need_action_forgets_the_calls() -> Pair:
    return run_with("ForgetfulWait", changed("need_action", "busy", on=(record_deadline_only,)))


@mutant("I6", "I6", 4)
def need_action_records_a_stranger() -> Pair:
    return run_with("StrangerWait", changed("need_action", "busy", on=(record_a_stranger,)))


@mutant("I6", "I6", 4)
def need_action_records_each_call_twice() -> Pair:
    return run_with("EchoingWait", changed("need_action", "busy", on=(record_twice,)))


# -- call ids: a guard that counts instead of matching ---------------------------------------


@mutant("call-ids", "conformance", 4)
def resolve_action_counts_decisions() -> Pair:
    return run_with(
        "CountingRun", guarded("resolve_action", "requires_action", "busy", counts_decisions)
    )


@mutant("call-ids", "conformance", 5)
def resolved_counts_decisions() -> Pair:
    return loop_with(
        "CountingLoop",
        changed("resolved", None, cond=(counts_decisions,)),
    )


@mutant("call-ids", "conformance", 4)
def resolve_action_takes_any_decision() -> Pair:
    return run_with(
        "CarelessRun", guarded("resolve_action", "requires_action", "busy", any_decision)
    )


# -- guards and effects that raise -----------------------------------------------------------


@mutant("raises", "exceptions", 4)
def expire_without_a_deadline() -> Pair:
    return run_with("NaiveExpiry", changed("expire", None, cond=(deadline_compared,)))


@mutant("raises", "exceptions", 6)
def resolve_looks_at_the_first_call() -> Pair:
    return run_with(
        "FirstCallRun",
        guarded("resolve_action", "requires_action", "busy", first_pending_decided),
    )


@mutant("raises", "exceptions", 3)
def effect_converts_a_missing_deadline() -> Pair:
    return run_with("StrictDeadline", changed("need_action", "busy", on=(record_float_deadline,)))


def interrupt_once(
    model: RunData, source: object = None, text: object = None, **_: object
) -> None:
    """interrupt_turn, assuming no interrupt is pending (a second one raises)."""
    if model.cancel_requested:
        raise RuntimeError("an interrupt is already pending")
    fx.interrupt_turn(model, source, text=text)


@mutant("raises", "exceptions", 3)
def second_interrupt_raises() -> Pair:
    return run_with("SingleInterruptRun", acting(fx.interrupt_turn, interrupt_once))


# -- vacuity: a guard reads what the exploration does not vary -------------------------------


@mutant("varied", "varied", 4)
def retry_reads_the_reason() -> Pair:
    edge = Edge("retry", "failed", "busy", cond=(after_an_error,), on=(fx.begin_turn,))
    return run_with("RetryingRun", adding(edge))


@mutant("varied", "varied", 2)
def submit_reads_the_queue() -> Pair:
    return run_with(
        "QueueShySubmit", guarded("submit", "ready", "busy", g.submit_allowed, queue_empty)
    )


@mutant("varied", "varied", 2)
def pause_reads_the_run_id() -> Pair:
    return run_with("NamedPause", guarded("pause", "ready", "paused", named_run))


# -- coverage only through interleavings the Agent cannot produce ----------------------------


@mutant("agent-coverage", "agent-coverage", 4)
def retry_while_the_loop_thinks() -> Pair:
    edge = Edge("retry", "failed", "busy", cond=(loop_thinking,))
    return run_with("ThinkingRetry", adding(edge))


@mutant("agent-coverage", "agent-coverage", 5)
def nudge_while_the_run_waits() -> Pair:
    edge = Edge("nudge", "acting", "thinking", cond=(run_waits_for_action,))
    return loop_with("NudgingLoop", adding(edge))


@mutant("agent-coverage", "agent-coverage", 4)
def escalate_while_the_loop_asks() -> Pair:
    edge = Edge("escalate", "busy", "requires_action", cond=(loop_asks,))
    return run_with("EscalatingRun", adding(edge))


# -- a subclass that changes its parent's states ---------------------------------------------


@mutant("subclass", "refused", 0)
def subclass_pauses_from_created() -> Pair:
    parent = rebuild(RUN, "FreshRun")
    child = type("EarlyPausingRun", (parent,), {"early": parent.created.to(parent.paused)})
    return child, SHIPPED_LOOP


@mutant("subclass", "refused", 0)
def subclass_adds_an_escalation() -> Pair:
    from statemachine import State

    parent = rebuild(RUN, "FreshRun")
    escalated = State()
    members = {
        "escalated": escalated,
        "escalate": parent.busy.to(escalated),
        "settle": escalated.to(parent.failed),
    }
    return type("EscalatingSubclass", (parent,), members), SHIPPED_LOOP


@mutant("subclass", "refused", 0)
def loop_subclass_retries_a_round() -> Pair:
    parent = rebuild(LOOP, "FreshLoop")
    child = type("RetryingLoop", (parent,), {"again": parent.acting.to(parent.acting)})
    return SHIPPED_RUN, child


ReopeningRun = edge_out_of_shutdown()[0]
"""A run whose shutdown can be left: for ``agentfsm verify --run`` (which names a class)."""
