"""Graphviz DOT for RunLifecycle, TurnLoop, and both together, drawn from the tables.

By default each machine is drawn as a statechart (`agentfsm.diagrams.grouped`): states that
share an edge sit in a group whose border the edge leaves, ``resume`` returns to a history
``H``, internal transitions are written in their state. With ``flat=True`` every row of
`RUN_TABLE` and `LOOP_TABLE` is an edge of its own (`agentfsm.diagrams.flat`). Either way
the same machine always gives byte-identical DOT. Node ids are ``<machine>.<state>``
(``run.busy``, ``loop.thinking``); each node's ``class`` attribute names its kind
(``initial``, ``state``, ``waiting``, ``final``) and, when it is where a run is now,
``current`` — Graphviz copies it into the SVG, so a page can style it.
"""

from __future__ import annotations

from collections.abc import Iterable

from agentfsm import _checks
from agentfsm.diagrams.flat import flat_combined, flat_loop, flat_run
from agentfsm.diagrams.grouped import grouped_combined, grouped_single
from agentfsm.diagrams.style import (
    FONT,
    TRANSITION_MACHINES,
    WAITING,
    EdgeKey,
    StateKind,
    StateSource,
    View,
    check_view,
    dot_label,
    dot_text,
    edge_label,
    node_id,
    path_counts,
    state_kind,
    where_now,
)
from agentfsm.states.events import Event
from agentfsm.states.names import MachineName

__all__ = [
    "FONT",
    "TRANSITION_MACHINES",
    "WAITING",
    "EdgeKey",
    "StateKind",
    "StateSource",
    "View",
    "check_view",
    "combined_diagram",
    "diagram",
    "dot_label",
    "dot_text",
    "edge_label",
    "loop_diagram",
    "node_id",
    "path_counts",
    "run_diagram",
    "state_kind",
    "where_now",
]


def _check_flat(flat: object) -> None:
    if not isinstance(flat, bool):
        _checks.refuse_type("flat", flat, "True (one edge per row) or False (grouped)")


def run_diagram(
    current: StateSource | None = None, events: Iterable[Event] = (), *, flat: bool = False
) -> str:
    """RunLifecycle as DOT: every state and every row of `RUN_TABLE`.

    Args:
        current: Where a run is now (an `Agent` or its `RunData`): its run state is
            highlighted in red and marked ``now``.
        events: A run's event log: each edge it took is drawn in blue, its pen width and a
            ``<n>x`` label saying how often (an edge from a group: how often any of its
            states took it). TurnLoop events are ignored here.
        flat: One edge per row instead of the statechart (groups, ``H``).

    Returns:
        The DOT source text.
    """
    _check_flat(flat)
    if flat:
        return flat_run(current, events)
    return grouped_single(MachineName.RUN, current, events)


def loop_diagram(
    current: StateSource | None = None, events: Iterable[Event] = (), *, flat: bool = False
) -> str:
    """TurnLoop as DOT: every state and every row of `LOOP_TABLE`.

    Args:
        current: Where a run is now: its loop state (if any) is highlighted.
        events: A run's event log: the TurnLoop edges it took, weighted by count.
        flat: One edge per row instead of the statechart.

    Returns:
        The DOT source text.
    """
    _check_flat(flat)
    if flat:
        return flat_loop(current, events)
    return grouped_single(MachineName.LOOP, current, events)


def combined_diagram(
    current: StateSource | None = None, events: Iterable[Event] = (), *, flat: bool = False
) -> str:
    """Both machines as DOT, TurnLoop drawn inside RunLifecycle's ``busy`` (a cluster).

    Grouped, ``busy`` is the cluster ``cluster_busy``: the run's edges into and out of it
    end at its border, and TurnLoop is drawn inside. Flat, a ``busy`` node sits in the
    cluster beside the loop.

    Args:
        current: Where a run is now: its run state and loop state are highlighted, and
            the cluster too while the run is ``busy``.
        events: A run's event log: every edge it took, of either machine, weighted by count.
        flat: One edge per row instead of the statecharts.

    Returns:
        The DOT source text.
    """
    _check_flat(flat)
    if flat:
        return flat_combined(current, events)
    return grouped_combined(current, events)


def diagram(
    view: View = "combined",
    current: StateSource | None = None,
    events: Iterable[Event] = (),
    *,
    flat: bool = False,
) -> str:
    """The DOT of one view: `run_diagram`, `loop_diagram` or `combined_diagram`.

    Raises:
        ValueError: ``view`` is not ``run``, ``loop`` or ``combined``.
        TypeError: ``current``, ``events`` or ``flat`` is not what the views take.
    """
    check_view(view)
    if view == "run":
        return run_diagram(current, events, flat=flat)
    if view == "loop":
        return loop_diagram(current, events, flat=flat)
    return combined_diagram(current, events, flat=flat)
