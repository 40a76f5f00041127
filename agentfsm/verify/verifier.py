"""`verify`: explore both machines exhaustively and check every property on what was found."""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Mapping
from typing import cast

from statemachine import StateChart

from agentfsm import _checks
from agentfsm.fsm.compiled import compile_machine
from agentfsm.fsm.data import RunData
from agentfsm.fsm.guards import GUARD_FUNCTIONS, Guard
from agentfsm.fsm.lifecycle import RunLifecycle
from agentfsm.fsm.turnloop import TurnLoop
from agentfsm.states.names import LoopState, MachineName
from agentfsm.states.tables import TABLES, MachineTable
from agentfsm.verify.agent import agent_paths, check_agent_coverage, check_i6
from agentfsm.verify.diagram import Counterexample, Step
from agentfsm.verify.domains import Domains, default_domains
from agentfsm.verify.explore import Explorer
from agentfsm.verify.properties import (
    Edge,
    Finding,
    check_bounded_loop,
    check_i2,
    check_i3,
)
from agentfsm.verify.report import (
    PROPERTIES,
    WARNINGS,
    PropertyResult,
    Status,
    VerificationReport,
)
from agentfsm.verify.vacuity import check_varied


def verify(
    run: type[StateChart[RunData]] = RunLifecycle,
    loop: type[StateChart[RunData]] = TurnLoop,
    *,
    max_iterations: int = 3,
    domains: Domains | None = None,
    data: Callable[[str], RunData] = RunData,
    spec: Mapping[MachineName, MachineTable] | None = TABLES,
    spec_guards: Mapping[str, Guard] = GUARD_FUNCTIONS,
    strict: bool = False,
    fail_fast: bool = False,
) -> VerificationReport:
    """Explore every reachable configuration of a run's two machines and check them.

    Every event of either machine is sent, through the compiled machines, with every
    valuation of its arguments and of the environment, from every configuration reached;
    see docs/verification.md for what each property means and what is proved.

    Args:
        run: The RunLifecycle to verify, or a class declared like it.
        loop: The TurnLoop to verify with it.
        max_iterations: The bound: runs with every ``max_iterations`` from 1 to this are
            explored (used only to build the default domains, when ``domains`` is None).
        domains: What to try; `default_domains` by default. Extend it (`Domains.extended`)
            to cover a subclass's own events, guards and data fields.
        data: Builds a run's data from its run id: `RunData` or a subclass of it.
        spec: The tables the machines must conform to (by default those of docs/contract.md),
            both ways, with their effect postconditions. The tables are closed: an edge
            between two states a table knows must be one of its rows, whatever its event;
            only edges from or to a state it does not know (an extension's) are not
            checked. None skips conformance and effects.
        spec_guards: The functions of the guards the spec tables name.
        strict: Whether the warning properties (`WARNINGS`: ``varied``,
            ``agent-coverage``) fail the verification instead of warning.
        fail_fast: Whether to stop exploring at the first configuration whose steps break
            a property checked step by step (I1, I4, I5, I8, determinism, conformance,
            effects, exceptions). Each counterexample found is still a shortest one; every
            property not refuted by then (``finite`` too) is ``unknown``. For a quick answer
            on a machine being changed or in a test: a broken machine fails in a fraction
            of the full exploration. A machine that breaks none of those is explored fully.

    Returns:
        The verdict of every property, with a shortest counterexample for each failure.

    Raises:
        MachineDefinitionError: A class uses something the compiled machine cannot run.
        ValueError: A spec table names a guard ``spec_guards`` does not have.
        TypeError: ``run`` or ``loop`` is not a `StateChart` subclass, ``max_iterations``
            not an int, ``domains`` not a `Domains`, ``data`` not callable, or ``strict``
            or ``fail_fast`` not a bool.
        ValueError: ``max_iterations`` is below 1.
    """
    for name, chart in (("run", run), ("loop", loop)):
        if not (isinstance(chart, type) and issubclass(chart, StateChart)):
            _checks.refuse_type(name, chart, "a statemachine.StateChart subclass (the class)")
    _checks.whole("max_iterations", max_iterations, minimum=1)
    if domains is not None and not isinstance(domains, Domains):
        _checks.refuse_type("domains", domains, "a Domains (see default_domains) or None")
    if not callable(data):
        _checks.refuse_type("data", data, "RunData or a subclass (called with the run id)")
    _checks.flag("strict", strict)
    _checks.flag("fail_fast", fail_fast)
    started = time.perf_counter()
    compiled_loop = compile_machine(loop, MachineName.LOOP, "loop_state")
    typed = LoopState.VALIDATING in compiled_loop.states  # a loop that validates answers
    explorer = Explorer(
        compile_machine(run, MachineName.RUN, "state"),
        compiled_loop,
        domains if domains is not None else default_domains(max_iterations, typed=typed),
        data,
        spec,
        spec_guards,
    )
    explorer.fail_fast = fail_fast
    explorer.explore()
    findings: dict[str, Finding] = {
        v.prop: Finding(v.prop, v.node, v.message, ((v.node, v.move, v.outcome),), loaded=v.loaded)
        if v.move >= 0
        else Finding(v.prop, v.node, v.message)
        for v in explorer.violations.values()
    }
    if explorer.complete:
        paths = agent_paths(explorer)
        declared = _declared(explorer)
        for finding in (
            check_i2(explorer),
            check_i3(explorer),
            check_bounded_loop(explorer),
            check_i6(explorer, paths),
            check_varied(explorer),
            check_agent_coverage(explorer, paths, declared),
        ):
            if finding is not None:
                findings.setdefault(finding.prop, finding)
    elif not explorer.stopped:
        findings["finite"] = Finding(
            "finite",
            -1,
            f"stopped after {explorer.domains.max_configurations} configurations: some "
            "data field grows without bound; abstract it in Domains.abstraction",
        )
    results = tuple(
        _result(explorer, name, description, findings.get(name), strict=strict)
        for name, description in PROPERTIES.items()
    )
    return VerificationReport(
        run=run.__name__,
        loop=loop.__name__,
        properties=results,
        configurations=len(explorer.nodes),
        transitions=sum(len(edges) for edges in explorer.out),
        sends=explorer.sends,
        seconds=time.perf_counter() - started,
        machines=(explorer.run.compiled, explorer.loop.compiled),
        covered=_covered(explorer),
        stopped=explorer.stopped,
        replayed=explorer.memo.hits,
    )


