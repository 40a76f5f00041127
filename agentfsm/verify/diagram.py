"""Counterexamples: the paths that break a property, as text and as Graphviz DOT.

This module owns the counterexample types (`Step`, `Counterexample`); `report` builds on
them, and draws them through `counterexample_dot`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import graphviz

from agentfsm.diagrams.dot import FONT as _FONT
from agentfsm.diagrams.dot import dot_label, dot_text, node_id
from agentfsm.diagrams.rendering import render
from agentfsm.errors import DiagramRenderError
from agentfsm.fsm.compiled import CompiledMachine
from agentfsm.states.json import JSONValue
from agentfsm.states.names import MachineName


def _values(mapping: Mapping[str, object]) -> str:
    return ", ".join(f"{name}={value!r}" for name, value in mapping.items())


@dataclass(frozen=True, slots=True)
class Step:
    """One event of a counterexample, sent to one machine."""

    machine: MachineName
    """The machine the event was sent to."""
    event: str
    """The event's name."""
    arguments: Mapping[str, JSONValue]
    """The event's arguments."""
    environment: Mapping[str, object]
    """The environment fields, as set just before the event (replay sets them all)."""
    source: str
    """That machine's state before the event."""
    target: str | None
    """Its state after the event, or None when the event was refused."""

    def describe(self, baseline: Mapping[str, object]) -> str:
        """One line: machine, event(arguments), environment, source → target.

        The environment is shown only where it differs from ``baseline``.
        """
        call = f"{self.event}({_values(self.arguments)})"
        changed = {k: v for k, v in self.environment.items() if baseline.get(k) != v}
        where = f"  [{_values(changed)}]" if changed else ""
        outcome = "refused" if self.target is None else self.target
        return f"{self.machine.value:<4} {call}{where}: {self.source} → {outcome}"


@dataclass(frozen=True, slots=True)
class Counterexample:
    """Why a property fails: a shortest path of events from an initial configuration."""

    property: str
    """The property that fails."""
    message: str
    """What goes wrong at the end of the path."""
    initial: Mapping[str, object]
    """The initial data the path starts from (fields set on a fresh run's data)."""
    steps: tuple[Step, ...] = ()
    """The events, in order, from the initial configuration (both machines)."""
    cycle: int | None = None
    """For a cycle, the index in ``steps`` where the repeated part starts."""
    unreached: tuple[str, ...] = ()
    """For I3, the states no path reaches (there is no path to show)."""
    baseline: Mapping[str, object] = field(default_factory=dict)
    """The first valuation of the environment: steps show only where they differ."""
    loaded: Mapping[str, object] = field(default_factory=dict)
    """Fields set on the data just before the last step, when the failure needs them: the
    values of fields no configuration holds (the queued inputs, the question, the reason,
    a cancellation request) with which that step's effect breaks the effect table. Empty
    for a path as explored."""

    def __str__(self) -> str:
        start = f"from created with {_values(self.initial)}" if self.initial else "from created"
        lines = [f"{self.property}: {self.message}"]
        if self.steps:
            lines.append(f"  shortest path ({len(self.steps)} events, {start}):")
        for number, step in enumerate(self.steps, start=1):
            mark = "  ↻" if self.cycle is not None and number - 1 == self.cycle else "   "
            if self.loaded and number == len(self.steps):
                lines.append(f"        (the data holding {_values(self.loaded)})")
            lines.append(f"  {mark}{number:>3}. {step.describe(self.baseline)}")
        if self.cycle is not None:
            lines.append(f"     (events {self.cycle + 1} to {len(self.steps)} repeat forever)")
        return "\n".join(lines)


_PATH = {"color": "red", "fontcolor": "red", "penwidth": "2.5"}


def _numbers(steps: tuple[Step, ...]) -> dict[tuple[str, str, str | None, str], list[int]]:
    """(machine, source, target, event) → the step numbers that took that edge."""
    used: dict[tuple[str, str, str | None, str], list[int]] = {}
    for number, step in enumerate(steps, start=1):
        used.setdefault((step.machine.value, step.source, step.target, step.event), [])
        used[step.machine.value, step.source, step.target, step.event].append(number)
    return used


