"""Mermaid and Markdown, from the same tables as the DOT."""

from __future__ import annotations

import pytest

from agentfsm.diagrams import markdown, markdown_table, mermaid
from agentfsm.fsm import RunData
from agentfsm.states import LOOP_TABLE, RUN_TABLE
from tests.diagrams.mermaid_read import transitions


def test_markdown_table_has_one_line_per_row() -> None:
    lines = markdown_table(RUN_TABLE).splitlines()
    assert lines[0] == "| event | from | guard | to |"
    assert len(lines) == 2 + len(RUN_TABLE.rows)
    assert "| `submit` | ready | submit_allowed | busy |" in lines
    assert "| `submit` | busy | input_queued | busy (internal) |" in lines
    assert "| `start` | created | — | ready |" in lines


def test_markdown_of_a_view_has_its_tables_under_headings() -> None:
    both = markdown("combined", flat=True)
    assert both.index("## RunLifecycle") < both.index("## TurnLoop")
    assert markdown_table(LOOP_TABLE) in both
    assert "## TurnLoop" not in markdown("run", flat=True)
    assert markdown("loop", flat=True) == f"## TurnLoop\n\n{markdown_table(LOOP_TABLE)}\n"


def test_mermaid_has_every_row_and_the_initial_and_final_states() -> None:
    text = mermaid("run", flat=True)
    lines = text.splitlines()
    assert lines[0] == "stateDiagram-v2"
    assert "    [*] --> created" in lines
    assert "    shutdown --> [*]" in lines
    assert "    ready --> busy: submit [submit_allowed]" in lines
    assert "    busy --> busy: submit [input_queued] (internal)" in lines
    assert len([line for line in lines if "-->" in line]) == len(RUN_TABLE.rows) + 2
    assert "    class requires_action waiting" in lines


def test_mermaid_combined_nests_the_loop_in_busy() -> None:
    lines = mermaid("combined", flat=True).splitlines()
    start = lines.index("    state busy {")
    end = lines.index("    }")
    inside = lines[start + 1 : end]
    assert "        [*] --> thinking" in inside
    assert "        acting --> thinking: tools_finished [below_max_iterations]" in inside
    finals = len(LOOP_TABLE.final)
    assert len([line for line in inside if "-->" in line]) == len(LOOP_TABLE.rows) + 1 + finals


def test_mermaid_marks_the_current_states() -> None:
    data = RunData("r")
    data.state, data.loop_state = "input_required", "awaiting_input"
    lines = mermaid("combined", data, flat=True).splitlines()
    assert [line for line in lines if line.endswith(" current")] == [
        "    class input_required current",
        "    class awaiting_input current",
    ]
    assert not [
        line for line in mermaid("loop", flat=True).splitlines() if line.endswith(" current")
    ]


@pytest.mark.parametrize("view", ["run", "loop", "combined"])
def test_grouped_mermaid_expands_to_exactly_the_tables(view: str) -> None:
    tables = {"run": (RUN_TABLE,), "loop": (LOOP_TABLE,)}.get(view, (RUN_TABLE, LOOP_TABLE))
    rows = {
        (t.name.value, r.event, r.source, r.target, r.guard, r.internal)
        for t in tables
        for r in t.rows
    }
    text = mermaid(view)  # type: ignore[arg-type]
    assert "state at_rest {" in text or view == "loop"
    assert transitions(text, view) == rows


def test_grouped_markdown_names_the_groups_and_the_history() -> None:
    text = markdown("run")
    assert "| `shutdown` | **at_rest** | — | shutdown |" in text
    assert "| `resume` | paused | `paused_in_<state>` | H of **active** |" in text
    assert "- **waiting**: requires_action, input_required" in text
    assert text.count("| `shutdown` |") == 3
