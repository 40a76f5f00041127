"""Deliberately broken machines: the shipped declarations, rebuilt with one thing changed.

`rebuild` reads a compiled machine back into python-statemachine declarations (states with
their enter actions, transitions with their guards and effects) and declares a fresh
`StateChart` from them, with edits. It never touches the shipped classes: declaring a
subclass that adds transitions to inherited states would add them to the parent's states
too, since python-statemachine shares the `State` objects between the two classes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from statemachine import Event, State, StateChart

from agentfsm.fsm import LOOP_MACHINE, RUN_MACHINE, CompiledMachine, RunData
from agentfsm.fsm import guards as g

Callback = Callable[..., Any]


@dataclass(frozen=True)
class Edge:
    event: str
    source: str
    target: str
    cond: tuple[Callback, ...] = ()
    on: tuple[Callback, ...] = ()
    internal: bool = False


def edges_of(compiled: CompiledMachine) -> list[Edge]:
    return [
        Edge(t.event, t.source, t.target, t.guards, t.effects, t.internal)
        for by_event in compiled.dispatch.values()
        for transitions in by_event.values()
        for t in transitions
    ]


def enters_of(compiled: CompiledMachine) -> dict[str, tuple[Callback, ...]]:
    enters: dict[str, tuple[Callback, ...]] = dict.fromkeys(compiled.states, ())
    enters[compiled.initial] = compiled.initial_enters
    for edge in (t for by in compiled.dispatch.values() for ts in by.values() for t in ts):
        if not edge.internal:
            enters[edge.target] = edge.enters
    return enters


def rebuild(
    compiled: CompiledMachine,
    name: str,
    *,
    edit: Callable[[list[Edge]], Iterable[Edge]] = list,
    states: Iterable[str] = (),
    final: frozenset[str] | None = None,
    enters: dict[str, tuple[Callback, ...]] | None = None,
    **options: bool,
) -> type[Any]:
    """A fresh chart with the compiled machine's states (plus ``states``) and edited edges.

    ``options`` are class attributes, e.g. ``validate_disconnected_states=False`` for a
    mutant that python-statemachine would otherwise refuse to declare.
    """
    finals = compiled.final if final is None else final
    entering = {**enters_of(compiled), **(enters or {})}
    names = [*compiled.states, *states]
    declared = {
        s: State(
            s,
            value=s,
            initial=s == compiled.initial,
            final=s in finals,
            enter=list(entering.get(s, ())),
        )
        for s in names
    }
    events: dict[str, Any] = {}
    for e in edit(edges_of(compiled)):
        transition = declared[e.source].to(
            declared[e.target], cond=list(e.cond), on=list(e.on), internal=e.internal
        )
        events[e.event] = transition if e.event not in events else events[e.event] | transition
    attrs: dict[str, Any] = {
        "allow_event_without_transition": False,
        "catch_errors_as_events": False,
        **options,
        **declared,
    }
    for event, transitions in events.items():
        attrs[f"{event}_" if event in declared else event] = Event(transitions, id=event)
    chart: type[Any] = type(name, (StateChart,), attrs)
    return chart


def _without(event: str, source: str) -> Callable[[list[Edge]], list[Edge]]:
    return lambda edges: [e for e in edges if (e.event, e.source) != (event, source)]


def _guarded(event: str, source: str, target: str, *cond: Callback) -> Callable[..., list[Edge]]:
    def edit(edges: list[Edge]) -> list[Edge]:
        hit = [(e.event, e.source, e.target) == (event, source, target) for e in edges]
        assert any(hit), f"no edge {event} {source}→{target}"
        return [replace(e, cond=cond) if h else e for e, h in zip(edges, hit, strict=True)]

    return edit


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


def _reopen(edges: list[Edge]) -> list[Edge]:
    return [*edges, Edge("reopen", "shutdown", "ready")]


def _no_quiet_exit(edges: list[Edge]) -> list[Edge]:
    return [
        e for e in edges if not (e.source == "input_required" and e.event in {"cancel", "expire"})
    ]


def _limbo(edges: list[Edge]) -> list[Edge]:
    return [*edges, Edge("leave", "limbo", "ready")]


Builder = Callable[[], tuple[type[Any], type[Any]]]
MUTANTS: dict[str, tuple[Builder, str]] = {}
"""name → (builds the (run, loop) pair, the property the verifier must name)."""


def mutant(prop: str) -> Callable[[Builder], Builder]:
    def register(build: Builder) -> Builder:
        MUTANTS[build.__name__] = (build, prop)
        return build

    return register


SHIPPED_RUN, SHIPPED_LOOP = RUN_MACHINE.chart, LOOP_MACHINE.chart


@mutant("I1")
def edge_out_of_shutdown() -> tuple[type[Any], type[Any]]:
    # python-statemachine refuses transitions out of a final state, so shutdown is declared
    # non-final here; the verifier knows it by name (Domains.absorbing).
    run = rebuild(RUN_MACHINE, "ReopeningRun", edit=_reopen, final=frozenset())
    return run, SHIPPED_LOOP


@mutant("conformance")
def complete_without_guard() -> tuple[type[Any], type[Any]]:
    run = rebuild(RUN_MACHINE, "EagerRun", edit=_guarded("complete", "busy", "completed"))
    return run, SHIPPED_LOOP


@mutant("conformance")
def cancel_while_a_tool_runs() -> tuple[type[Any], type[Any]]:
    # Only the spec's guard reads at_boundary here: the verifier must still vary it.
    run = rebuild(RUN_MACHINE, "HastyRun", edit=_guarded("cancel", "busy", "failed"))
    return run, SHIPPED_LOOP


@mutant("I3")
def state_with_no_way_in() -> tuple[type[Any], type[Any]]:
    run = rebuild(
        RUN_MACHINE,
        "LimboRun",
        edit=_limbo,
        states=["limbo"],
        validate_disconnected_states=False,
    )
    return run, SHIPPED_LOOP


@mutant("I3")
def guard_that_never_holds() -> tuple[type[Any], type[Any]]:
    # Connected in the graph (so python-statemachine accepts it), unreachable in fact.
    loop = rebuild(
        LOOP_MACHINE,
        "NeverExhausted",
        edit=_guarded("tools_finished", "acting", "exhausted", never),
    )
    return SHIPPED_RUN, loop


@mutant("I2")
def wait_with_only_an_answer_out() -> tuple[type[Any], type[Any]]:
    run = rebuild(RUN_MACHINE, "StuckRun", edit=_no_quiet_exit)
    return run, SHIPPED_LOOP


@mutant("I2")
def loop_wait_without_abort() -> tuple[type[Any], type[Any]]:
    loop = rebuild(LOOP_MACHINE, "StuckLoop", edit=_without("abort", "awaiting_input"))
    return SHIPPED_RUN, loop


@mutant("bounded-loop")
def loop_that_does_not_count() -> tuple[type[Any], type[Any]]:
    loop = rebuild(LOOP_MACHINE, "UncountedLoop", enters={"thinking": ()})
    return SHIPPED_RUN, loop


@mutant("I8")
def loop_without_a_cap() -> tuple[type[Any], type[Any]]:
    loop = rebuild(
        LOOP_MACHINE, "UncappedLoop", edit=_guarded("tools_finished", "acting", "thinking")
    )
    return SHIPPED_RUN, loop


@mutant("determinism")
def overlapping_guards() -> tuple[type[Any], type[Any]]:
    loop = rebuild(
        LOOP_MACHINE,
        "OverlappingLoop",
        edit=_guarded("model_replied", "thinking", "awaiting_action", any_call),
    )
    return SHIPPED_RUN, loop


@mutant("I4")
def guard_with_a_side_effect() -> tuple[type[Any], type[Any]]:
    run = rebuild(
        RUN_MACHINE,
        "PeekingRun",
        edit=_guarded("resolve_action", "requires_action", "busy", peeking),
    )
    return run, SHIPPED_LOOP


ReopeningRun = edge_out_of_shutdown()[0]
"""A run whose shutdown can be left: for ``agentfsm verify --run`` (which names a class)."""
