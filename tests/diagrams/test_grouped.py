"""The grouped drawings (statecharts): every drawn edge expands back to exactly the tables.

The DOT is read back knowing only the notation (`tests.diagrams.statechart_dot`), so what a
reader sees is checked, not the model that drew it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentfsm.diagrams import View, diagram, save_diagram
from agentfsm.diagrams.grouping import expand, statechart
from agentfsm.fsm import RunData
from agentfsm.states import LOOP_TABLE, RUN_TABLE, Event, MachineTable
from agentfsm.states.groups import GROUP_NAMES
from agentfsm.states.tables import TransitionRow
from tests.diagrams.statechart_dot import Transition, drawn_edges, read, transitions

VIEWS: dict[View, tuple[MachineTable, ...]] = {
    "run": (RUN_TABLE,),
    "loop": (LOOP_TABLE,),
    "combined": (RUN_TABLE, LOOP_TABLE),
}

MOST_EDGES: dict[View, int] = {"run": 16, "loop": 25, "combined": 36}
"""The issue's targets (the loop's: no more than its flat drawing, 25)."""


def _rows(tables: tuple[MachineTable, ...]) -> list[Transition]:
    """Every row of ``tables``, sorted, as plain strings."""
    return sorted(
        (t.name.value, str(r.event), str(r.source), str(r.target), r.guard, r.internal)
        for t in tables
        for r in t.rows
    )


def _drawn(source: str) -> list[Transition]:
    """Every transition the DOT shows, sorted: each once, or a duplicate shows."""
    return sorted(transitions(source), key=repr)


def _plain(row: TransitionRow) -> tuple[str, str, str, str | None, bool]:
    return (str(row.event), str(row.source), str(row.target), row.guard, row.internal)


@pytest.mark.parametrize("view", list(VIEWS))
def test_every_drawn_edge_expands_to_exactly_the_tables(view: View) -> None:
    assert _drawn(diagram(view)) == sorted(_rows(VIEWS[view]), key=repr)


@pytest.mark.parametrize("view", list(VIEWS))
def test_with_a_run_drawn_on_it_the_picture_still_expands_to_the_tables(
    view: View, answered_run: tuple[object, list[Event]]
) -> None:
    agent, events = answered_run
    assert _drawn(diagram(view, agent, events)) == sorted(_rows(VIEWS[view]), key=repr)  # type: ignore[arg-type]


@pytest.mark.parametrize("view", list(VIEWS))
def test_the_default_views_draw_few_edges(view: View) -> None:
    grouped, flat = drawn_edges(diagram(view)), drawn_edges(diagram(view, flat=True))
    assert grouped <= MOST_EDGES[view] < flat or (view == "loop" and grouped < flat)


def test_the_check_sees_a_drawing_that_lies() -> None:
    source = diagram("run")
    lying = source.replace('label="cancel\\nexpire [deadline_passed]"', "label=cancel")
    assert lying != source
    missing = set(_rows((RUN_TABLE,))) - set(transitions(lying))
    assert missing == {
        ("run", "expire", s, "failed", "deadline_passed", False)
        for s in ("requires_action", "input_required")
    }
    wider = source.replace("ltail=cluster_run_waiting", "ltail=cluster_run_at_rest")
    assert set(transitions(wider)) - set(_rows((RUN_TABLE,)))
    line = next(line for line in source.splitlines() if '-> "run.paused"' in line)
    twice = source.replace(line, f"{line}\n{line}")
    assert _drawn(twice) != sorted(_rows((RUN_TABLE,)), key=repr)
    assert set(_drawn(twice)) == set(_rows((RUN_TABLE,)))


@pytest.mark.parametrize("table", [RUN_TABLE, LOOP_TABLE])
def test_the_model_expands_to_the_table_and_every_group_is_named(table: MachineTable) -> None:
    chart = statechart(table)
    assert {_plain(row) for row in expand(chart)} == {_plain(row) for row in table.rows}
    assert len(expand(chart)) == len(table.rows)
    names = {group.name for group in chart.groups}
    assert names == set(GROUP_NAMES[table.name].values())


def test_the_run_lifecycle_reads_as_a_statechart() -> None:
    chart = read(diagram("run"))
    assert chart.parents == {
        "cluster_run_active": None,
        "cluster_run_at_rest": "cluster_run_active",
        "cluster_run_idle": "cluster_run_at_rest",
        "cluster_run_waiting": "cluster_run_at_rest",
    }
    assert chart.nodes["run.H.active"] == ["cluster_run_active"]
    shutdown = [(t, a.get("ltail")) for t, h, a in chart.edges if h == "run.shutdown"]
    assert [ltail for _, ltail in shutdown] == [None, "cluster_run_at_rest", None]
    assert "submit [input_queued]" in chart.labels["run.busy"]


def test_the_combined_view_draws_the_loop_inside_busy_and_its_edges_at_the_border() -> None:
    chart = read(diagram("combined"))
    assert chart.parents["cluster_busy"] == "cluster_run_active"
    assert chart.parents["cluster_loop_working"] == "cluster_busy"
    assert "run.busy" not in chart.nodes
    into_busy = [
        a for t, h, a in chart.edges if "cluster_busy" in (a.get("lhead"), a.get("ltail"))
    ]
    assert len(into_busy) == 8  # submit, the two waits both ways, complete, fail, pause


def test_a_group_edge_is_taken_when_any_of_its_states_took_it() -> None:
    events = [
        Event(
            seq=1,
            run_id="r",
            machine="run",
            event="pause",
            source="failed",
            target="paused",
            at=0.0,
        ),
        Event(
            seq=2,
            run_id="r",
            machine="run",
            event="pause",
            source="ready",
            target="paused",
            at=0.0,
        ),
        Event(
            seq=3,
            run_id="r",
            machine="run",
            event="resume",
            source="paused",
            target="ready",
            at=0.0,
        ),
    ]
    chart = read(diagram("run", events=events))
    pause = [
        a
        for t, h, a in chart.edges
        if a.get("ltail") == "cluster_run_at_rest" and h == "run.paused"
    ]
    assert [(a["label"], a["color"]) for a in pause] == [("pause\\n2x", "#2563eb")]
    resume = [a for *_, a in chart.edges if a.get("class") == "history"]
    assert [a["label"] for a in resume] == ["resume\\n1x"]


def test_the_current_state_is_highlighted_inside_its_groups() -> None:
    data = RunData("r")
    data.state, data.loop_state = "requires_action", "awaiting_action"
    chart = read(diagram("combined", data))
    assert chart.nodes["run.requires_action"] == [
        "cluster_run_active",
        "cluster_run_at_rest",
        "cluster_run_waiting",
    ]
    source = diagram("combined", data)
    assert source.count("current") == 2


@pytest.mark.parametrize("view", list(VIEWS))
def test_a_run_busy_now_still_expands_to_the_tables(view: View) -> None:
    data = RunData("r")
    data.state, data.loop_state = "busy", "acting"
    source = diagram(view, data)
    assert "(now)" in source
    assert _drawn(source) == sorted(_rows(VIEWS[view]), key=repr)


def test_flat_must_be_a_bool(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="flat"):
        diagram("run", flat="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="flat"):
        save_diagram(tmp_path / "x.dot", flat=1)  # type: ignore[arg-type]
    assert not (tmp_path / "x.dot").exists()
