"""Counterexample diagrams: both machines as Graphviz DOT, with the path's edges highlighted."""

from __future__ import annotations

from pathlib import Path

import graphviz

from agentfsm.diagrams.dot import FONT as _FONT
from agentfsm.diagrams.dot import dot_label, dot_text, node_id
from agentfsm.diagrams.rendering import render
from agentfsm.errors import DiagramRenderError
from agentfsm.fsm.compiled import CompiledMachine
from agentfsm.verify.report import Counterexample, Step

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
