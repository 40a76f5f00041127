"""The flat DOT (``flat=True``): every state and row, guards, highlights and weighted paths."""

from __future__ import annotations

import pytest

from agentfsm import Agent, Event, combined_diagram, run_diagram
from agentfsm.diagrams import diagram, loop_diagram, path_counts
from agentfsm.fsm import RunData
from agentfsm.states import LOOP_TABLE, RUN_TABLE, MachineTable
from agentfsm.states.tables import TransitionRow
from tests.diagrams.dotparse import parse


def _label(row: TransitionRow) -> str:
    return row.event + (f" [{row.guard}]" if row.guard else "")


def _assert_table_drawn(source: str, table: MachineTable) -> None:
    dot = parse(source)
    machine = table.name.value
    for state in table.states:
        assert dot.nodes[f"{machine}.{state}"]["label"] == state
    drawn = [(s, t, a["label"]) for s, t, a in dot.edges if a.get("label")]
    for row in table.rows:
        label = _label(row) + (" (internal)" if row.internal else "")
        assert (f"{machine}.{row.source}", f"{machine}.{row.target}", label) in drawn, row
    assert len([e for e in drawn if e[0].startswith(f"{machine}.")]) == len(table.rows)


@pytest.mark.parametrize(
    ("build", "tables"),
    [
        (run_diagram, (RUN_TABLE,)),
        (loop_diagram, (LOOP_TABLE,)),
        (combined_diagram, (RUN_TABLE, LOOP_TABLE)),
    ],
)
def test_every_state_and_every_row_is_drawn(build: object, tables: tuple[MachineTable]) -> None:
    source = build(flat=True)  # type: ignore[operator]
    for table in tables:
        _assert_table_drawn(source, table)


def test_edges_carry_event_and_guard() -> None:
    dot = parse(run_diagram(flat=True))
    assert dot.edge("run.ready", "run.busy", "submit")["label"] == "submit [submit_allowed]"
    assert dot.edge("run.busy", "run.failed", "cancel")["label"] == "cancel [at_boundary]"
    assert dot.edge("run.created", "run.ready", "start")["label"] == "start"


def test_internal_transitions_are_dashed_self_loops_marked_internal() -> None:
    dot = parse(run_diagram(flat=True))
    internal = [(s, t, a) for s, t, a in dot.edges if a.get("class") == "internal"]
    assert [(s, t) for s, t, _ in internal] == [("run.busy", "run.busy")] * 2
    assert {a["label"] for *_, a in internal} == {
        "submit [input_queued] (internal)",
        "submit [input_interrupts] (internal)",
    }
    assert all(a["style"] == "dashed" for *_, a in internal)


def test_initial_final_and_waiting_states_are_styled_distinctly() -> None:
    dot = parse(combined_diagram(flat=True))
    kinds = {node: attrs.get("class") for node, attrs in dot.nodes.items()}
    assert kinds["run.created"] == "initial"
    assert kinds["loop.thinking"] == "initial"
    assert kinds["run.shutdown"] == "final"
    assert {kinds[f"loop.{s}"] for s in ("answered", "exhausted", "errored", "aborted")} == {
        "final"
    }
    assert kinds["run.requires_action"] == kinds["loop.awaiting_input"] == "waiting"
    assert kinds["run.ready"] == "state"
    styles = {
        kind: (dot.nodes[node]["shape"], dot.nodes[node]["style"])
        for node, kind in (
            ("run.created", "initial"),
            ("run.shutdown", "final"),
            ("run.input_required", "waiting"),
            ("run.ready", "state"),
        )
    }
    assert len(set(styles.values())) == 4
    assert ("run.__start", "run.created") in [(s, t) for s, t, _ in dot.edges]


def test_combined_draws_the_loop_inside_a_busy_cluster() -> None:
    source = combined_diagram(flat=True)
    assert parse(source).clusters == ["cluster_busy"]
    cluster = source[source.index("subgraph cluster_busy") : source.index("\t}")]
    assert '"run.busy"' in cluster
    assert all(f'"loop.{state}"' in cluster for state in LOOP_TABLE.states)
    assert '"run.ready"' not in cluster


