"""Mermaid and Markdown, from the same tables as the DOT."""

from __future__ import annotations

import re

import pytest

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


def _mermaid_transitions(text: str, view: str) -> set[tuple[str, str, str, str, str | None, bool]]:
    """Every transition a grouped Mermaid text shows, each from a composite expanded."""
    members: dict[str, set[str]] = {}
    machine_of: dict[str, str] = {}
    stack: list[str] = []
    arrows = []
    for line in text.splitlines()[1:]:
        line = line.strip()
        machine = "loop" if view == "loop" or "busy" in stack else "run"
        if opened := re.fullmatch(r"state (\w+) \{", line):
            stack.append(opened[1])
            members[opened[1]] = set()
            machine_of[opened[1]] = machine
        elif line == "}":
            stack.pop()
        elif " --> " in line:
            arrows.append((machine, line))
        elif re.fullmatch(r"\w+", line):
            for group in stack:
                if machine_of[group] == machine:
                    members[group].add(line)
    for group, states in members.items():  # a run group holding busy holds busy
        if machine_of[group] == "run" and group != "busy" and _holds(text, group, "busy"):
            states.add("busy")
    found = set()
    for machine, line in arrows:
        ends, _, label = line.partition(": ")
        source, target = ends.split(" --> ")
        if "[*]" in (source, target):
            continue
        event, _, guard = label.partition(" [")
        guard = guard.split("]")[0] or None
        internal = label.endswith("(internal)")
        sources = members[source] if source in members and source != "busy" else {source}
        if target.endswith("_H"):
            for state in members[target[:-2]]:
                found |= {(machine, event, s, state, f"paused_in_{state}", False) for s in sources}
            continue
        found |= {(machine, event, s, target, guard, internal) for s in sources}
    return found


def _holds(text: str, group: str, state: str) -> bool:
    start = text.index(f"state {group} {{")
    depth, index = 0, start
    for index in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0 and text[index] == "}":
            break
    return f"state {state} {{" in text[start:index]


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
    assert _mermaid_transitions(text, view) == rows


def test_grouped_markdown_names_the_groups_and_the_history() -> None:
    text = markdown("run")
    assert "| `shutdown` | **at_rest** | — | shutdown |" in text
    assert "| `resume` | paused | `paused_in_<state>` | H of **active** |" in text
    assert "- **waiting**: requires_action, input_required" in text
    assert text.count("| `shutdown` |") == 3
