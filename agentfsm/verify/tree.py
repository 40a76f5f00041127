"""Runs within runs, verified: a parent and the child run of its sub-agent call, explored together.

`verify` explores one run's two machines. `verify_tree` explores the product of two runs:
a parent whose round holds one call to a sub-agent, and the child run that call starts,
each through the real compiled machines, moved as the Agent moves them
(`agentfsm.agent.children`): the parent delegates (``delegated``), the child runs its turn
(answers, fails, waits for an approval or an answer, pauses, is cancelled), and the parent
reacts to the child at rest (``child_returned``, ``child_asked`` then ``need_action`` /
``need_input``, a pause) or to a child that never existed (its factory failed: an error
result), answers at the top go down, and the application's cancel, pause,
resume and shutdown propagate. Every move is a sequence of real events; the child's turn is
abstracted to its outcomes (its own machines are what `verify` checks).

In every reachable configuration it checks I14 (a child at rest whenever its parent is, no
child result consumed twice, a child ended without an answer is an error result), I6 for the
parent (what it waits on is the child's call, addressed by its path), and that the tree can
always come to rest with the parent's turn over; and that every sub-agent row of TurnLoop
(``delegated``, ``child_returned``, both ``child_asked``, ``abort`` from ``delegating``) is
taken.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from agentfsm import _checks
from agentfsm.errors import IllegalTransitionError
from agentfsm.fsm import LOOP_MACHINE, RUN_MACHINE, Emitter, Machine, RunData
from agentfsm.states.events import Event
from agentfsm.states.json import JSONValue
from agentfsm.states.names import LoopEvent, LoopState, RunState
from agentfsm.states.tables import LOOP_TABLE

__all__ = ["TreeFinding", "TreeReport", "verify_tree"]

PARENT, CHILD, CALL, CHILD_CALL = "parent", "parent.1.1.call_1", "call_1", "c1"
PATH = f"{PARENT}/{CALL}/{CHILD}/{CHILD_CALL}"
"""The address under which the parent waits on the child's call."""

_WAITS = (RunState.REQUIRES_ACTION, RunState.INPUT_REQUIRED)
_TURN_OVER = (RunState.COMPLETED, RunState.FAILED, RunState.SHUTDOWN)
SUB_AGENT_ROWS = frozenset(
    (row.event, row.source, row.target)
    for row in LOOP_TABLE.rows
    if LoopState.DELEGATING in (row.source, row.target)
)
"""The rows of TurnLoop into and out of ``delegating``: each must be taken."""


@dataclass(frozen=True, slots=True)
class TreeFinding:
    """A property of the tree broken: what, and the moves that lead there."""

    prop: str
    """``I14``, ``I6``, ``can-end`` or ``coverage``."""
    message: str
    """What is wrong."""
    path: tuple[str, ...] = ()
    """The moves, from the start, to the configuration where it is wrong."""


@dataclass(frozen=True, slots=True)
class TreeReport:
    """What `verify_tree` found."""

    configurations: int
    """How many configurations of the pair were reached."""
    moves: int
    """How many moves between them were taken."""
    findings: tuple[TreeFinding, ...]
    """Every property broken (empty when all hold)."""
    taken: frozenset[tuple[str, str, str]]
    """The sub-agent rows of TurnLoop (event, source, target) some move took."""
    seconds: float = 0.0
    """How long the exploration took."""

    @property
    def ok(self) -> bool:
        """Whether every property holds."""
        return not self.findings


@dataclass(slots=True)
class _Node:
    """A configuration: both runs' data, and what the parent did with the child's result."""

    parent: RunData
    child: RunData
    consumed: tuple[str, ...] = ()
    """The results the parent recorded for the child, in order (``answer`` / ``error``)."""
    key: tuple[object, ...] = field(default=())


class _RefusedError(Exception):
    """A move whose events the machines refuse: it is not taken."""


class _Pair:
    """Copies of both runs' data, moved by sending real events to fresh machines."""

    def __init__(self, node: _Node, taken: set[tuple[str, str, str]]) -> None:
        self.parent = replace(node.parent)
        self.child = replace(node.child)
        self.consumed = node.consumed
        self._taken = taken

    def send(self, who: RunData, machine: str, event: str, **args: JSONValue) -> None:
        emitter = Emitter(who.run_id, [self._note] if who is self.parent else [])
        compiled = RUN_MACHINE if machine == "run" else LOOP_MACHINE
        try:
            Machine(compiled, who, emitter).send(event, **args)
        except IllegalTransitionError as refused:
            raise _RefusedError from refused
        if machine == "run" and who.state == RunState.BUSY and who.loop_state is None:
            Machine(LOOP_MACHINE, who, emitter)  # the turn's loop enters thinking

    def _note(self, event: Event) -> None:
        if event.machine == "loop":
            self._taken.add((event.event, event.source, event.target))

    def node(self) -> _Node:
        return _Node(self.parent, self.child, self.consumed, _key(self))


