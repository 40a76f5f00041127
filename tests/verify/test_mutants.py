"""Every broken variant of the machines fails the property it breaks, with a real path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentfsm.fsm import CompiledMachine, RunData, compile_machine
from agentfsm.fsm.guards import GUARD_FUNCTIONS
from agentfsm.states import TABLES, MachineName
from agentfsm.verify import Counterexample, VerificationReport, verify
from tests.verify.mutants import MUTANTS
from tests.verify.replaying import replay

Built = tuple[str, type[Any], type[Any], VerificationReport]


@pytest.fixture(scope="module", params=sorted(MUTANTS))
def broken(request: pytest.FixtureRequest) -> Built:
    build, prop = MUTANTS[request.param]
    run, loop = build()
    return prop, run, loop, verify(run, loop, max_iterations=2)


def test_no_mutant_passes(broken: Built) -> None:
    prop, _, _, report = broken

    assert not report.ok
    assert report[prop].status == "fail", report
    assert report["finite"].passed  # each failure is found by a complete exploration


Compiled = dict[MachineName, CompiledMachine]


def _last_accepted_from_shutdown(cex: Counterexample, seen: list[RunData], _: Compiled) -> None:
    last = cex.steps[-1]
    assert (last.machine, last.source) == (MachineName.RUN, "shutdown")
    assert last.target is not None


def _overlap(cex: Counterexample, seen: list[RunData], compiled: Compiled) -> None:
    last, before = cex.steps[-1], seen[-2]
    candidates = compiled[last.machine].dispatch[last.source][last.event]
    enabled = [t for t in candidates if all(g(before, **last.arguments) for g in t.guards)]
    assert len(enabled) >= 2


def _against_the_spec(cex: Counterexample, seen: list[RunData], _: Compiled) -> None:
    last, before = cex.steps[-1], seen[-2]
    rows = [
        row
        for row in TABLES[last.machine].rows
        if (row.source, row.event, row.target) == (last.source, last.event, last.target)
    ]
    assert rows, "the spec lists the edge, but its guard did not hold"
    for row in rows:
        assert row.guard is not None
        assert not GUARD_FUNCTIONS[row.guard](before, **last.arguments)


def _refusal_changed_data(cex: Counterexample, seen: list[RunData], _: Compiled) -> None:
    assert cex.steps[-1].target is None
    assert seen[-2] != seen[-1]  # refused, and still the data moved


def _waits(cex: Counterexample, seen: list[RunData], _: Compiled) -> None:
    end = seen[-1]
    assert {end.state, end.loop_state} & WAITING


def _past_the_cap(cex: Counterexample, seen: list[RunData], _: Compiled) -> None:
    assert seen[-1].iteration > seen[-1].max_iterations


def _goes_round(cex: Counterexample, seen: list[RunData], _: Compiled) -> None:
    assert cex.cycle is not None
    start, end = seen[cex.cycle], seen[-1]
    assert (start.state, start.loop_state, start.iteration) == (
        end.state,
        end.loop_state,
        end.iteration,
    )


def _no_path(cex: Counterexample, seen: list[RunData], _: Compiled) -> None:
    assert cex.steps == ()
    assert cex.unreached


WAITING = {"requires_action", "input_required", "awaiting_action", "awaiting_input"}
END: dict[str, Callable[[Counterexample, list[RunData], Compiled], None]] = {
    "I1": _last_accepted_from_shutdown,
    "I2": _waits,
    "I3": _no_path,
    "I4": _refusal_changed_data,
    "I8": _past_the_cap,
    "determinism": _overlap,
    "bounded-loop": _goes_round,
    "conformance": _against_the_spec,
}
"""What the end of each property's counterexample must show, once replayed."""


def test_counterexample_replays_to_the_failure(broken: Built) -> None:
    prop, run, loop, report = broken
    cex = report[prop].counterexample
    assert cex is not None
    compiled = {
        MachineName.RUN: compile_machine(run, MachineName.RUN, "state"),
        MachineName.LOOP: compile_machine(loop, MachineName.LOOP, "loop_state"),
    }

    seen = replay(run, loop, cex)

    END[prop](cex, seen, compiled)


def test_counterexample_is_printed_and_drawn(broken: Built) -> None:
    prop, _, _, report = broken
    cex = report[prop].counterexample
    assert cex is not None

    text, dot = str(report), report.dot(prop)

    assert f"{prop}: {cex.message}" in text
    for step in cex.steps:
        assert step.describe(cex.baseline) in text
    assert dot.startswith("digraph counterexample")
    assert dot.count("color=red") >= len({(s.machine, s.source, s.event) for s in cex.steps})
    for unreached in cex.unreached:
        assert f'"{unreached}" [label={unreached.split(".")[1]}' in dot
