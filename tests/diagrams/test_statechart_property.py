"""For any machine table, the statechart draws exactly its rows (hypothesis).

Random small tables: events, guards, internal rows, and sometimes a history (one event
from one state back to several, each guarded ``paused_in_<target>``). Whatever groups are
found, expanding the chart gives the table's rows, each once; the groups are nested or
disjoint (drawable as clusters); no group holds the target of its own edge; and the chart
never draws more edges than the table has rows.
"""

from __future__ import annotations

import itertools

from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentfsm.diagrams.grouping import Chart, _build, _candidates, _greedy, expand, statechart
from agentfsm.states.names import MachineName
from agentfsm.states.tables import MachineTable, TransitionRow

STATES = tuple(f"s{n}" for n in range(5))


@st.composite
def tables(draw: st.DrawFn) -> MachineTable:
    keys = st.tuples(
        st.sampled_from(("go", "stop")),
        st.sampled_from(STATES),
        st.sampled_from(STATES),
        st.sampled_from((None, "g1")),
    )
    rows = [
        TransitionRow(event, source, target, guard, internal=source == target and flip)
        for (event, source, target, guard), flip in draw(
            st.lists(st.tuples(keys, st.booleans()), max_size=18, unique_by=lambda k: k[0])
        )
    ]
    if draw(st.booleans()):
        back = draw(st.sampled_from(STATES))
        to = draw(st.sets(st.sampled_from([s for s in STATES if s != back]), min_size=2))
        rows += [TransitionRow("resume", back, t, f"paused_in_{t}") for t in sorted(to)]
    return MachineTable(MachineName.RUN, STATES, "s0", frozenset({"s4"}), tuple(rows))


def _plain(row: TransitionRow) -> tuple[str, str, str, str | None, bool]:
    return (row.event, row.source, row.target, row.guard, row.internal)


_INTO_ITS_OWN_GROUP = MachineTable(
    MachineName.RUN,
    STATES,
    "s0",
    frozenset({"s4"}),
    tuple(
        TransitionRow(event, source, target)
        for event, target in (("go", "s3"), ("stop", "s1"))
        for source in ("s1", "s2")
    ),
)
"""``stop`` from s1 and s2 to s1: the group {s1, s2} (of ``go``) must not draw it."""


@settings(max_examples=100, deadline=None)
@example(_INTO_ITS_OWN_GROUP)
@given(tables())
def test_any_table_is_drawn_exactly(table: MachineTable) -> None:
    _check(table, statechart(table))
    _check(table, _build(table, _greedy(_candidates(table))))  # past EXHAUSTIVE candidates


def _check(table: MachineTable, chart: Chart) -> None:
    drawn = [_plain(row) for row in expand(chart)]
    assert sorted(drawn, key=repr) == sorted(map(_plain, table.rows), key=repr)
    members = [set(group.states) for group in chart.groups]
    assert all(not (a & b) or a <= b or b <= a for a, b in itertools.combinations(members, 2))
    for edge in chart.edges:
        if edge.from_group:
            assert edge.target not in chart.group(edge.source).states
    internal = sum(len(rows) for _, rows in chart.internal)
    assert len(chart.edges) + internal <= len(table.rows)
