"""The paths the Agent can produce, on the explored graph: I6 and the Agent's coverage.

The exploration interleaves the machines freely. The Agent does not: it sends a loop event
only while the run is busy (or as the follow-up of a run event), sends the run events of
`FOLLOW_UPS` only right after the loop event `COUPLINGS` pairs them with, and follows each
coupled event at once with its partner. `agent_paths` finds, by a breadth-first search over
the explored graph that obeys those rules, every configuration the Agent can reach and the
steps it takes on the way, each with a shortest such path.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from agentfsm.states.effects import COUPLINGS, FOLLOW_UPS, Coupling
from agentfsm.states.names import MachineName, RunEvent, RunState
from agentfsm.verify.explore import Explorer
from agentfsm.verify.properties import Edge, Finding

State = tuple[int, int]
"""(node, obligation): the configuration, and the index in `COUPLINGS` of the follow-up
the Agent owes (-1 for none)."""


def _field(machine: MachineName) -> str:
    return "state" if machine is MachineName.RUN else "loop_state"


@dataclass(slots=True)
class AgentPaths:
    """What the Agent can reach: every state with the step it was first reached by."""

    parent: dict[State, tuple[State, Edge | None]] = field(default_factory=dict)
    """State → (the state before, the step; None for a follow-up the machine refused)."""
    order: list[State] = field(default_factory=list)
    """The states in the order the search reached them (shortest first)."""
    steps: list[tuple[State, Edge]] = field(default_factory=list)
    """Every step the Agent can take, from a reached state, in search order."""

    def path(self, state: State) -> tuple[Edge, ...]:
        """The steps of a shortest Agent path to ``state``."""
        found: list[Edge] = []
        while True:
            before, edge = self.parent[state]
            if before == state:
                return tuple(reversed(found))
            if edge is not None:
                found.append(edge)
            state = before


def _coupling(machine: MachineName, event: str, target: str) -> int:
    for index, coupling in enumerate(COUPLINGS):
        if (coupling.machine, coupling.event, coupling.target) == (machine, event, target):
            return index
    return -1


def _leads(explorer: Explorer, node: int, move: int) -> bool:
    """Whether the Agent may send ``move`` on its own from ``node``."""
    step = explorer.moves[move]
    if step.event in FOLLOW_UPS:
        return False
    running = explorer.nodes[node].data.state in explorer.domains.turn_states
    return step.machine is MachineName.RUN or running


def _follow(explorer: Explorer, node: int, coupling: Coupling) -> list[tuple[int, int]]:
    return [
        (target, move)
        for target, move in explorer.out[node]
        if explorer.moves[move].machine is not coupling.machine
        and explorer.moves[move].event == coupling.then
    ]


def agent_paths(explorer: Explorer) -> AgentPaths:
    """Search the explored graph for the configurations the Agent can reach.

    Breadth first in events (a refused follow-up costs nothing), so each state's first path
    is a shortest one.
    """
    found = AgentPaths()
    queue: deque[tuple[State, State, Edge | None]] = deque()
    for nid, configuration in enumerate(explorer.nodes):
        if configuration.parent < 0:
            queue.append(((nid, -1), (nid, -1), None))
    while queue:
        state, before, edge = queue.popleft()
        if state in found.parent:
            continue
        found.parent[state] = (before, edge)
        found.order.append(state)
        node, owed = state
        if owed >= 0:
            follow = _follow(explorer, node, COUPLINGS[owed])
            if not follow:  # refused with every valuation: the Agent's step ends here
                queue.appendleft(((node, -1), state, None))
            for target, move in follow:
                step = _edge(explorer, node, move, target)
                found.steps.append((state, step))
                queue.append(((target, -1), state, step))
            continue
        for target, move in explorer.out[node]:
            if not _leads(explorer, node, move):
                continue
            step = _edge(explorer, node, move, target)
            found.steps.append((state, step))
            machine = explorer.moves[move].machine
            reached = getattr(explorer.nodes[target].data, _field(machine))
            owes = _coupling(machine, explorer.moves[move].event, reached)
            queue.append(((target, owes), state, step))
    return found


def _edge(explorer: Explorer, node: int, move: int, target: int) -> Edge:
    machine = explorer.moves[move].machine
    return (node, move, getattr(explorer.nodes[target].data, _field(machine)))


def check_i6(explorer: Explorer, paths: AgentPaths) -> Finding | None:
    """I6 on the Agent's paths: what requires_action waits for is a set of real calls.

    In every configuration the Agent reaches in ``requires_action`` the pending ids are
    not none and distinct, and a ``need_action`` into it records only ids among its calls.
    """
    for state in paths.order:
        data = explorer.nodes[state[0]].data
        if data.state != RunState.REQUIRES_ACTION:
            continue
        pending = tuple(data.pending)
        if not pending or len(set(pending)) != len(pending):
            what = "no pending call" if not pending else f"pending ids repeat: {pending!r}"
            return Finding("I6", state[0], f"requires_action with {what}", path=paths.path(state))
    for state, edge in paths.steps:
        node, move, _ = edge
        step = explorer.moves[move]
        if step.machine is not MachineName.RUN or step.event != RunEvent.NEED_ACTION:
            continue
        target = next(t for t, m in explorer.out[node] if m == move)
        recorded = set(explorer.nodes[target].data.pending)
        calls = step.arguments.get("calls")
        given = {str(c) for c in calls} if isinstance(calls, list) else set()
        if not recorded <= given:
            message = f"need_action(calls={calls!r}) recorded pending {sorted(recorded)!r}"
            return Finding("I6", node, message, (edge,), path=paths.path(state))
    return None


def check_agent_coverage(
    explorer: Explorer, paths: AgentPaths, declared: frozenset[tuple[str, str, str, str]]
) -> Finding | None:
    """Every declared transition is taken by some step the Agent can take."""
    taken = {_transition(explorer, edge) for _, edge in paths.steps}
    missing = sorted(declared - taken)
    if not missing:
        return None
    names = ", ".join(f"{m} {e} {s} → {t}" for m, e, s, t in missing)
    for nid in range(len(explorer.nodes)):
        for target, move in explorer.out[nid]:
            edge = _edge(explorer, nid, move, target)
            if _transition(explorer, edge) in missing:
                message = (
                    f"taken only on paths the Agent cannot produce, or never: {names}; "
                    "this path takes the first of them"
                )
                return Finding("agent-coverage", nid, message, (edge,))
    return Finding("agent-coverage", -1, f"never taken: {names}")


def _transition(explorer: Explorer, edge: Edge) -> tuple[str, str, str, str]:
    node, move, outcome = edge
    step = explorer.moves[move]
    source = getattr(explorer.nodes[node].data, _field(step.machine))
    return (step.machine.value, step.event, source, outcome or source)
