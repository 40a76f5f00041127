"""Properties of a tool round over random tools, enablement, policies, decisions and arguments.

I9: a body runs if and only if its tool is registered, enabled for the run, permitted by its
policy (approved when approval is required) and its arguments validate against its schema.
I7 (the ToolSystem's share of it): every call gets exactly one result and one tool message,
in call order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from hypothesis import event, given
from hypothesis import strategies as st

from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import ToolCall
from agentfsm.tools import Decision, Tool, ToolContext, ToolPolicy, ToolStatus, ToolSystem
from tests.tools.spies import spy_tool

POOL = ("alpha", "beta", "gamma", "delta")
"""Names a tool may be registered under; calls may also name ``ghost``, never registered."""
CONTEXT = ToolContext(run_id="run-p", turn=1, iteration=1)


@dataclass(frozen=True)
class Declared:
    name: str
    flavour: str
    policy: ToolPolicy
    client_side: bool
    explicit: bool


@dataclass(frozen=True)
class Drawn:
    """One call as generated, with whether its arguments were generated valid."""

    call: ToolCall
    valid: bool
    decision: Decision | None


def from_schema(schema: JSONObject) -> st.SearchStrategy[JSONObject]:
    """Valid instances of the object schemas the spy tools have (strings, bounded integers)."""
    properties = schema["properties"]
    assert isinstance(properties, dict)
    required = schema.get("required", [])
    assert isinstance(required, list)
    fields: dict[str, st.SearchStrategy[JSONValue]] = {}
    for name, sub in properties.items():
        assert isinstance(sub, dict)
        if sub["type"] == "integer":
            low, high = sub.get("minimum"), sub.get("maximum")
            assert isinstance(low, int | None)
            assert isinstance(high, int | None)
            fields[name] = st.integers(low, high)
        else:
            fields[name] = st.text(max_size=8)
    return st.fixed_dictionaries(
        {k: v for k, v in fields.items() if k in required},
        optional={k: v for k, v in fields.items() if k not in required},
    )


def invalid_from_schema(schema: JSONObject) -> st.SearchStrategy[str]:
    """Argument texts that break the schema in one of the ways a model might."""
    valid = from_schema(schema)
    return st.one_of(
        valid.map(lambda args: {k: v for k, v in args.items() if k != "city"}).map(json.dumps),
        valid.map(lambda args: {**args, "days": 0}).map(json.dumps),
        valid.map(lambda args: {**args, "days": "two"}).map(json.dumps),
        valid.map(lambda args: {**args, "unexpected": True}).map(json.dumps),
        valid.map(json.dumps).map(lambda text: text[:-1]),
        st.sampled_from(["[]", "null", '"text"', "{"]),
    )


SCHEMA = spy_tool("sync")[0].parameters


DECISIONS = (
    st.none()
    | st.just(Decision.approve())
    | st.builds(Decision.deny, st.none() | st.just("no"))
    | st.builds(Decision.output, st.integers() | st.text(max_size=4))
)


def fitting(declared: list[Declared], name: str) -> Decision | None:
    """The decision that lets a call to ``name`` proceed, where one can."""
    tool = next((spec for spec in declared if spec.name == name), None)
    if tool is None or (tool.policy is ToolPolicy.ALLOW and not tool.client_side):
        return None
    return Decision.output("from the app") if tool.client_side else Decision.approve()


@st.composite
def rounds(
    draw: st.DrawFn,
) -> tuple[list[Declared], frozenset[str] | None, list[Drawn]]:
    registered = draw(st.lists(st.sampled_from(POOL), unique=True, max_size=len(POOL)))
    declared = [
        Declared(
            name,
            draw(st.sampled_from(["sync", "async"])),
            draw(st.sampled_from(ToolPolicy)),
            draw(st.booleans()),
            draw(st.booleans()),
        )
        for name in registered
    ]
    # Biased towards calls that may run, so that every status is common.
    enabled = draw(
        st.one_of(st.none(), st.just(frozenset(registered)), st.frozensets(st.sampled_from(POOL)))
    )
    drawn = []
    for index in range(draw(st.integers(0, 6))):
        valid = draw(st.sampled_from([True, True, False]))
        arguments = draw(
            from_schema(SCHEMA).map(json.dumps) if valid else invalid_from_schema(SCHEMA)
        )
        name = draw(st.sampled_from((*POOL, "ghost", *registered, *registered)))
        decision = draw(st.one_of(st.just(fitting(declared, name)), DECISIONS))
        drawn.append(
            Drawn(ToolCall(id=f"call-{index}", name=name, arguments=arguments), valid, decision)
        )
    return declared, enabled, drawn


def expected_status(
    drawn: Drawn, tools: dict[str, Declared], enabled: frozenset[str] | None
) -> ToolStatus:
    """The status the contract's I9 and the policy table call for, checked in their order."""
    name, kind = drawn.call.name, None if drawn.decision is None else drawn.decision.kind
    if enabled is not None and name not in enabled:
        return ToolStatus.DISABLED
    tool = tools.get(name)
    if tool is None:
        return ToolStatus.NOT_FOUND
    if kind is None and tool.policy is not ToolPolicy.DENY and not drawn.valid:
        return ToolStatus.INVALID_ARGUMENTS  # nobody was asked: the arguments are judged first
    permitted = (
        tool.policy is not ToolPolicy.DENY
        and kind != "deny"
        and (kind == "output" if tool.client_side else kind != "output")
        and (tool.client_side or tool.policy is ToolPolicy.ALLOW or kind == "approve")
    )
    if not permitted:
        return ToolStatus.DENIED
    if not drawn.valid:
        return ToolStatus.INVALID_ARGUMENTS
    return ToolStatus.SUCCESS


@given(rounds())
def test_a_body_runs_iff_i9_holds_and_every_call_gets_one_answer_in_order(
    case: tuple[list[Declared], frozenset[str] | None, list[Drawn]],
) -> None:
    declared, enabled, drawn = case
    ran: list[str] = []

    def record(arguments: dict[str, object]) -> str:
        context = arguments["context"]
        assert isinstance(context, ToolContext)
        ran.append(context.call_id)
        return "ran"

    tools: list[Tool[..., object]] = []
    for spec in declared:
        made, spy = spy_tool(
            "sync" if spec.flavour == "sync" else "async",
            name=spec.name,
            policy=spec.policy,
            client_side=spec.client_side,
            # An explicit schema has no pydantic model behind it: only jsonschema guards it.
            parameters=SCHEMA if spec.explicit else None,
        )
        spy.behaviour = record
        tools.append(made)
    decisions = {d.call.id: d.decision for d in drawn if d.decision is not None}
    by_name = {spec.name: spec for spec in declared}

    outcome = ToolSystem(tools).run_round_sync(
        [d.call for d in drawn], CONTEXT, decisions=decisions, enabled=enabled
    )

    statuses = [expected_status(d, by_name, enabled) for d in drawn]
    should_run = [
        d.call.id
        for d, status in zip(drawn, statuses, strict=True)
        if status is ToolStatus.SUCCESS and not by_name[d.call.name].client_side
    ]
    assert ran == should_run
    assert [r.call_id for r in outcome.results] == [d.call.id for d in drawn]
    assert [m.tool_call_id for m in outcome.messages] == [d.call.id for d in drawn]
    assert [r.status for r in outcome.results] == statuses
    for status in statuses:
        event(f"status {status}")
    assert [r.attempts for r in outcome.results] == [int(d.call.id in should_run) for d in drawn]
