"""Mermaid and Markdown, from the same tables as the DOT."""

from __future__ import annotations

from agentfsm.diagrams import markdown, markdown_table, mermaid
from agentfsm.fsm import RunData
from agentfsm.states import LOOP_TABLE, RUN_TABLE


def test_markdown_table_has_one_line_per_row() -> None:
    lines = markdown_table(RUN_TABLE).splitlines()
    assert lines[0] == "| event | from | guard | to |"
    assert len(lines) == 2 + len(RUN_TABLE.rows)
    assert "| `submit` | ready | submit_allowed | busy |" in lines
    assert "| `submit` | busy | input_queued | busy (internal) |" in lines
    assert "| `start` | created | — | ready |" in lines


def test_markdown_of_a_view_has_its_tables_under_headings() -> None:
    both = markdown("combined")
    assert both.index("## RunLifecycle") < both.index("## TurnLoop")
    assert markdown_table(LOOP_TABLE) in both
    assert "## TurnLoop" not in markdown("run")
    assert markdown("loop") == f"## TurnLoop\n\n{markdown_table(LOOP_TABLE)}\n"


def test_mermaid_has_every_row_and_the_initial_and_final_states() -> None:
    text = mermaid("run")
    lines = text.splitlines()
    assert lines[0] == "stateDiagram-v2"
    assert "    [*] --> created" in lines
    assert "    shutdown --> [*]" in lines
    assert "    ready --> busy: submit [submit_allowed]" in lines
    assert "    busy --> busy: submit [input_queued] (internal)" in lines
    assert len([line for line in lines if "-->" in line]) == len(RUN_TABLE.rows) + 2
    assert "    class requires_action waiting" in lines


def test_mermaid_combined_nests_the_loop_in_busy() -> None:
    lines = mermaid("combined").splitlines()
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
    lines = mermaid("combined", data).splitlines()
    assert [line for line in lines if line.endswith(" current")] == [
        "    class input_required current",
        "    class awaiting_input current",
    ]
    assert not [line for line in mermaid("loop").splitlines() if line.endswith(" current")]
