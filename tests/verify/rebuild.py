"""Rebuilding the shipped machines with one thing changed, for the mutant suite (`mutants`).

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

from agentfsm.fsm import CompiledMachine

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


Edit = Callable[[list[Edge]], list[Edge]]


def without(event: str, source: str, target: str | None = None) -> Edit:
    """Drop the edges of ``event`` from ``source`` (to ``target``, if given)."""

    def edit(edges: list[Edge]) -> list[Edge]:
        kept = [
            e
            for e in edges
            if (e.event, e.source) != (event, source) or target not in (None, e.target)
        ]
        assert len(kept) < len(edges), f"no edge {event} from {source}"
        return kept

    return edit


def changed(event: str, source: str | None, **fields: Any) -> Edit:
    """Replace fields (``cond``, ``on``) of the edges of ``event`` (from ``source``, or all)."""

    def edit(edges: list[Edge]) -> list[Edge]:
        hit = [e.event == event and source in (None, e.source) for e in edges]
        assert any(hit), f"no edge {event} from {source}"
        return [replace(e, **fields) if h else e for e, h in zip(edges, hit, strict=True)]

    return edit


def guarded(event: str, source: str, target: str, *cond: Callback) -> Edit:
    """Replace the guards of the edge ``event`` ``source`` → ``target``."""

    def edit(edges: list[Edge]) -> list[Edge]:
        hit = [(e.event, e.source, e.target) == (event, source, target) for e in edges]
        assert any(hit), f"no edge {event} {source}→{target}"
        return [replace(e, cond=cond) if h else e for e, h in zip(edges, hit, strict=True)]

    return edit


def adding(*more: Edge) -> Edit:
    """Add edges."""
    return lambda edges: [*edges, *more]


Builder = Callable[[], tuple[type[Any], type[Any]]]


@dataclass(frozen=True)
class Mutant:
    """A broken pair of machines, and how the verifier must catch it."""

    build: Builder
    kind: str
    """The class of mistake (``missing-row``, ``effects``, …)."""
    prop: str
    """The property the verifier must fail; ``refused`` when compiling must refuse it."""
    steps: int
    """The length of its shortest counterexample."""


MUTANTS: dict[str, Mutant] = {}
"""name → the mutant; `tests.verify.mutants` fills it."""


def mutant(kind: str, prop: str, steps: int) -> Callable[[Builder], Builder]:
    """Register a builder under its function's name."""

    def register(build: Builder) -> Builder:
        MUTANTS[build.__name__] = Mutant(build, kind, prop, steps)
        return build

    return register