def _declared(explorer: Explorer) -> frozenset[tuple[str, str, str, str]]:
    return frozenset(
        (side.name.value, t.event, t.source, t.target)
        for side in (explorer.run, explorer.loop)
        for by_event in side.compiled.dispatch.values()
        for transitions in by_event.values()
        for t in transitions
    )


def _covered(explorer: Explorer) -> frozenset[tuple[str, str, str, str]]:
    # A step of the loop leaves and reaches a configuration whose loop has started.
    states: dict[MachineName, list[str]] = {
        MachineName.RUN: [node.data.state for node in explorer.nodes],
        MachineName.LOOP: cast("list[str]", [node.data.loop_state for node in explorer.nodes]),
    }
    # Each move once: its machine's states of every node, and its name in the result.
    moves = [(states[m.machine], m.machine.value, m.event) for m in explorer.moves]
    taken: set[tuple[str, str, str, str]] = set()
    for source, edges in enumerate(explorer.out):
        for target, move_id in edges:
            of, machine, event = moves[move_id]
            taken.add((machine, event, of[source], of[target]))
    return frozenset(taken)


def _result(
    explorer: Explorer, name: str, description: str, finding: Finding | None, *, strict: bool
) -> PropertyResult:
    if finding is not None:
        status: Status = "warn" if name in WARNINGS and not strict else "fail"
        return PropertyResult(name, description, status, _counterexample(explorer, finding))
    return PropertyResult(name, description, "pass" if explorer.complete else "unknown")


def _step(explorer: Explorer, edge: Edge, reached: int | None = None) -> Step:
    node, move_id, outcome = edge
    move = explorer.moves[move_id]
    field = "state" if move.machine is MachineName.RUN else "loop_state"
    source = getattr(explorer.nodes[node].data, field)
    if reached is not None:
        outcome = getattr(explorer.nodes[reached].data, field)
    return Step(move.machine, move.event, move.arguments, move.environment, source, outcome)


def _counterexample(explorer: Explorer, finding: Finding) -> Counterexample:
    path: list[Step] = []
    nid = finding.node
    while finding.path is None and nid >= 0 and explorer.nodes[nid].parent >= 0:
        node = explorer.nodes[nid]
        path.append(_step(explorer, (node.parent, node.move, None), reached=nid))
        nid = node.parent
    path.reverse()
    if finding.path is not None:
        path = [_step(explorer, edge) for edge in finding.path]
        nid = finding.path[0][0] if finding.path else finding.node
    cycle = len(path) if finding.cycle else None
    initial = explorer.initials[explorer.nodes[nid].origin] if nid >= 0 else {}
    return Counterexample(
        property=finding.prop,
        message=finding.message,
        initial=initial,
        steps=(*path, *(_step(explorer, edge) for edge in finding.tail)),
        cycle=cycle,
        unreached=finding.unreached,
        baseline=explorer.environments[0] if explorer.environments else {},
        loaded=finding.loaded,
    )


def load_class(reference: str) -> type[StateChart[RunData]]:
    """The class named by ``"package.module:Class"`` (``Outer.Inner`` for a nested one).

    Raises:
        ValueError: The reference is not of that form, or does not name a class.
        ImportError: The module cannot be imported.
        TypeError: The reference is not a str.
    """
    if not isinstance(reference, str):
        _checks.refuse_type("reference", reference, "a str of the form 'package.module:Class'")
    module_name, colon, qualname = reference.partition(":")
    if not colon or not module_name or not qualname:
        raise ValueError(f"expected 'package.module:Class', got {reference!r}")
    found: object = importlib.import_module(module_name)
    for part in qualname.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise ValueError(f"{module_name!r} has no {qualname!r}") from None
    if not isinstance(found, type):
        raise ValueError(f"{reference!r} is a {type(found).__name__}, not a class")
    return found
