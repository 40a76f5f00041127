"""The code's tables say exactly what the contract page (docs/contract.md) says.

The page is part of the repository, so these tests always run: the states, every edge and its
guard, the internal rows, the reasons, the input policies, the hooks, the projections and the
invariants are compared with the data in `agentfsm.states`, `agentfsm.tools` and
`agentfsm.verify`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentfsm.states import (
    GUARDS,
    LOOP_TABLE,
    PAUSABLE,
    PROJECTIONS,
    RUN_TABLE,
    CompletedReason,
    FailedReason,
    InputPolicy,
    MachineTable,
    RecordKind,
)
from agentfsm.tools import MESSAGE_HOOKS, HookKind
from agentfsm.verify import PROPERTIES

CONTRACT = Path(__file__).resolve().parents[2] / "docs" / "contract.md"


def section(heading: str) -> str:
    """The text of one ``## `` section of the contract, from its heading to the next."""
    text = CONTRACT.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def table(text: str, header: str) -> list[list[str]]:
    """The body rows of the first Markdown table in ``text`` whose header row is ``header``."""
    lines = text.splitlines()
    start = lines.index(header) + 2  # the header, then the |---| line
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def states(text: str) -> list[str]:
    paragraph = text[text.index("States:") :].split("\n\n")[0]
    return re.findall(r"`(\w+)`", paragraph)


def words(text: str) -> set[str]:
    return set(re.findall(r"[\w'<=≥]+", text.lower())) - {"only", "from", "busy"}


def event_of(cell: str) -> str:
    match = re.match(r"`(\w+)", cell)
    assert match, cell
    return match.group(1)


TRANSITIONS = "| event | from | guard | to | effect |"
LOOP_TRANSITIONS = "| event | from | guard | to |"
SECTIONS = {
    "run": (RUN_TABLE, "## 1. RunLifecycle", TRANSITIONS),
    "loop": (LOOP_TABLE, "## 2. TurnLoop", LOOP_TRANSITIONS),
}


def transition_rows(heading: str, header: str) -> list[list[str]]:
    return table(section(heading), header)


def targets_of(cell: str) -> tuple[str, ...]:
    target = cell.replace("(internal)", "").strip()
    return tuple(PAUSABLE) if "state it was paused in" in target else (target,)


def expected_edges(heading: str, header: str) -> dict[tuple[str, str], list[str]]:
    """(event, source) → the targets the page names, in its order."""
    edges: dict[tuple[str, str], list[str]] = {}
    for cells in transition_rows(heading, header):
        for source in (s.strip() for s in cells[1].split(",")):
            edges.setdefault((event_of(cells[0]), source), []).extend(targets_of(cells[3]))
    return edges


@pytest.mark.parametrize(("machine", "heading", "header"), SECTIONS.values(), ids=list(SECTIONS))
def test_table_has_the_contract_states(machine: MachineTable, heading: str, header: str) -> None:
    text = section(heading)

    assert list(machine.states) == states(text)
    assert text.count("(initial)") == 1
    assert f"`{machine.initial}` (initial)" in text


def test_the_run_has_exactly_the_final_states_the_contract_names() -> None:
    assert set(RUN_TABLE.final) == {"shutdown"}
    assert "`shutdown` (final, and the only final state)" in section("## 1. RunLifecycle")


@pytest.mark.parametrize(("machine", "heading", "header"), SECTIONS.values(), ids=list(SECTIONS))
def test_table_has_exactly_the_contract_edges(
    machine: MachineTable, heading: str, header: str
) -> None:
    ours: dict[tuple[str, str], list[str]] = {}
    for row in machine.rows:
        ours.setdefault((row.event, row.source), []).append(row.target)

    assert ours == expected_edges(heading, header)


def guard_fits(event: str, source: str, guard: str | None, target: str, spec: str) -> bool:
    """Whether a row's guard is what the contract's guard cell says for that row."""
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


@pytest.mark.parametrize(("machine", "heading", "header"), SECTIONS.values(), ids=list(SECTIONS))
def test_every_guard_is_the_contract_guard(
    machine: MachineTable, heading: str, header: str
) -> None:
    spec_guards: dict[tuple[str, str, str], list[str]] = {}
    for cells in transition_rows(heading, header):
        for source in (s.strip() for s in cells[1].split(",")):
            for target in targets_of(cells[3]):
                spec_guards.setdefault((event_of(cells[0]), source, target), []).append(cells[2])
    for row in machine.rows:
        texts = spec_guards[(row.event, row.source, row.target)]
        fitting = [t for t in texts if guard_fits(row.event, row.source, row.guard, row.target, t)]
        assert len(fitting) == 1, (row, texts)