def _key(pair: _Pair | _Node) -> tuple[object, ...]:
    def data(d: RunData) -> tuple[object, ...]:
        return (
            d.state,
            d.loop_state,
            d.iteration,
            d.max_iterations,
            d.pending,
            d.paused_from,
            d.reason,
        )

    return (data(pair.parent), data(pair.child), pair.consumed)


Move = Callable[[_Pair], None]


# -- the child's own turn, while its parent waits on it -----------------------------------


def _child_answers(pair: _Pair) -> None:
    pair.send(pair.child, "loop", LoopEvent.MODEL_REPLIED, tool_calls=0)
    pair.send(pair.child, "run", "complete")


def _child_fails(pair: _Pair) -> None:
    pair.send(pair.child, "loop", LoopEvent.MODEL_FAILED)
    pair.send(pair.child, "run", "fail", error_type="ModelCallError", message="down")


def _child_needs_action(pair: _Pair) -> None:
    pair.send(pair.child, "loop", LoopEvent.MODEL_REPLIED, tool_calls=1, needing_action=1)
    pair.send(pair.child, "run", "need_action", calls=[CHILD_CALL])


def _child_asks(pair: _Pair) -> None:
    pair.send(pair.child, "loop", LoopEvent.MODEL_REPLIED, tool_calls=1, asking_user=1)
    pair.send(pair.child, "run", "need_input", question="Which?", calls=[CHILD_CALL])


def _cancel_mid(pair: _Pair) -> None:
    """A cancel asked of the parent mid-step: the child takes it at its next boundary."""
    pair.send(pair.child, "run", "cancel")
    pair.send(pair.child, "loop", LoopEvent.ABORT, reason="cancelled")
    pair.parent.cancel_requested = True  # (the parent's own request, taken after)


def _pause_mid(pair: _Pair) -> None:
    """A pause asked of the parent mid-step: the child pauses at its next boundary."""
    pair.send(pair.child, "run", "pause")


CHILD_MOVES: dict[str, Move] = {
    "child answers": _child_answers,
    "child's model fails": _child_fails,
    "child needs approval": _child_needs_action,
    "child asks the user": _child_asks,
    "cancel asked mid-step": _cancel_mid,
    "pause asked mid-step": _pause_mid,
}


# -- the parent, as the Agent moves it ------------------------------------------------------


def _take_up_child(pair: _Pair) -> None:
    """`_advance`: start the child, or resume it, or give it the answer its wait got."""
    child = pair.child
    if child.state == RunState.CREATED:
        pair.send(child, "run", "start")
        pair.send(child, "run", "submit", text="the task")
    elif child.state == RunState.PAUSED:
        pair.send(child, "run", "resume")
    elif child.state == RunState.REQUIRES_ACTION:
        pair.send(child, "run", "resolve_action", decisions={CHILD_CALL: "approve"})
        pair.send(child, "loop", LoopEvent.RESOLVED, decisions={CHILD_CALL: "approve"})
        pair.send(child, "loop", LoopEvent.TOOLS_FINISHED)
        _finish_exhausted(pair, child)
    elif child.state == RunState.INPUT_REQUIRED:
        pair.send(child, "run", "provide_input", text="that one")
        pair.send(child, "loop", LoopEvent.RESOLVED, decisions={CHILD_CALL: "that one"})
        pair.send(child, "loop", LoopEvent.TOOLS_FINISHED)
        _finish_exhausted(pair, child)


def _finish_exhausted(pair: _Pair, data: RunData) -> None:
    if data.loop_state == LoopState.EXHAUSTED:
        pair.send(data, "run", "complete")


def _delegate(pair: _Pair) -> None:
    """The round reaches the sub-agent call (again): ``delegated``, the child taken up."""
    if pair.consumed or pair.parent.state != RunState.BUSY:
        raise _RefusedError
    if pair.parent.loop_state == LoopState.ACTING:
        pair.send(pair.parent, "loop", LoopEvent.DELEGATED, call_id=CALL, child=CHILD)
    elif pair.parent.loop_state != LoopState.DELEGATING:
        raise _RefusedError
    _take_up_child(pair)
    if pair.child.state == RunState.BUSY:
        return  # the child's turn goes on (CHILD_MOVES)
    _child_at_rest(pair)


def _child_at_rest(pair: _Pair) -> None:
    """`_returned`: what the parent does with the child at rest."""
    parent, child = pair.parent, pair.child
    if child.state in _WAITS:
        action = child.state == RunState.REQUIRES_ACTION
        pair.send(parent, "loop", LoopEvent.CHILD_ASKED, needing_action=int(action), asking_user=1)
        if action:
            pair.send(parent, "run", "need_action", calls=[PATH])
        else:
            pair.send(parent, "run", "need_input", question="Which?", calls=[PATH])
    elif child.state == RunState.PAUSED:
        pair.send(parent, "run", "pause")
    else:
        _record(pair, "answer" if child.state == RunState.COMPLETED else "error")


