"""The checks that concern paths, made on the explored graph: I2, I3 and the bounded loop.

Each returns at most one `Finding`: the failing configuration closest to an initial one
(nodes are numbered in breadth-first order, so the lowest number has a shortest path),
and for a cycle the events that go round it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from agentfsm.states.names import LoopEvent, MachineName
from agentfsm.verify.explore import Explorer

RUN, LOOP = MachineName.RUN, MachineName.LOOP

Edge = tuple[int, int, str | None]
"""(node, move, outcome): a move taken from a node, and the state it led to (None when
it was refused)."""


@dataclass(frozen=True, slots=True)
class Finding:
    """A property's failure: the path to ``node``, then ``tail``."""

    prop: str
    node: int
    message: str
    tail: tuple[Edge, ...] = ()
    cycle: bool = False
    """True when ``tail`` goes round a cycle back to ``node``."""
    unreached: tuple[str, ...] = ()
    path: tuple[Edge, ...] | None = None
    """When set, the whole path from an initial configuration to ``node`` (a path the
    Agent can produce), instead of the breadth-first one."""
    loaded: Mapping[str, object] = field(default_factory=dict)
    """Fields set on the data before the last step (see `Counterexample.loaded`)."""


def _backwards(explorer: Explorer, goal: Iterable[int], loop_only: bool) -> set[int]:
    """Every node from which some node of ``goal`` is reachable.

    Through loop edges only when ``loop_only``.
    """
    into: list[list[int]] = [[] for _ in explorer.nodes]
    if loop_only:
        of_loop = [move.machine is MachineName.LOOP for move in explorer.moves]
        for source, edges in enumerate(explorer.out):
            for target, move in edges:
                if of_loop[move]:
                    into[target].append(source)
    else:
        for source, edges in enumerate(explorer.out):
            for target, _ in edges:
                into[target].append(source)
    found = set(goal)
    queue = deque(found)
    while queue:
        for source in into[queue.popleft()]:
            if source not in found:
                found.add(source)
                queue.append(source)
    return found


def _first(
    explorer: Explorer, prop: str, tests: list[tuple[Callable[[int], bool], str]]
) -> Finding | None:
    for nid, node in enumerate(explorer.nodes):
        if not node.expanded:
            continue  # cut off by I8: what lies beyond is not known
        for fails, message in tests:
            if fails(nid):
                return Finding(prop, nid, message)
    return None


def _exits_without_answer(explorer: Explorer, nid: int, machine: MachineName) -> bool:
    domains = explorer.domains
    field = "state" if machine is MachineName.RUN else "loop_state"
    for target, move_id in explorer.out[nid]:
        move = explorer.moves[move_id]
        if move.machine is not machine or move.event in domains.answers | domains.detours:
            continue
        if getattr(explorer.nodes[target].data, field) not in domains.waiting:
            return True
    return False


def check_i2(explorer: Explorer) -> Finding | None:
    """I2: from every configuration shutdown is reachable, and some event is accepted.

    And every waiting configuration has an exit that needs no answer: an event that is
    neither an answer nor a detour and leads out of the waiting states.
    """
    absorbing = explorer.domains.absorbing
    waiting = explorer.domains.waiting
    nodes, out = explorer.nodes, explorer.out
    can_end = _backwards(
        explorer, (n for n, node in enumerate(nodes) if node.data.state in absorbing), False
    )

    def dead_end(nid: int) -> bool:
        return not out[nid] and nodes[nid].data.state not in absorbing

    def run_stuck(nid: int) -> bool:
        data = nodes[nid].data
        return data.state in waiting and not _exits_without_answer(explorer, nid, RUN)

    def loop_stuck(nid: int) -> bool:
        data = nodes[nid].data
        return data.loop_state in waiting and not _exits_without_answer(explorer, nid, LOOP)

    return _first(
        explorer,
        "I2",
        [
            (dead_end, "a dead end: no event of either machine is accepted here"),
            (lambda nid: nid not in can_end, "no sequence of events reaches shutdown"),
            (run_stuck, "the run waits here, and only an answer lets it out"),
            (loop_stuck, "the loop waits here, and only an answer lets it out"),
        ],
    )