def test_a_guard_in_other_words_does_not_fit() -> None:
    assert not guard_fits(
        "need_input", "busy", "asks_question", "input_required", "the wait's deadline has passed"
    )
    assert not guard_fits("start", "created", "has_answer", "ready", "—")
    assert not guard_fits("resume", "paused", "paused_in_busy", "ready", "—")


def test_internal_rows_are_the_contract_internal_rows() -> None:
    internal = {(r.event, r.source) for r in RUN_TABLE.rows if r.internal}
    spec = {
        (event_of(cells[0]), cells[1])
        for cells in transition_rows("## 1. RunLifecycle", TRANSITIONS)
        if "(internal)" in cells[3]
    }

    assert internal == spec == {("submit", "busy")}
    assert not any(r.internal for r in LOOP_TABLE.rows)


def test_every_run_event_has_its_effect_and_postcondition() -> None:
    text = section("## 1. RunLifecycle")
    effects = {event_of(c[0]): c[4] for c in table(text, TRANSITIONS)}
    after = {event_of(c[0]) for c in table(text, "| event | afterwards |")}

    assert set(effects) == set(RUN_TABLE.events) == after
    assert all(effect not in {"", "—"} for effect in effects.values())


def test_the_reasons_are_the_contract_reasons() -> None:
    rows = table(section("## 1. RunLifecycle"), "| state | reason | when |")
    reasons = [(state.strip("`"), reason.strip("`")) for state, reason, _ in rows]

    assert reasons == [
        *(("completed", str(r)) for r in CompletedReason),
        *(("failed", str(r)) for r in FailedReason),
    ]


def test_the_input_policies_are_the_contract_policies() -> None:
    rows = table(section("## 1. RunLifecycle"), "| policy | a `submit` while busy |")

    assert [cells[0].strip("`") for cells in rows] == list(InputPolicy)
    assert rows[0][1].startswith("the default")
    assert InputPolicy.REJECT == "reject"


def test_the_hooks_are_the_contract_hooks_in_order() -> None:
    rows = table(section("## 3. Hooks and events"), "| hook | when | times | may add messages |")

    assert [cells[0].strip("`") for cells in rows] == list(HookKind)
    assert {cells[0].strip("`") for cells in rows if cells[3] == "yes"} == set(MESSAGE_HOOKS)
    assert {cells[3] for cells in rows} == {"yes", "no"}


def page_projections() -> dict[tuple[str, str | None], tuple[str, str | None]]:
    """The contract's projection table: (state, reason) -> (A2A state, Assistants status)."""
    header = "| agentfsm | A2A TaskState | Assistants-style run status |"
    found: dict[tuple[str, str | None], tuple[str, str | None]] = {}
    for first, a2a, assistants in table(section("## 4. Projections"), header):
        word = a2a.split(" (")[0]
        for name in first.split(","):
            state_name, _, reason = name.strip().partition(" / ")
            found[(state_name, reason or None)] = (word, None if assistants == "—" else assistants)
    return found


def test_the_projections_are_the_contract_projections() -> None:
    code = {
        (str(row.state), row.reason): (
            str(row.a2a),
            None if row.assistants is None else str(row.assistants),
        )
        for row in PROJECTIONS
    }

    assert page_projections() == code
    assert list(page_projections()) == list(code)


def test_the_invariants_are_i1_to_i14_and_cover_the_verifier() -> None:
    listed = re.findall(r"^- \*\*(I\d+)\*\* ", section("## 5. Invariants"), re.MULTILINE)

    assert listed == [f"I{n}" for n in range(1, 15)]
    assert {name for name in PROPERTIES if re.fullmatch(r"I\d+", name)} <= set(listed)


def test_every_decided_extension_is_built_and_temporal_runs_the_same_tables() -> None:
    text = section("## 6. On Temporal")

    assert "Decided, not yet built" not in CONTRACT.read_text(encoding="utf-8")
    assert "same error and message as in-process" in text
    for proof in ("tests/temporal/test_workflow.py", "tests/temporal/test_differential.py"):
        assert proof in text
        assert (CONTRACT.parents[1] / proof).is_file()


def test_the_fork_records_are_the_contract_s() -> None:
    text = section("## 3. Hooks and events")
    forks = text[text.index("### Forks") :]

    for kind in (RecordKind.FORKED, RecordKind.MESSAGE_REPLACED):
        assert f"`{kind.value}`" in forks


def test_the_conversation_records_are_the_contract_records() -> None:
    rows = table(section("## 3. Hooks and events"), "| record | what changed |")

    assert [event_of(cells[0]) for cells in rows] == [kind.value for kind in RecordKind]


def test_typed_answers_are_built_and_no_longer_listed_as_decided() -> None:
    assert "**Typed answers.**" in section("## 2. TurnLoop")
    assert {"output_valid", "output_invalid"} <= set(LOOP_TABLE.events)