def _record(pair: _Pair, result: str) -> None:
    """``child_returned``: the call's result (``answer`` / ``error``) recorded, the turn on."""
    parent = pair.parent
    pair.send(parent, "loop", LoopEvent.CHILD_RETURNED)
    pair.consumed = (*pair.consumed, result)
    pair.send(parent, "loop", LoopEvent.TOOLS_FINISHED)  # the round's last call
    if parent.cancel_requested:
        pair.send(parent, "run", "cancel")
        pair.send(parent, "loop", LoopEvent.ABORT, reason="cancelled")
    elif parent.loop_state == LoopState.THINKING:
        pair.send(parent, "loop", LoopEvent.MODEL_REPLIED, tool_calls=0)
        pair.send(parent, "run", "complete")
    else:
        pair.send(parent, "run", "complete")


def _never_made(pair: _Pair) -> None:
    """The factory fails (raises, returns no Agent, or one with a store of its own).

    The child never exists (it stays ``created``, stored nowhere); the call's result is its
    error, recorded once, as for a child that failed.
    """
    parent = pair.parent
    if (
        pair.consumed
        or parent.state != RunState.BUSY
        or parent.loop_state != LoopState.ACTING
        or pair.child.state != RunState.CREATED
    ):
        raise _RefusedError
    pair.send(parent, "loop", LoopEvent.DELEGATED, call_id=CALL, child=CHILD)
    _record(pair, "error")


def _child_returns(pair: _Pair) -> None:
    """The child came to rest inside the parent's step: the delegate returns."""
    if pair.parent.loop_state != LoopState.DELEGATING or pair.child.state == RunState.BUSY:
        raise _RefusedError
    if pair.parent.state != RunState.BUSY:
        raise _RefusedError
    _child_at_rest(pair)


def _answer(pair: _Pair) -> None:
    parent = pair.parent
    if parent.state == RunState.REQUIRES_ACTION:
        pair.send(parent, "run", "resolve_action", decisions={PATH: "approve"})
    else:
        pair.send(parent, "run", "provide_input", text="that one")
    pair.send(parent, "loop", LoopEvent.RESOLVED, decisions={PATH: "approve"})
    _delegate(pair)


def _close_child(pair: _Pair) -> None:
    """`_close_orphans`: a child left in a wait is cancelled, a paused one shut down."""
    child = pair.child
    if child.state in (*_WAITS, RunState.BUSY):
        pair.send(child, "run", "cancel")
    elif child.state == RunState.PAUSED:
        pair.send(child, "run", "shutdown")
    else:
        return
    if child.loop_state is not None and child.loop_state not in LOOP_TABLE.final:
        pair.send(child, "loop", LoopEvent.ABORT, reason="cancelled")


def _cancel(pair: _Pair) -> None:
    pair.send(pair.parent, "run", "cancel")
    pair.send(pair.parent, "loop", LoopEvent.ABORT, reason="cancelled")
    _close_child(pair)


def _shutdown(pair: _Pair) -> None:
    unfinished = pair.parent.loop_state not in LOOP_TABLE.final
    pair.send(pair.parent, "run", "shutdown")
    if unfinished:
        pair.send(pair.parent, "loop", LoopEvent.ABORT, reason="cancelled")
        _close_child(pair)


def _pause(pair: _Pair) -> None:
    pair.send(pair.parent, "run", "pause")


def _resume(pair: _Pair) -> None:
    pair.send(pair.parent, "run", "resume")
    if pair.parent.state == RunState.BUSY:
        _delegate(pair)


PARENT_MOVES: dict[str, Move] = {
    "the round reaches the call": _delegate,
    "the child's factory fails": _never_made,
    "the child returns": _child_returns,
    "the application answers": _answer,
    "the application cancels": _cancel,
    "the application pauses": _pause,
    "the application resumes": _resume,
    "the application shuts down": _shutdown,
}


# -- the exploration -------------------------------------------------------------------------


def _moves(node: _Node) -> Iterator[tuple[str, Move]]:
    parent, child = node.parent, node.child
    busy_child = (
        parent.state == RunState.BUSY
        and parent.loop_state == LoopState.DELEGATING
        and child.state == RunState.BUSY
    )
    if busy_child:
        yield from CHILD_MOVES.items()
        return  # the parent's step awaits its child: nothing else moves
    yield from PARENT_MOVES.items()


