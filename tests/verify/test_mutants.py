"""Every broken variant of the machines fails the property it breaks, with a shortest real path."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from agentfsm.errors import IllegalTransitionError, MachineDefinitionError
from agentfsm.fsm import CompiledMachine, Emitter, Machine, RunData, compile_machine
from agentfsm.fsm.guards import GUARD_FUNCTIONS
from agentfsm.states import TABLES, MachineName
from agentfsm.states.effects import COUPLINGS, FOLLOW_UPS
from agentfsm.verify import Counterexample, VerificationReport, default_domains, verify
from agentfsm.verify.report import WARNINGS
from agentfsm.verify.steps import effect_mismatch, expected
from tests.verify.mutants import MUTANTS
from tests.verify.rebuild import Mutant
from tests.verify.replaying import replay

Built = tuple[Mutant, type[Any], type[Any], VerificationReport]

VERIFIED = sorted(name for name, m in MUTANTS.items() if m.prop != "refused")
REFUSED = sorted(name for name, m in MUTANTS.items() if m.prop == "refused")
CLASSES = (
    "missing-row",
    "extra-row",
    "guard",
    "effects",
    "I5",
    "I6",
    "call-ids",
    "raises",
    "varied",
    "agent-coverage",
    "subclass",
    "I1",
    "I2",
    "I3",
    "I4",
    "I8",
    "determinism",
    "bounded-loop",
)
"""The classes of mistake the suite must hold at least three of each."""


STEP_CHECKED = frozenset(
    {"I1", "I4", "I5", "I8", "determinism", "conformance", "effects", "exceptions"}
)
"""The properties the verifier checks on each step as it explores (docs/verification.md)."""


def check(mutant: Mutant, run: type[Any], loop: type[Any]) -> VerificationReport:
    """Verify a mutant as CI does its own machines: strict for the warning properties.

    A bound of 1 shows every mistake but the warnings' (at that bound the iteration count
    itself never varies, which they would rightly report first). A mistake checked step by
    step is found by ``fail_fast`` in a fraction of the exploration (the tests below still
    hold its counterexample to the full exploration's length); when another such property
    fails first on the way to it (the counterexample of the mutant's own would then be
    unknown), the mutant is explored fully.
    """
    warns = mutant.prop in WARNINGS
    if mutant.prop in STEP_CHECKED:
        fast = verify(run, loop, max_iterations=1, fail_fast=True)
        if fast[mutant.prop].status != "unknown":
            return fast
    return verify(run, loop, max_iterations=2 if warns else 1, strict=warns)


@pytest.fixture(scope="module", params=VERIFIED)
def broken(request: pytest.FixtureRequest) -> Built:
    mutant = MUTANTS[request.param]
    run, loop = mutant.build()
    return mutant, run, loop, check(mutant, run, loop)


def test_the_suite_holds_three_of_every_class_and_forty_in_all() -> None:
    kinds = Counter(m.kind for m in MUTANTS.values())

    assert len(MUTANTS) >= 40
    assert [kind for kind in CLASSES if kinds[kind] < 3] == []


def test_no_mutant_passes(broken: Built) -> None:
    mutant, _, _, report = broken

    assert not report.ok
    assert report[mutant.prop].status == "fail", report
    # Each failure is found by a complete exploration, or by one that stopped at it
    # (fail_fast), never by one cut short by the limit on configurations.
    if report.stopped:
        assert mutant.prop in STEP_CHECKED
        assert {r.status for r in report.properties if r.counterexample is None} == {"unknown"}
    else:
        assert report["finite"].passed


def test_each_counterexample_is_a_shortest_one(broken: Built) -> None:
    mutant, _, _, report = broken
    cex = report[mutant.prop].counterexample
    assert cex is not None

    assert len(cex.steps) == mutant.steps, cex


@pytest.mark.parametrize("name", REFUSED)
def test_a_subclass_that_changes_its_parent_is_refused_before_exploring(name: str) -> None:
    run, loop = MUTANTS[name].build()

    with pytest.raises(MachineDefinitionError, match="changes the states of its parent"):
        verify(run, loop, max_iterations=1)


Compiled = dict[MachineName, CompiledMachine]
End = Callable[[Counterexample, list[RunData], Compiled], None]


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
        if (row.source, row.event) == (last.source, last.event)
        and (row.guard is None or GUARD_FUNCTIONS[row.guard](before, **last.arguments))
    ]
    wanted = rows[0].target if rows else None
    assert wanted != last.target  # the spec's first row that holds goes elsewhere, or none


def _refusal_changed_data(cex: Counterexample, seen: list[RunData], _: Compiled) -> None:
    assert cex.steps[-1].target is None
    assert seen[-2] != seen[-1]  # refused, and still the data moved


def _stuck(cex: Counterexample, seen: list[RunData], compiled: Compiled) -> None:
    end = seen[-1]
    if "dead end" in cex.message:  # no event of either machine has an edge from here
        assert compiled[MachineName.RUN].allowed.get(end.state, ()) == ()
        assert compiled[MachineName.LOOP].allowed.get(end.loop_state or "", ()) == ()
        return
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


def _turn_miscounted(cex: Counterexample, seen: list[RunData], _: Compiled) -> None:
    last = cex.steps[-1]
    starts = (last.machine, last.event, last.target) == (MachineName.RUN, "submit", "busy")
    starts = starts and last.source != "busy"
    assert seen[-1].turn - seen[-2].turn != (1 if starts else 0)


def _pending_not_calls(cex: Counterexample, seen: list[RunData], _: Compiled) -> None:
    end, last = seen[-1], cex.steps[-1]
    assert (end.state, last.event) == ("requires_action", "need_action")
    calls = last.arguments["calls"]
    assert isinstance(calls, list)
    pending = end.pending
    assert not pending or len(set(pending)) < len(pending) or not set(pending) <= set(calls)


def _effect_differs(cex: Counterexample, seen: list[RunData], _: Compiled) -> None:
    last, before, after = cex.steps[-1], seen[-2], seen[-1]
    assert last.target is not None
    table = TABLES[last.machine]
    wanted = expected(table.effects, last.event, last.source, last.target, before, last.arguments)
    state = "state" if last.machine is MachineName.RUN else "loop_state"
    fields = [f for f in RunData.__dataclass_fields__ if f != state]
    assert effect_mismatch(fields, before, after, wanted) is not None


def _names_the_field(cex: Counterexample, seen: list[RunData], _: Compiled) -> None:
    assert repr(cex.steps[-1].event) in cex.message
    assert "reads '" in cex.message


def _agent_cannot(cex: Counterexample, seen: list[RunData], _: Compiled) -> None:
    last = cex.steps[-1]
    assert f"{last.machine.value} {last.event} {last.source} → {last.target}" in cex.message
    # On the path, some step breaks the Agent's rules: a loop event while the run is not
    # busy, a follow-up without its leading event, or a leading event without its follow-up.
    owed = {(c.machine, c.event, c.target): c.then for c in COUPLINGS}
    broken, owes = [], None
    for number, (step, data) in enumerate(zip(cex.steps, seen, strict=False)):
        follows = owes is not None and step.event == owes
        if owes is not None and not follows:
            broken.append(number)
        if step.machine is MachineName.LOOP and data.state != "busy" and not follows:
            broken.append(number)
        if step.event in FOLLOW_UPS and not follows:
            broken.append(number)
        owes = owed.get((step.machine, step.event, step.target or ""))
    assert broken or "never taken" in cex.message


WAITING = {"requires_action", "input_required", "awaiting_action", "awaiting_input"}
END: dict[str, End] = {
    "I1": _last_accepted_from_shutdown,
    "I2": _stuck,
    "I3": _no_path,
    "I4": _refusal_changed_data,
    "I5": _turn_miscounted,
    "I6": _pending_not_calls,
    "I8": _past_the_cap,
    "determinism": _overlap,
    "bounded-loop": _goes_round,
    "conformance": _against_the_spec,
    "effects": _effect_differs,
    "varied": _names_the_field,
    "agent-coverage": _agent_cannot,
}
"""What the end of each property's counterexample must show, once replayed."""


def _compiled(run: type[Any], loop: type[Any]) -> Compiled:
    return {
        MachineName.RUN: compile_machine(run, MachineName.RUN, "state"),
        MachineName.LOOP: compile_machine(loop, MachineName.LOOP, "loop_state"),
    }


def test_counterexample_replays_to_the_failure(broken: Built) -> None:
    mutant, run, loop, report = broken
    cex = report[mutant.prop].counterexample
    assert cex is not None
    if mutant.prop == "exceptions":
        seen = replay(run, loop, dataclasses.replace(cex, steps=cex.steps[:-1], loaded={}))
        last, data = cex.steps[-1], seen[-1]
        for name, value in {**last.environment, **cex.loaded}.items():
            setattr(data, name, value)
        machine = Machine(_compiled(run, loop)[last.machine], data, Emitter("replay"))
        with pytest.raises(Exception) as raised:  # noqa: PT011 - any exception but a refusal
            machine.send(last.event, **last.arguments)
        assert not isinstance(raised.value, IllegalTransitionError)
        assert type(raised.value).__name__ in cex.message
        return

    seen = replay(run, loop, cex)

    END[mutant.prop](cex, seen, _compiled(run, loop))


def test_counterexample_is_printed_and_drawn(broken: Built) -> None:
    mutant, _, _, report = broken
    cex = report[mutant.prop].counterexample
    assert cex is not None

    text, dot = str(report), report.dot(mutant.prop)

    assert f"{mutant.prop}: {cex.message}" in text
    for step in cex.steps:
        assert step.describe(cex.baseline) in text
    if cex.loaded:  # said just before the last step, which needs it
        shown = ", ".join(f"{name}={value!r}" for name, value in cex.loaded.items())
        lines = text.splitlines()
        at = lines.index(f"        (the data holding {shown})")
        assert lines[at + 1].endswith(cex.steps[-1].describe(cex.baseline))
    assert dot.startswith("digraph counterexample")
    assert dot.count("color=red") >= len({(s.machine, s.source, s.event) for s in cex.steps})
    for unreached in cex.unreached:
        assert f'"{unreached}" [label={unreached.split(".")[1]}' in dot


LOADED = ("need_action_drops_the_queue", "pause_drops_the_queue", "second_interrupt_raises")


@pytest.mark.parametrize("name", LOADED)
def test_a_failure_on_data_no_configuration_holds_says_what_it_held(name: str) -> None:
    """Without the loaded step these mutants passed every property (queued inputs lost)."""
    mutant = MUTANTS[name]
    report = check(mutant, *mutant.build())
    cex = report[mutant.prop].counterexample
    assert cex is not None
    assert cex.loaded["queued"] == ("queued while busy",)
    assert cex.loaded["cancel_requested"] is True
    assert "from data also holding queued=('queued while busy',)" in cex.message


def test_fail_fast_finds_the_full_explorations_counterexample() -> None:
    machines = MUTANTS["queued_input_counts_a_turn"].build()

    full = verify(*machines, max_iterations=1)
    fast = verify(*machines, max_iterations=1, fail_fast=True)

    assert fast.stopped
    assert not full.stopped
    assert fast.configurations * 10 < full.configurations
    assert [r.name for r in fast.failures if r.status == "fail"] == ["I5", "effects"]
    for name in ("I5", "effects"):  # found at the same configuration, as short
        assert fast[name].counterexample == full[name].counterexample
    assert "stopped at the first failure (fail_fast)" in str(fast)


def test_a_guard_that_counts_decisions_passes_when_there_is_only_one_call_id() -> None:
    run, loop = MUTANTS["resolve_action_counts_decisions"].build()
    events = default_domains(1).events
    one_id = default_domains(1).extended(
        events={
            name: tuple(v for v in events[name] if "c2" not in str(v))
            for name in ("need_action", "need_input", "resolve_action", "resolved")
        }
    )

    assert verify(run, loop, domains=one_id)["conformance"].passed
    with_two_ids = verify(run, loop, max_iterations=1, fail_fast=True)
    assert with_two_ids["conformance"].status == "fail"
