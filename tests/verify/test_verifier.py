"""The verifier proves the shipped machines, and its domains, limits and options work."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from statemachine import State, StateChart

from agentfsm.fsm import LOOP_MACHINE, RunData, RunLifecycle
from agentfsm.fsm import effects as fx
from agentfsm.fsm import guards as g
from agentfsm.fsm.guards import GUARD_FUNCTIONS
from agentfsm.states import LOOP_TABLE, RUN_TABLE
from agentfsm.verify import (
    PROPERTIES,
    VerificationReport,
    default_domains,
    load_class,
    valuations,
    verify,
)
from tests.verify.mutants import MUTANTS
from tests.verify.rebuild import rebuild


@pytest.fixture(scope="module")
def shipped() -> VerificationReport:
    return verify(strict=True)  # as CI runs it: a warning would fail


def test_shipped_machines_pass_every_property(shipped: VerificationReport) -> None:
    assert [(r.name, r.status) for r in shipped.properties] == [(p, "pass") for p in PROPERTIES]
    assert shipped.ok
    assert shipped.failures == shipped.warnings == ()
    assert all(r.counterexample is None for r in shipped.properties)


def test_shipped_exploration_takes_every_row_of_both_tables(
    shipped: VerificationReport,
) -> None:
    rows = {("run", r.event, r.source, r.target) for r in RUN_TABLE.rows}
    rows |= {("loop", r.event, r.source, r.target) for r in LOOP_TABLE.rows}

    assert shipped.declared == rows
    assert shipped.covered == rows  # the default domains enable every edge at least once


def test_shipped_verification_counts_its_work(shipped: VerificationReport) -> None:
    # Its speed is a benchmark's business (benchmarks/), not a test's: only that it is timed.
    assert shipped.seconds > 0
    assert shipped.configurations > 1_000
    assert shipped.transitions > shipped.configurations
    assert shipped.sends + shipped.replayed > shipped.transitions  # each step, once
    assert shipped.replayed > shipped.sends  # most steps were replayed, not sent again


def test_report_prints_one_row_per_property_and_the_totals(shipped: VerificationReport) -> None:
    text = str(shipped)

    assert text.startswith("agentfsm verify: RunLifecycle and TurnLoop: all properties hold")
    for name, description in PROPERTIES.items():
        assert any(
            line.split()[:2] == [name, "pass"] and line.endswith(description)
            for line in text.splitlines()
        )
    assert f"{shipped.configurations} configurations" in text
    declared = len(
        {(t.name, r.event, r.source, r.target) for t in (RUN_TABLE, LOOP_TABLE) for r in t.rows}
    )
    assert f"declared transitions taken: {declared} of {declared}" in text


def test_report_looks_properties_up_by_name(shipped: VerificationReport) -> None:
    assert shipped["I2"].passed
    with pytest.raises(KeyError, match="no property 'I99'"):
        shipped["I99"]
    with pytest.raises(ValueError, match="no counterexample"):
        shipped.dot()


def test_report_writes_no_diagram_when_nothing_failed(
    shipped: VerificationReport, tmp_path: Path
) -> None:
    assert shipped.write_dot(tmp_path / "cex.dot") == []
    assert list(tmp_path.iterdir()) == []


def test_each_failure_gets_its_own_diagram_file(tmp_path: Path) -> None:
    report = verify(*MUTANTS["loop_that_does_not_count"].build(), max_iterations=1)
    assert [r.name for r in report.failures] == ["I3", "bounded-loop", "effects"]
    assert [r.name for r in report.warnings] == ["varied", "agent-coverage"]

    written = report.write_dot(tmp_path / "cex.dot")

    dots = sorted(p.name for p in written if p.suffix == ".dot")
    assert dots == [
        "cex.agent-coverage.dot",
        "cex.bounded-loop.dot",
        "cex.dot",
        "cex.effects.dot",
        "cex.varied.dot",
    ]
    assert (tmp_path / "cex.dot").read_text().count('xlabel="never reached"') == 1
    assert "the loop can go round forever" in (tmp_path / "cex.bounded-loop.dot").read_text()
    svgs = [p for p in written if p.suffix == ".svg"]
    assert all(p.read_text().lstrip().startswith("<?xml") for p in svgs)


def test_without_conformance_a_missing_guard_on_complete_goes_unnoticed() -> None:
    report = verify(*MUTANTS["complete_without_guard"].build(), max_iterations=1, spec=None)

    assert report.ok  # only the spec tables say complete waits for the loop's outcome


def test_fail_fast_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="fail_fast must be True or False, not 'yes'"):
        verify(max_iterations=1, fail_fast="yes")  # type: ignore[arg-type]


def test_a_spec_guard_without_a_function_is_refused_up_front() -> None:
    with pytest.raises(ValueError, match="names guard 'submit_allowed'"):
        verify(max_iterations=1, spec_guards={})


def test_an_abstraction_that_is_not_finite_stops_and_says_so() -> None:
    domains = dataclasses.replace(
        default_domains(1).extended(abstraction={"turn": None}), max_configurations=300
    )

    report = verify(domains=domains)

    assert report["finite"].status == "fail"
    assert "stopped after 300 configurations" in str(report)
    assert {r.status for r in report.properties if r.name != "finite"} == {"unknown"}


@pytest.mark.parametrize(
    ("choices", "expected"),
    [
        ({}, [{}]),
        ({"text": ("a", "")}, [{"text": "a"}, {"text": ""}]),
        ({"a": (0, 1), "b": (True,)}, [{"a": 0, "b": True}, {"a": 1, "b": True}]),
        ({"a": (), "b": (1,)}, []),
    ],
    ids=["none", "one", "product", "empty-domain"],
)
def test_valuations_are_every_combination(
    choices: dict[str, Any], expected: list[dict[str, Any]]
) -> None:
    assert [dict(v) for v in valuations(**choices)] == expected


def test_extended_domains_merge_mappings_and_join_sets() -> None:
    base = default_domains(2)

    more = base.extended(
        events={"escalate": valuations(level=(1,))},
        environment={"at_boundary": (False,)},
        waiting=frozenset({"escalated"}),
    )

    assert more.events["escalate"] == ({"level": 1},)
    assert more.events["submit"] == base.events["submit"]
    assert more.environment["at_boundary"] == (False,)
    assert more.waiting == base.waiting | {"escalated"}
    assert base.waiting == default_domains(2).waiting  # the original is unchanged
    assert more.initial["max_iterations"] == (1, 2)


def test_the_bound_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_iterations must be a whole number >= 1, not 0"):
        default_domains(0)


@pytest.mark.parametrize(
    ("reference", "error", "match"),
    [
        ("agentfsm.fsm", ValueError, "expected 'package.module:Class'"),
        ("agentfsm.fsm:Nope", ValueError, "has no 'Nope'"),
        ("agentfsm.fsm:RUN_MACHINE", ValueError, "not a class"),
        ("agentfsm.nowhere:X", ImportError, "agentfsm.nowhere"),
    ],
)
def test_load_class_says_what_is_wrong_with_a_reference(
    reference: str, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        load_class(reference)


def test_load_class_finds_a_class_by_module_and_name() -> None:
    assert load_class("agentfsm.fsm:RunLifecycle") is RunLifecycle


# -- a user's own machine: an extra state, event, guard and data field ----------------------


@dataclasses.dataclass(slots=True)
class ReviewedData(RunData):
    review_required: bool = False
    """Set by the application: each tool round must be reviewed before the next call."""


def _review_required(model: ReviewedData, **_: object) -> bool:
    return model.review_required


def reviewed_loop(*, counted: bool) -> type[Any]:
    """TurnLoop plus ``reviewing``: a finished round waits for a reviewer's ``approve``.

    Approved, the turn goes on to its next iteration (``counted``), or, wrongly, back to
    ``acting`` for another round that no iteration counts.
    """
    thinking = State(initial=True, enter=fx.count_iteration)
    acting, reviewing = State(), State()
    awaiting_action, awaiting_input = State(), State()
    answered, exhausted, errored, aborted = (State(final=True) for _ in range(4))
    approve = (
        reviewing.to(thinking, cond=g.below_max_iterations)
        | reviewing.to(exhausted, cond=g.at_max_iterations)
        if counted
        else reviewing.to(acting)
    )
    members = {
        "thinking": thinking,
        "acting": acting,
        "reviewing": reviewing,
        "awaiting_action": awaiting_action,
        "awaiting_input": awaiting_input,
        "answered": answered,
        "exhausted": exhausted,
        "errored": errored,
        "aborted": aborted,
        "model_replied": thinking.to(answered, cond=g.no_tool_calls)
        | thinking.to(awaiting_action, cond=g.needs_action)
        | thinking.to(awaiting_input, cond=g.asks_user_only)
        | thinking.to(acting, cond=g.may_run_now),
        "model_failed": thinking.to(errored),
        "resolved": awaiting_action.to(
            acting, cond=g.decides_every_pending_call, on=fx.clear_pending
        )
        | awaiting_input.to(acting, cond=g.decides_every_pending_call, on=fx.clear_pending),
        "review": acting.to(reviewing, cond=_review_required),
        "approve": approve,
        "tools_finished": acting.to(thinking, cond=g.below_max_iterations)
        | acting.to(exhausted, cond=g.at_max_iterations),
        "abort": thinking.to(aborted)
        | acting.to(aborted)
        | reviewing.to(aborted)
        | awaiting_action.to(aborted)
        | awaiting_input.to(aborted),
    }
    chart: type[Any] = type(f"ReviewedLoop{counted}", (StateChart,), members)
    return chart


REVIEW_DOMAINS = default_domains(2).extended(
    environment={"review_required": (False, True)},
    waiting=frozenset({"reviewing"}),
    answers=frozenset({"approve"}),
)


def test_a_users_machine_verifies_with_its_domains_extended() -> None:
    report = verify(
        RunLifecycle,
        reviewed_loop(counted=True),
        domains=REVIEW_DOMAINS,
        data=ReviewedData,
        fail_fast=True,  # nothing fails: explored as fully as without it
    )

    assert report.ok, report
    assert not report.stopped
    assert ("loop", "approve", "reviewing", "thinking") in report.covered


def test_without_its_environment_field_the_users_state_is_never_reached() -> None:
    report = verify(RunLifecycle, reviewed_loop(counted=True), max_iterations=2, data=ReviewedData)

    assert [r.name for r in report.failures] == ["I3"]
    assert "loop.reviewing" in str(report)


def test_a_review_that_goes_back_to_acting_is_an_unbounded_loop() -> None:
    report = verify(
        RunLifecycle, reviewed_loop(counted=False), domains=REVIEW_DOMAINS, data=ReviewedData
    )

    cex = report["bounded-loop"].counterexample
    assert cex is not None
    assert [s.event for s in cex.steps[cex.cycle :]] == ["review", "approve"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"environment": {"iteration": (0, 1)}}, r"\['iteration'\] cannot be both environment"),
        ({"environment": {"at_boundary": ()}}, r"\['at_boundary'\] have no values"),
        ({"initial": {"max_turns": ()}}, r"\['max_turns'\] have no values"),
    ],
    ids=["environment-in-configuration", "empty-environment", "empty-initial"],
)
def test_domains_that_cannot_be_explored_are_refused_up_front(
    extra: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        verify(domains=default_domains(1).extended(**extra))


def _raising(model: RunData, **_: object) -> bool:
    raise ZeroDivisionError("a spec guard's bug")


def test_a_raising_spec_guard_fails_exceptions_with_its_path() -> None:
    guards = {**GUARD_FUNCTIONS, "at_boundary": _raising}
    report = verify(max_iterations=1, spec_guards=guards, fail_fast=True)

    cex = report["exceptions"].counterexample
    assert cex is not None
    # at_boundary guards two rows from busy: whichever is sent first meets it
    event = cex.steps[-1].event
    assert f"the spec's guard for {event!r} from busy raised ZeroDivisionError" in cex.message
    assert [s.event for s in cex.steps] == ["start", "submit", event]
    assert event in {"cancel", "pause"}


def _count_badly(model: RunData, **_: object) -> None:
    raise KeyError("iteration")


def test_a_raising_enter_action_of_the_loop_fails_exceptions() -> None:
    loop = rebuild(LOOP_MACHINE, "BadStart", enters={"thinking": (_count_badly,)})

    report = verify(RunLifecycle, loop, max_iterations=1, fail_fast=True)

    cex = report["exceptions"].counterexample
    assert cex is not None
    assert "entering the loop's initial state raised KeyError" in cex.message
    assert [s.event for s in cex.steps] == ["start", "submit"]


def test_an_environment_field_with_a_single_value_is_not_varied() -> None:
    domains = default_domains(2, typed=True).extended(environment={"at_boundary": (True,)})

    report = verify(domains=domains)

    assert report["varied"].status == "warn"
    assert report.ok  # a warning only, unless strict
    assert "reads 'at_boundary', an environment field with a single value" in str(report)
    assert verify(domains=domains, strict=True)["varied"].status == "fail"
