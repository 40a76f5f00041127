"""The compiled table is the declared machine, and refuses what it could not reproduce."""

from __future__ import annotations

from typing import Any

import pytest
from statemachine import State, StateChart

from agentfsm.errors import IllegalTransitionError, MachineDefinitionError
from agentfsm.fsm import LOOP_MACHINE, RUN_MACHINE, Emitter, Engine, RunData, run_machine
from agentfsm.fsm.compiled import CompiledMachine, compile_machine
from agentfsm.fsm.guards import GUARD_FUNCTIONS
from agentfsm.states import GUARDS, LOOP_TABLE, RUN_TABLE, Event, MachineName, MachineTable

PAIRS = [(RUN_MACHINE, RUN_TABLE), (LOOP_MACHINE, LOOP_TABLE)]


def by_source_and_event(rows: Any) -> dict[tuple[str, str], list[Any]]:
    grouped: dict[tuple[str, str], list[Any]] = {}
    for row in rows:
        grouped.setdefault((row.source, row.event), []).append(row)
    return grouped


@pytest.mark.parametrize(("compiled", "table"), PAIRS, ids=["run", "loop"])
def test_declared_machine_is_the_table(compiled: CompiledMachine, table: MachineTable) -> None:
    # Same edges, same guards, and the same priority order within each (state, event).
    assert by_source_and_event(compiled.rows()) == by_source_and_event(table.rows)
    assert compiled.states == table.states
    assert (compiled.initial, compiled.final) == (table.initial, table.final)


def test_every_guard_is_described_and_implemented_under_one_name() -> None:
    used = {row.guard for table in (RUN_TABLE, LOOP_TABLE) for row in table.rows} - {None}
    assert used == set(GUARDS) == set(GUARD_FUNCTIONS)


def test_compiling_twice_returns_the_shared_table() -> None:
    assert compile_machine(RUN_MACHINE.chart, MachineName.RUN, "state") is RUN_MACHINE


def _chart(**members: Any) -> type[Any]:
    namespace = {"allow_event_without_transition": False, "catch_errors_as_events": False}
    return type("Probe", (StateChart,), {**namespace, **members})


def _flat(**transition_options: Any) -> type[Any]:
    a, b = State(initial=True), State(final=True)
    return _chart(a=a, b=b, go=a.to(b, **transition_options))


def _compound() -> type[Any]:
    class Parent(StateChart):  # type: ignore[misc]
        class group(State.Compound):  # noqa: N801 - python-statemachine's spelling
            x = State(initial=True)
            y = State(final=True)
            step = x.to(y)

        done = State(final=True)
        leave = group.to(done)

    return Parent


def _with_exit() -> type[Any]:
    a, b = State(initial=True, exit=lambda model, **_: None), State(final=True)
    return _chart(a=a, b=b, go=a.to(b))


UNSUPPORTED = {
    "guard-by-name": (lambda: _flat(cond="some_method"), "by name"),
    "before-action": (lambda: _flat(before=lambda model, **_: None), "before/after"),
    "exit-action": (_with_exit, "exit actions"),
    "compound-state": (_compound, "compound"),
}


@pytest.mark.parametrize(("make", "message"), UNSUPPORTED.values(), ids=list(UNSUPPORTED))
def test_compiler_refuses_what_it_cannot_reproduce(make: Any, message: str) -> None:
    with pytest.raises(MachineDefinitionError, match=message):
        compile_machine(make(), MachineName.RUN, "state")


def test_listener_sees_the_new_state_and_its_error_propagates(engine: Engine) -> None:
    data = RunData("r")
    seen: list[str] = []

    def listener(event: Event) -> None:
        seen.append(data.state)
        raise RuntimeError("listener failed")

    machine = run_machine(data, Emitter("r", [listener]), engine)

    with pytest.raises(RuntimeError, match="listener failed"):
        machine.send("start")
    assert seen == ["ready"]
    assert machine.state == "ready"  # the transition happened before delivery


def test_can_send_considers_guards_and_changes_nothing(engine: Engine) -> None:
    data = RunData("r", state="ready")
    machine = run_machine(data, Emitter("r"), engine)

    assert machine.can_send("submit", text="hi")
    assert not machine.can_send("submit", text="")
    assert not machine.can_send("resume")
    assert (data.state, data.turn, machine.emitter.seq) == ("ready", 0, 0)


def test_seq_is_contiguous_across_both_machines(engine: Engine) -> None:
    from agentfsm.fsm import loop_machine

    data, events = RunData("r"), []
    emitter = Emitter("r", [events.append])
    run = run_machine(data, emitter, engine)
    run.send("start")
    run.send("submit", text="hi")
    loop = loop_machine(data, emitter, engine)
    loop.send("model_replied", tool_calls=0)
    run.send("complete")

    assert [e.seq for e in events] == [1, 2, 3, 4]
    assert [e.machine for e in events] == ["run", "run", "loop", "run"]


def test_unknown_engine_is_refused() -> None:
    with pytest.raises(ValueError, match="'turbo'"):
        run_machine(RunData("r"), Emitter("r"), "turbo")  # type: ignore[arg-type]


def test_loop_left_over_from_an_earlier_turn_refuses_every_event(engine: Engine) -> None:
    from agentfsm.fsm import loop_machine

    data = RunData("r", state="completed", loop_state="answered")
    stale = loop_machine(data, Emitter("r"), engine)
    run_machine(data, Emitter("r"), engine).send("submit", text="next turn")

    with pytest.raises(IllegalTransitionError, match="allowed events in None: none"):
        stale.send("model_replied", tool_calls=0)
    assert (data.state, data.loop_state) == ("busy", None)


def _parent() -> type[Any]:
    """A fresh two-state chart, so no test changes the shipped classes' shared states."""
    a, b = State(initial=True), State(final=True)
    return _chart(a=a, b=b, go=a.to(b))


def test_a_subclass_that_adds_a_transition_to_an_inherited_state_is_refused() -> None:
    parent = _parent()
    loop_back = parent.a.to(parent.a, internal=True)
    child: type[Any] = type("Child", (parent,), {"spin": loop_back})

    with pytest.raises(MachineDefinitionError, match="Child changes the states of its parent"):
        compile_machine(child, MachineName.RUN, "state")


def test_no_cache_hides_a_parent_that_a_subclass_changed() -> None:
    parent = _parent()
    before = compile_machine(parent, MachineName.RUN, "state")
    assert compile_machine(parent, MachineName.RUN, "state") is before  # cached while unchanged

    type("Child", (parent,), {"spin": parent.a.to(parent.a, internal=True)})

    with pytest.raises(MachineDefinitionError, match="its subclass Child added it"):
        compile_machine(parent, MachineName.RUN, "state")
    assert "spin" not in before.dispatch["a"]  # the old table is not what the class is now


def test_a_subclass_that_leaves_the_states_alone_compiles_to_the_same_table() -> None:
    parent = _parent()
    child: type[Any] = type("Child", (parent,), {"__doc__": "The parent, renamed."})

    compiled = compile_machine(child, MachineName.RUN, "state")

    assert compiled.rows() == compile_machine(parent, MachineName.RUN, "state").rows()
    assert compiled.chart is child