def check_i3(explorer: Explorer) -> Finding | None:
    """Every state of both machines is some reachable configuration's."""
    reached = {(MachineName.RUN, node.data.state) for node in explorer.nodes} | {
        (MachineName.LOOP, node.data.loop_state) for node in explorer.nodes
    }
    missing = tuple(
        f"{side.name.value}.{state}"
        for side in (explorer.run, explorer.loop)
        for state in side.compiled.states
        if (side.name, state) not in reached
    )
    if not missing:
        return None
    return Finding("I3", -1, f"never reached: {', '.join(missing)}", unreached=missing)


PROGRESS_EVENTS = frozenset({LoopEvent.DELEGATED})
"""Loop events that make progress the data does not count: each ``delegated`` hands a call
of the round to a child run, which answers it (``child_returned``) or waits for an answer
(``child_asked``) only after steps of its own bounded loop (`agentfsm.verify.tree` checks
the parent and the child together). A loop cycle through one is not a cycle without
progress."""


def _loop_edges(explorer: Explorer, nid: int) -> list[tuple[int, int]]:
    return [
        (target, move)
        for target, move in explorer.out[nid]
        if explorer.moves[move].machine is MachineName.LOOP
        and explorer.moves[move].event not in PROGRESS_EVENTS
    ]


def _cycles(explorer: Explorer) -> set[int]:
    """The nodes on or after some cycle of loop edges.

    Those not removed by peeling off, again and again, the nodes that have no loop edge
    into them (Kahn's algorithm).
    """
    edges = [_loop_edges(explorer, nid) for nid in range(len(explorer.nodes))]
    into = [0] * len(explorer.nodes)
    for out in edges:
        for target, _ in out:
            into[target] += 1
    queue = deque(nid for nid, count in enumerate(into) if count == 0)
    left = set(range(len(explorer.nodes)))
    while queue:
        nid = queue.popleft()
        left.discard(nid)
        for target, _ in edges[nid]:
            into[target] -= 1
            if into[target] == 0:
                queue.append(target)
    return left


def _round_trip(explorer: Explorer, start: int, within: set[int]) -> tuple[Edge, ...] | None:
    """A shortest path of loop edges from ``start`` back to itself, inside ``within``.

    Each edge comes with the loop state it leads to; None when there is no way back.
    """
    came: dict[int, tuple[int, int]] = {}
    queue = deque([start])
    while queue:
        nid = queue.popleft()
        for target, move in _loop_edges(explorer, nid):
            if target == start:
                path = [(nid, move, target)]
                while path[-1][0] != start:
                    node = path[-1][0]
                    path.append((*came[node], node))
                return tuple(
                    (node, mv, explorer.nodes[to].data.loop_state) for node, mv, to in path
                )[::-1]
            if target in within and target not in came:
                came[target] = (nid, move)
                queue.append(target)
    return None  # after a cycle, not on one


def check_bounded_loop(explorer: Explorer) -> Finding | None:
    """The bounded loop: no cycle of loop events, and every loop state can end.

    From every configuration whose loop is not final, some sequence of loop events reaches
    a final state of TurnLoop.
    """
    final = explorer.loop.compiled.final
    nodes = explorer.nodes
    after_cycle = _cycles(explorer)
    ends = _backwards(
        explorer, (n for n, node in enumerate(nodes) if node.data.loop_state in final), True
    )
    trips = (
        (nid, trip)
        for nid in sorted(after_cycle)
        if (trip := _round_trip(explorer, nid, after_cycle)) is not None
    )
    cycle_at, tail = next(trips, (None, ()))
    stuck = _first(
        explorer,
        "bounded-loop",
        [
            (
                lambda nid: (
                    nodes[nid].data.loop_state not in final
                    and nodes[nid].data.loop_state is not None
                    and nid not in ends
                ),
                "no sequence of loop events ends the turn from here",
            )
        ],
    )
    if cycle_at is not None and (stuck is None or cycle_at <= stuck.node):
        return Finding(
            "bounded-loop",
            cycle_at,
            f"the loop can go round forever: {len(tail)} loop events lead back to the same "
            f"configuration (iteration {nodes[cycle_at].data.iteration})",
            tail,
            cycle=True,
        )
    return stuck