def _start(max_iterations: int) -> _Node:
    parent = RunData(PARENT, max_iterations=max_iterations)
    child = RunData(CHILD, max_iterations=max_iterations)
    pair = _Pair(_Node(parent, child), set())
    pair.send(pair.parent, "run", "start")
    pair.send(pair.parent, "run", "submit", text="go")
    pair.send(pair.parent, "loop", LoopEvent.MODEL_REPLIED, tool_calls=1)
    return pair.node()


def _check(node: _Node) -> tuple[str, str] | None:
    parent, child = node.parent, node.child
    if parent.state != RunState.BUSY and child.state == RunState.BUSY:
        return "I14", f"the parent is {parent.state} while its child is busy"
    if parent.state in _TURN_OVER and child.state in (*_WAITS, RunState.PAUSED):
        return "I14", f"the parent's turn is over ({parent.state}) but its child is {child.state}"
    if len(node.consumed) > 1:
        return "I14", f"the child's result was recorded {len(node.consumed)} times"
    if node.consumed:
        expected = "answer" if child.state == RunState.COMPLETED else "error"
        if node.consumed[0] != expected:
            return "I14", f"the child ended {child.state} but its result is an {node.consumed[0]}"
    if parent.state in _WAITS and parent.pending != (PATH,):
        return "I6", f"the parent waits on {parent.pending!r}, not on its child's {PATH!r}"
    return None


@dataclass(slots=True)
class _Graph:
    nodes: list[_Node] = field(default_factory=list)
    index: dict[tuple[object, ...], int] = field(default_factory=dict)
    came: dict[int, tuple[int, str]] = field(default_factory=dict)
    out: list[list[int]] = field(default_factory=list)

    def add(self, node: _Node, parent: int, move: str) -> tuple[int, bool]:
        found = self.index.get(node.key)
        if found is not None:
            return found, False
        self.index[node.key] = len(self.nodes)
        self.nodes.append(node)
        self.out.append([])
        if parent >= 0:
            self.came[len(self.nodes) - 1] = (parent, move)
        return len(self.nodes) - 1, True

    def path(self, nid: int) -> tuple[str, ...]:
        moves: list[str] = []
        while nid in self.came:
            nid, move = self.came[nid]
            moves.append(move)
        return tuple(reversed(moves))


def _explore(graph: _Graph, start: _Node, taken: set[tuple[str, str, str]]) -> int:
    sent = 0
    queue = deque([graph.add(start, -1, "")[0]])
    while queue:
        nid = queue.popleft()
        for name, move in _moves(graph.nodes[nid]):
            pair = _Pair(graph.nodes[nid], taken)
            try:
                move(pair)
            except _RefusedError:
                continue
            sent += 1
            target, new = graph.add(pair.node(), nid, name)
            graph.out[nid].append(target)
            if new:
                queue.append(target)
    return sent


def _can_end(graph: _Graph) -> set[int]:
    into: list[list[int]] = [[] for _ in graph.nodes]
    for source, targets in enumerate(graph.out):
        for target in targets:
            into[target].append(source)
    done = {
        n
        for n, node in enumerate(graph.nodes)
        if node.parent.state in _TURN_OVER and node.child.state != RunState.BUSY
    }
    queue = deque(done)
    while queue:
        for source in into[queue.popleft()]:
            if source not in done:
                done.add(source)
                queue.append(source)
    return done


def verify_tree(max_iterations: int = 2) -> TreeReport:
    """Explore a parent and its sub-agent's child run together, and check I14 and I6.

    Args:
        max_iterations: Each run is explored with every ``max_iterations`` from 1 to this.

    Returns:
        The configurations reached, and every property broken, with the moves to it.

    Raises:
        TypeError: ``max_iterations`` is not an int.
        ValueError: ``max_iterations`` is below 1.

    Example:
        >>> report = verify_tree()
        >>> report.ok, report.configurations > 10
        (True, True)
    """
    _checks.whole("max_iterations", max_iterations, minimum=1)
    started = time.perf_counter()
    graph = _Graph()
    taken: set[tuple[str, str, str]] = set()
    sent = sum(_explore(graph, _start(n), taken) for n in range(1, max_iterations + 1))
    findings: list[TreeFinding] = []
    for nid, node in enumerate(graph.nodes):
        broken = _check(node)
        if broken is not None:
            findings.append(TreeFinding(broken[0], broken[1], graph.path(nid)))
            break
    stuck = next((n for n in range(len(graph.nodes)) if n not in _can_end(graph)), None)
    if stuck is not None:
        findings.append(
            TreeFinding("can-end", "from here the tree can never come to rest", graph.path(stuck))
        )
    missing = sorted(SUB_AGENT_ROWS - taken)
    if missing:
        findings.append(TreeFinding("coverage", f"sub-agent rows never taken: {missing!r}"))
    return TreeReport(
        configurations=len(graph.nodes),
        moves=sent,
        findings=tuple(findings),
        taken=frozenset(taken & SUB_AGENT_ROWS),
        seconds=time.perf_counter() - started,
    )