def _state_attrs(
    machine: str, state: str, compiled: CompiledMachine, counterexample: Counterexample
) -> dict[str, str]:
    steps = [step for step in counterexample.steps if step.machine.value == machine]
    attrs = {
        "shape": "doublecircle" if state in compiled.final else "box",
        "style": "rounded",
        "fontname": _FONT,
    }
    if any(state in (step.source, step.target) for step in steps):
        attrs.update(style="rounded,filled", fillcolor="lightyellow")
    if f"{machine}.{state}" in counterexample.unreached:
        attrs.update(style="rounded,filled", fillcolor="salmon", xlabel="never reached")
    if steps and state == (steps[-1].target or steps[-1].source):
        attrs.update(color="red", penwidth="2.5")  # where the path leaves this machine
    return attrs


def _cluster(
    graph: graphviz.Digraph,
    compiled: CompiledMachine,
    counterexample: Counterexample,
    used: dict[tuple[str, str, str | None, str], list[int]],
) -> None:
    machine = compiled.name.value
    with graph.subgraph(name=f"cluster_{machine}") as sub:
        sub.attr(label=dot_text(f"{compiled.chart.__name__} ({machine})"), fontname=_FONT)
        sub.node(f"{machine}.__start", label="", shape="point")
        sub.edge(f"{machine}.__start", node_id(machine, compiled.initial))
        for state in compiled.states:
            attrs = _state_attrs(machine, state, compiled, counterexample)
            sub.node(node_id(machine, state), label=dot_text(state), **attrs)
        for t in (t for by in compiled.dispatch.values() for ts in by.values() for t in ts):
            guard = f" [{' and '.join(t.guard_names)}]" if t.guard_names else ""
            steps = used.pop((machine, t.source, t.target, t.event), [])
            numbers = [f"#{', #'.join(map(str, steps))}"] if steps else []
            label = dot_label(t.event + guard, *numbers)
            style = _PATH if steps else {"color": "gray40"}
            sub.edge(
                node_id(machine, t.source),
                node_id(machine, t.target),
                label=label,
                fontname=_FONT,
                **style,
            )


def counterexample_dot(
    run: CompiledMachine, loop: CompiledMachine, counterexample: Counterexample
) -> str:
    """Both machines as one DOT digraph, the counterexample's steps numbered in red.

    Args:
        run: The compiled RunLifecycle the counterexample is of.
        loop: The compiled TurnLoop.
        counterexample: The path to draw; a refused last event is a dashed red loop, and
            states that were never reached (I3) are filled red.

    Returns:
        The DOT source text.
    """
    graph = graphviz.Digraph("counterexample")
    title = f"{counterexample.property}: {counterexample.message}"
    graph.attr(label=dot_text(title), labelloc="t", fontname=_FONT, rankdir="LR")
    used = _numbers(counterexample.steps)
    for compiled in (run, loop):
        _cluster(graph, compiled, counterexample, used)
    for (machine, source, target, event), steps in used.items():
        what = "refused" if target is None else "→ " + target
        graph.edge(
            node_id(machine, source),
            node_id(machine, target or source),
            label=dot_label(f"{event} ({what})", f"#{', #'.join(map(str, steps))}"),
            style="dashed",
            fontname=_FONT,
            **_PATH,
        )
    text: str = graph.source
    return text


def write_diagram(source: str, path: Path) -> list[Path]:
    """Write DOT ``source`` to ``path``, and an SVG beside it when ``dot`` is installed.

    Returns:
        The files written: the DOT file, then the SVG if it could be rendered.
    """
    path.write_text(source, encoding="utf-8")
    written = [path]
    svg = path.with_suffix(".svg")
    try:
        svg.write_bytes(render(source, "svg", str(svg)))
    except DiagramRenderError:
        return written  # no working renderer: the DOT text is still there
    written.append(svg)
    return written
