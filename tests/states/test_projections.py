"""The projection table (docs/contract.md §4) against every configuration the machines reach."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfsm.fsm.compiled import compile_machine
from agentfsm.fsm.data import RunData
from agentfsm.fsm.guards import GUARD_FUNCTIONS
from agentfsm.fsm.lifecycle import RunLifecycle
from agentfsm.fsm.turnloop import TurnLoop
from agentfsm.states.names import RUN_WAITING, CompletedReason, FailedReason, MachineName, RunState
from agentfsm.states.projections import (
    A2A_INTERRUPTED,
    A2A_TERMINAL,
    PROJECTIONS,
    A2AState,
    AssistantsStatus,
    project,
)
from agentfsm.states.tables import TABLES
from agentfsm.verify.domains import default_domains
from agentfsm.verify.explore import Explorer


@functools.cache
def reachable() -> tuple[tuple[str, str | None, str | None], ...]:
    """(state, reason, loop state) of every configuration the verifier reaches.

    The reason is made part of a configuration's key, so that configurations told apart
    only by it are each reached.
    """
    explorer = Explorer(
        compile_machine(RunLifecycle, MachineName.RUN, "state"),
        compile_machine(TurnLoop, MachineName.LOOP, "loop_state"),
        default_domains(2, typed=True).extended(abstraction={"reason": None}),
        RunData,
        TABLES,
        GUARD_FUNCTIONS,
    )
    explorer.explore()
    assert explorer.complete
    found = {(n.data.state, n.data.reason, n.data.loop_state) for n in explorer.nodes}
    return tuple(sorted(found, key=repr))


def test_every_run_state_and_reason_has_exactly_one_row() -> None:
    keys = [(row.state, row.reason) for row in PROJECTIONS]
    assert len(keys) == len(set(keys))
    expected = {
        *((state, None) for state in RunState if state not in (RunState.COMPLETED, "failed")),
        *((RunState.COMPLETED, reason) for reason in CompletedReason),
        *((RunState.FAILED, reason) for reason in FailedReason),
    }
    assert set(keys) == expected


def test_the_table_says_what_lifecycle_md_says() -> None:
    assert project("requires_action").a2a == A2AState.INPUT_REQUIRED
    assert project("completed", "max_iterations").assistants == AssistantsStatus.INCOMPLETE
    assert project("failed", "cancelled").a2a == A2AState.CANCELED
    assert project("failed", "expired").assistants == AssistantsStatus.EXPIRED
    assert project("paused", "answered").a2a == A2AState.WORKING  # a paused run's reason is old


def test_exploration_reaches_every_row() -> None:
    seen = {project(state, reason) for state, reason, _ in reachable()}
    assert seen == set(PROJECTIONS)


@given(st.sampled_from(reachable()))
def test_every_reachable_configuration_maps_to_one_a2a_state(
    configuration: tuple[str, str | None, str | None],
) -> None:
    state, reason, loop_state = configuration
    row = project(state, reason)
    assert isinstance(row.a2a, A2AState)
    assert [r for r in PROJECTIONS if r is row] == [row]  # exactly one row
    at_rest = state not in (RunState.BUSY, RunState.PAUSED, *RUN_WAITING)
    if row.a2a in A2A_TERMINAL:
        assert at_rest, configuration
    assert (row.a2a in A2A_INTERRUPTED) == (state in RUN_WAITING)
    if state == RunState.BUSY:
        assert loop_state is not None
        assert row.a2a == A2AState.WORKING


@pytest.mark.parametrize(
    ("state", "reason", "message"),
    [
        ("sleeping", None, "state is 'sleeping'; expected a run state"),
        ("completed", "error", "reason for state 'completed' is 'error'; expected one of"),
        ("failed", None, "reason for state 'failed' is None"),
    ],
)
def test_project_names_what_it_cannot_project(
    state: str, reason: str | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        project(state, reason)


def test_the_serving_page_shows_the_table_as_it_is() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "serving.md").read_text()
    start = page.index("| run state | reason | A2A task state |")
    lines = page[start:].split("\n\n")[0].splitlines()[2:]
    shown = [tuple(cell.strip() for cell in line.strip("|").split("|")) for line in lines]
    assert shown == [
        (
            row.state,
            row.reason or "",
            row.a2a,
            row.assistants or "—",
            row.note,
        )
        for row in PROJECTIONS
    ]