def test_the_current_states_of_a_live_agent_are_highlighted(
    answered_run: tuple[Agent, list[Event]],
) -> None:
    agent, _ = answered_run
    dot = parse(combined_diagram(agent, flat=True))
    current = sorted(n for n, a in dot.nodes.items() if "current" in a.get("class", ""))
    assert current == ["loop.answered", "run.completed"]
    assert dot.nodes["run.completed"]["xlabel"] == "now"
    assert dot.nodes["run.ready"].get("xlabel") is None


def test_busy_is_highlighted_with_its_cluster() -> None:
    data = RunData("r")
    data.state, data.loop_state = "busy", "acting"
    source = combined_diagram(data, flat=True)
    dot = parse(source)
    assert "current" in dot.nodes["run.busy"]["class"]
    assert "current" in dot.nodes["loop.acting"]["class"]
    assert "current" not in dot.nodes["run.ready"]["class"]
    assert parse(run_diagram(data, flat=True)).nodes["run.busy"]["class"] == "state current"
    assert (
        "current"
        not in parse(loop_diagram(RunData("r"), flat=True)).nodes["loop.thinking"]["class"]
    )


def test_a_real_runs_path_is_weighted_by_count(
    answered_run: tuple[Agent, list[Event]],
) -> None:
    _, events = answered_run
    dot = parse(combined_diagram(events=events, flat=True))
    expected = {
        ("run.created", "run.ready", "start"): 1,
        ("run.ready", "run.busy", "submit"): 1,
        ("run.completed", "run.busy", "submit"): 1,
        ("run.busy", "run.completed", "complete"): 2,
        ("loop.thinking", "loop.acting", "model_replied [may_run_now]"): 1,
        ("loop.acting", "loop.thinking", "tools_finished"): 1,
        ("loop.thinking", "loop.answered", "model_replied [no_tool_calls]"): 2,
    }
    weighted = [a for *_, a in dot.edges if "\\n" in a.get("label", "")]
    assert len(weighted) == len(expected)
    for (source, target, start), count in expected.items():
        attrs = dot.edge(source, target, start)
        assert attrs["label"].endswith(f"\\n{count}x")
        assert (attrs["penwidth"], attrs["color"]) == (str(1 + count), "#2563eb")
    assert "penwidth" not in dot.edge("run.busy", "run.failed", "fail")


def test_run_diagram_counts_only_run_events(answered_run: tuple[Agent, list[Event]]) -> None:
    _, events = answered_run
    dot = parse(run_diagram(events=events, flat=True))
    assert all(s.startswith("run.") for s, _, a in dot.edges if "\\n" in a.get("label", ""))
    assert dot.edge("run.busy", "run.completed", "complete")["label"].endswith("\\n2x")


def test_an_edge_not_in_the_table_is_drawn_as_a_stray() -> None:
    stray = Event(
        seq=1, run_id="r", machine="run", event="jump", source="created", target="busy", at=0.0
    )
    dot = parse(run_diagram(events=[stray], flat=True))
    edge = dot.edge("run.created", "run.busy", "jump")
    assert (edge["color"], edge["label"]) == ("red", "jump (not in the table)\\n1x")


def test_path_counts_counts_each_edge() -> None:
    events = [
        Event(
            seq=n,
            run_id="r",
            machine="loop",
            event="abort",
            source="acting",
            target="aborted",
            at=0.0,
        )
        for n in (1, 2)
    ]
    assert path_counts(events) == {("loop", "abort", "acting", "aborted"): 2}


def test_the_same_machine_gives_byte_identical_dot(
    answered_run: tuple[Agent, list[Event]],
) -> None:
    agent, events = answered_run
    for view in ("run", "loop", "combined"):
        for flat in (False, True):
            first = diagram(view, agent, events, flat=flat).encode()
            assert first == diagram(view, agent, list(events), flat=flat).encode()
        assert b"0x" not in first
    assert run_diagram(flat=True) == run_diagram(flat=True)
    assert run_diagram() == run_diagram()
