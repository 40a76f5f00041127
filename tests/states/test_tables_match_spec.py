"""The transition tables in code say exactly what lifecycle.md says.

The spec page lives in the steering repo, beside this one (``../shared/design``); CI always
has it. In a clone without it these tests are skipped, not passed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentfsm.states import GUARDS, LOOP_TABLE, PAUSABLE, RUN_TABLE, MachineTable

SPEC = Path(__file__).resolve().parents[3] / "shared" / "design" / "lifecycle.md"
pytestmark = pytest.mark.skipif(not SPEC.exists(), reason=f"spec page not found at {SPEC}")


def spec_section(heading: str) -> str:
    text = SPEC.read_text()
    start = text.index(heading)
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def spec_rows(section: str) -> list[list[str]]:
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) >= 4:
            rows.append(cells)
    return rows


def spec_states(section: str) -> list[str]:
    paragraph = section[section.index("States:") :].split("\n\n")[0]
    paragraph = re.split(r"\.\s", paragraph)[0]  # the first sentence lists them
    return re.findall(r"`(\w+)`", paragraph)


def words(text: str) -> set[str]:
    return set(re.findall(r"[\w'<=≥]+", text.lower())) - {"only", "from", "busy"}


SECTIONS = {
    "run": (RUN_TABLE, "## 1. RunLifecycle"),
    "loop": (LOOP_TABLE, "## 2. TurnLoop"),
}


def expected_edges(table: MachineTable, heading: str) -> dict[tuple[str, str], list[str]]:
    """(event, source) → the targets the spec page names, in its order."""
    edges: dict[tuple[str, str], list[str]] = {}
    for cells in spec_rows(spec_section(heading)):
        event = re.match(r"`(\w+)", cells[0]).group(1)  # type: ignore[union-attr]
        sources = [s.strip() for s in cells[1].split(",")]
        target = cells[3].replace("(internal)", "").strip()
        targets = list(PAUSABLE) if "state it was paused in" in target else [target]
        for source in sources:
            edges.setdefault((event, source), []).extend(targets)
    return edges


@pytest.mark.parametrize(("table", "heading"), SECTIONS.values(), ids=list(SECTIONS))
def test_table_has_the_spec_states(table: MachineTable, heading: str) -> None:
    assert list(table.states) == spec_states(spec_section(heading))
    assert spec_section(heading).count("(initial") == 1
    assert f"`{table.initial}` (initial" in spec_section(heading)


@pytest.mark.parametrize(("table", "heading"), SECTIONS.values(), ids=list(SECTIONS))
def test_table_has_exactly_the_spec_edges(table: MachineTable, heading: str) -> None:
    ours: dict[tuple[str, str], list[str]] = {}
    for row in table.rows:
        ours.setdefault((row.event, row.source), []).append(row.target)
    assert ours == expected_edges(table, heading)


def guard_fits(event: str, source: str, guard: str | None, target: str, spec: str) -> bool:
    """Whether a row's guard is what the spec's guard cell says for that row."""
    if event == "resume":  # the history target, made explicit as one guard per state
        return guard == f"paused_in_{target}"
    unguarded = (
        spec.startswith("—")
        or event == "shutdown"  # "not busy": busy is simply not a source
        or (spec.startswith("from busy only") and source != "busy")
    )
    if unguarded or guard is None:
        return unguarded and guard is None
    ours, theirs = words(GUARDS[guard]), words(spec)
    return ours <= theirs or theirs <= ours


@pytest.mark.parametrize(("table", "heading"), SECTIONS.values(), ids=list(SECTIONS))
def test_every_guard_is_the_spec_guard(table: MachineTable, heading: str) -> None:
    spec_guards: dict[tuple[str, str, str], list[str]] = {}
    for cells in spec_rows(spec_section(heading)):
        event = re.match(r"`(\w+)", cells[0]).group(1)  # type: ignore[union-attr]
        target = cells[3].replace("(internal)", "").strip()
        targets = PAUSABLE if "state it was paused in" in target else (target,)
        for source in (s.strip() for s in cells[1].split(",")):
            for each in targets:
                spec_guards.setdefault((event, source, each), []).append(cells[2])
    for row in table.rows:
        texts = spec_guards[(row.event, row.source, row.target)]
        fitting = [t for t in texts if guard_fits(row.event, row.source, row.guard, row.target, t)]
        assert len(fitting) == 1, (row, texts)


def test_internal_rows_are_the_spec_internal_rows() -> None:
    internal = {(r.event, r.source) for r in RUN_TABLE.rows if r.internal}
    spec = {
        (re.match(r"`(\w+)", c[0]).group(1), c[1])  # type: ignore[union-attr]
        for c in spec_rows(spec_section("## 1. RunLifecycle"))
        if "(internal)" in c[3]
    }
    assert internal == spec == {("submit", "busy")}
    assert not any(r.internal for r in LOOP_TABLE.rows)
