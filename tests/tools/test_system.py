from __future__ import annotations

import asyncio
from collections.abc import Collection
from dataclasses import dataclass

import pytest
from pydantic import BaseModel

from agentfsm.errors import ToolOutputError, ToolRoundError
from agentfsm.states.messages import Message
from agentfsm.tools import (
    ArgumentLimits,
    Decision,
    HookKind,
    Hooks,
    ObservationType,
    Tool,
    ToolContext,
    ToolObservation,
    ToolPolicy,
    ToolRegistry,
    ToolStatus,
    ToolSystem,
)
from tests.tools.spies import Flavour, call, spy_tool, valid_arguments

CONTEXT = ToolContext(run_id="run-1", turn=3, iteration=2, user_id="ada")
FORECAST_TAKES = "the tool takes an object with properties 'city' (required), 'days'"


def noop() -> str:
    """Report the time."""
    return "noon"


@dataclass(frozen=True)
class Refusal:
    """One row of the refusal table: a setup, and the exact answer it must get."""

    status: ToolStatus
    message: str
    arguments: str | None = None
    name: str = "forecast"
    policy: ToolPolicy = ToolPolicy.ALLOW
    client_side: bool = False
    enabled: Collection[str] | None = None
    decision: Decision | None = None
    limits: ArgumentLimits | None = None


def _arguments_error(where: str, detail: str) -> str:
    return f"invalid arguments for call 'c1' to tool 'forecast'{where}: {detail}"


REFUSALS = {
    "unregistered-name": Refusal(
        ToolStatus.NOT_FOUND,
        "no tool named 'forcast' is registered; available tools: 'forecast', 'noop'",
        name="forcast",
    ),
    "unregistered-name-lists-only-enabled-tools": Refusal(
        ToolStatus.NOT_FOUND,
        "no tool named 'forcast' is registered; available tools: 'noop'",
        name="forcast",
        enabled={"forcast", "noop"},
    ),
    "not-enabled": Refusal(
        ToolStatus.DISABLED,
        "call 'c1' to tool 'forecast' refused: the tool is not enabled for this run; "
        "enabled tools: 'noop'",
        enabled={"noop"},
    ),
    "nothing-enabled": Refusal(
        ToolStatus.DISABLED,
        "call 'c1' to tool 'forecast' refused: the tool is not enabled for this run; "
        "enabled tools: none",
        enabled=(),
    ),
    "enablement-is-checked-before-registration": Refusal(
        ToolStatus.DISABLED,
        "call 'c1' to tool 'forcast' refused: the tool is not enabled for this run; "
        "enabled tools: 'forecast'",
        name="forcast",
        enabled={"forecast"},
    ),
    "policy-deny": Refusal(
        ToolStatus.DENIED,
        "call 'c1' to tool 'forecast' denied: the tool's policy is 'deny', so its calls never run",
        policy=ToolPolicy.DENY,
    ),
    "policy-deny-beats-approval": Refusal(
        ToolStatus.DENIED,
        "call 'c1' to tool 'forecast' denied: the tool's policy is 'deny', so its calls never run",
        policy=ToolPolicy.DENY,
        decision=Decision.approve(),
    ),
    "approval-missing": Refusal(
        ToolStatus.DENIED,
        "call 'c1' to tool 'forecast' denied: the tool requires approval and the "
        "application gave no Decision.approve()",
        policy=ToolPolicy.REQUIRE_APPROVAL,
    ),
    "approval-denied-with-reason": Refusal(
        ToolStatus.DENIED,
        "call 'c1' to tool 'forecast' denied: the application denied it: not on weekends",
        policy=ToolPolicy.REQUIRE_APPROVAL,
        decision=Decision.deny("not on weekends"),
    ),
    "allowed-tool-denied-by-decision": Refusal(
        ToolStatus.DENIED,
        "call 'c1' to tool 'forecast' denied: the application denied it: no reason given",
        decision=Decision.deny(),
    ),
    "output-decision-for-server-tool": Refusal(
        ToolStatus.DENIED,
        "call 'c1' to tool 'forecast' denied: an output decision answers only a "
        "client-side tool; approve or deny this one",
        decision=Decision.output("sunny"),
    ),
    "client-side-approved-without-output": Refusal(
        ToolStatus.DENIED,
        "call 'c1' to tool 'forecast' denied: it is a client-side tool, so the "
        "application must answer it with Decision.output(...)",
        client_side=True,
        decision=Decision.approve(),
    ),
    "malformed-json": Refusal(
        ToolStatus.INVALID_ARGUMENTS,
        _arguments_error(
            "",
            "they are not valid JSON (Expecting ',' delimiter: line 1 column 18 (char 17)); "
            "send a JSON object",
        ),
        arguments='{"city": "Paris" "days": 2}',
    ),
    "not-an-object": Refusal(
        ToolStatus.INVALID_ARGUMENTS,
        _arguments_error("", f"they must be a JSON object, not a JSON array; {FORECAST_TAKES}"),
        arguments='["Paris", 2]',
    ),
    "missing-required-property": Refusal(
        ToolStatus.INVALID_ARGUMENTS,
        _arguments_error("", f"'city' is a required property; {FORECAST_TAKES}"),
        arguments='{"days": 2}',
    ),
    "wrong-type": Refusal(
        ToolStatus.INVALID_ARGUMENTS,
        _arguments_error(" at '/days'", f"'two' is not of type 'integer'; {FORECAST_TAKES}"),
        arguments='{"city": "Paris", "days": "two"}',
    ),
    "below-minimum": Refusal(
        ToolStatus.INVALID_ARGUMENTS,
        _arguments_error(" at '/days'", f"0 is less than the minimum of 1; {FORECAST_TAKES}"),
        arguments='{"city": "Paris", "days": 0}',
    ),
    "unexpected-property": Refusal(
        ToolStatus.INVALID_ARGUMENTS,
        _arguments_error(
            "",
            f"Additional properties are not allowed ('units' was unexpected); {FORECAST_TAKES}",
        ),
        arguments='{"city": "Paris", "units": "C"}',
    ),
    "nan-is-not-json": Refusal(
        ToolStatus.INVALID_ARGUMENTS,
        _arguments_error(
            "", "they are not valid JSON (NaN is not valid JSON); send a JSON object"
        ),
        arguments='{"city": "Paris", "days": NaN}',
    ),
    "oversized": Refusal(
        ToolStatus.INVALID_ARGUMENTS,
        _arguments_error("", "they are 52 characters long; at most 40 are accepted"),
        arguments='{"city": "' + "P" * 40 + '"}',
        limits=ArgumentLimits(max_chars=40),
    ),
    "nested-too-deep": Refusal(
        ToolStatus.INVALID_ARGUMENTS,
        _arguments_error("", "they are nested deeper than 3 levels"),
        arguments='{"city": "Paris", "extra": [[[1]]]}',
        limits=ArgumentLimits(max_depth=3),
    ),
    "nested-past-the-recursion-limit": Refusal(
        ToolStatus.INVALID_ARGUMENTS,
        _arguments_error("", "they are nested deeper than 32 levels"),
        arguments='{"city": ' + "[" * 40_000 + "]" * 40_000 + "}",
    ),
}


@pytest.mark.parametrize("row", REFUSALS.values(), ids=REFUSALS.keys())
def test_toolsystem_refuses_without_running_the_body(flavour: Flavour, row: Refusal) -> None:
    forecast, spy = spy_tool(flavour, policy=row.policy, client_side=row.client_side)
    system = ToolSystem([forecast, noop], limits=row.limits)
    decisions = {} if row.decision is None else {"c1": row.decision}

    outcome = system.run_round_sync(
        [call("c1", row.name, row.arguments)], CONTEXT, decisions=decisions, enabled=row.enabled
    )

    assert spy.calls == []
    (result,) = outcome.results
    assert (result.call_id, result.tool_name, result.status) == ("c1", row.name, row.status)
    assert result.error is not None
    assert result.error.message == row.message
    assert result.attempts == 0
    assert result.output is None
    assert outcome.messages == (
        Message.tool("c1", f"[{row.status}] {result.error.type}: {row.message}", name=row.name),
    )


@pytest.mark.parametrize(
    ("policy", "decision"),
    [
        (ToolPolicy.ALLOW, None),
        (ToolPolicy.ALLOW, Decision.approve()),
        (ToolPolicy.REQUIRE_APPROVAL, Decision.approve()),
    ],
    ids=["allow", "allow-approved", "approval-given"],
)
def test_toolsystem_runs_a_permitted_call(
    flavour: Flavour, policy: ToolPolicy, decision: Decision | None
) -> None:
    forecast, spy = spy_tool(flavour, policy=policy)
    system = ToolSystem([forecast], timer=iter([10.0, 10.25]).__next__)
    decisions = {} if decision is None else {"c7": decision}

    outcome = system.run_round_sync([call("c7")], CONTEXT, decisions=decisions)

    assert [(c["city"], c["days"]) for c in spy.calls] == [("Paris", 2)]
    (result,) = outcome.results
    assert result.status is ToolStatus.SUCCESS
    assert result.output == {"city": "Paris", "days": 2}
    assert result.error is None
    assert (result.duration, result.attempts) == (0.25, 1)
    assert outcome.messages == (
        Message.tool("c7", '{"city": "Paris", "days": 2}', name="forecast"),
    )


def test_toolsystem_gives_the_body_its_context_bound_to_the_call(flavour: Flavour) -> None:
    forecast, spy = spy_tool(flavour)

    ToolSystem([forecast]).run_round_sync([call("c9")], CONTEXT)

    context = spy.calls[0]["context"]
    assert context == ToolContext(run_id="run-1", turn=3, iteration=2, call_id="c9", user_id="ada")
    assert isinstance(context, ToolContext)
    assert context.idempotency_key == "run-1:c9"


def test_toolsystem_answers_every_call_once_in_call_order(flavour: Flavour) -> None:
    forecast, spy = spy_tool(flavour)
    calls = [
        call("a", arguments=valid_arguments("Oslo", 1)),
        call("b", name="missing"),
        call("c", arguments="{"),
        call("d", arguments=valid_arguments("Rome", 3)),
    ]

    outcome = ToolSystem([forecast]).run_round_sync(calls, CONTEXT)

    assert [c["city"] for c in spy.calls] == ["Oslo", "Rome"]
    assert [r.call_id for r in outcome.results] == ["a", "b", "c", "d"]
    assert [m.tool_call_id for m in outcome.messages] == ["a", "b", "c", "d"]
    assert [r.status for r in outcome.results] == [
        ToolStatus.SUCCESS,
        ToolStatus.NOT_FOUND,
        ToolStatus.INVALID_ARGUMENTS,
        ToolStatus.SUCCESS,
    ]


def test_toolsystem_answers_a_client_side_call_with_the_applications_output(
    flavour: Flavour,
) -> None:
    forecast, spy = spy_tool(flavour, client_side=True)

    outcome = ToolSystem([forecast]).run_round_sync(
        [call("c1")], CONTEXT, decisions={"c1": Decision.output({"sky": "clear"})}
    )

    assert spy.calls == []
    (result,) = outcome.results
    assert (result.status, result.output, result.attempts) == (
        ToolStatus.SUCCESS,
        {"sky": "clear"},
        0,
    )
    assert outcome.messages[0].content == '{"sky": "clear"}'


def test_toolsystem_lists_calls_that_await_a_decision() -> None:
    approve, _ = spy_tool("sync", name="approve_me", policy=ToolPolicy.REQUIRE_APPROVAL)
    client, _ = spy_tool("sync", name="client", client_side=True)
    denied, _ = spy_tool("sync", name="denied", policy=ToolPolicy.DENY)
    system = ToolSystem([approve, client, denied, noop])
    calls = [
        call("1", "noop"),
        call("2", "approve_me"),
        call("3", "client"),
        call("4", "denied"),
        call("5", "unknown"),
    ]

    assert system.awaiting_decision(calls) == ("2", "3")
    assert system.awaiting_decision(calls, enabled={"client"}) == ("3",)


class Reading(BaseModel):
    celsius: float


@pytest.mark.parametrize(
    ("returned", "status", "output", "content"),
    [
        ("sunny", ToolStatus.SUCCESS, "sunny", "sunny"),
        (21.5, ToolStatus.SUCCESS, 21.5, "21.5"),
        (None, ToolStatus.SUCCESS, None, "null"),
        ((1, 2), ToolStatus.SUCCESS, [1, 2], "[1, 2]"),
        (Reading(celsius=3), ToolStatus.SUCCESS, {"celsius": 3.0}, '{"celsius": 3.0}'),
        (
            {1, 2},
            ToolStatus.ERROR,
            None,
            "[error] ToolOutputError: call 'c1' to tool 'forecast' returned a set that is not "
            "JSON (Object of type set is not JSON serializable); return str, int, float, "
            "bool, None, lists and dicts of them, or a pydantic model",
        ),
    ],
    ids=["str", "float", "none", "tuple", "pydantic-model", "set"],
)
def test_toolsystem_sends_json_outputs_and_refuses_the_rest(
    flavour: Flavour, returned: object, status: ToolStatus, output: object, content: str
) -> None:
    forecast, spy = spy_tool(flavour)
    spy.behaviour = lambda _: returned

    outcome = ToolSystem([forecast]).run_round_sync([call("c1")], CONTEXT)

    (result,) = outcome.results
    assert (result.status, result.output, result.attempts) == (status, output, 1)
    assert outcome.messages[0].content == content


def test_toolsystem_refuses_a_nan_output(flavour: Flavour) -> None:
    forecast, spy = spy_tool(flavour)
    spy.behaviour = lambda _: float("nan")

    (result,) = ToolSystem([forecast]).run_round_sync([call("c1")], CONTEXT).results

    assert (result.status, result.output) == (ToolStatus.ERROR, None)
    assert result.error is not None
    assert result.error.type == "ToolOutputError"
    # The middle is the json module's own wording, which varies between Python versions.
    assert result.error.message.startswith(
        "call 'c1' to tool 'forecast' returned a float that is not JSON (Out of range float"
    )
    assert result.error.message.endswith("lists and dicts of them, or a pydantic model")


def test_toolsystem_turns_a_body_exception_into_an_error_result(flavour: Flavour) -> None:
    forecast, spy = spy_tool(flavour)

    def fail(_: dict[str, object]) -> object:
        raise LookupError("no station near 'Paris'")

    spy.behaviour = fail

    outcome = ToolSystem([forecast]).run_round_sync([call("c1"), call("c2")], CONTEXT)

    assert len(spy.calls) == 2
    first = outcome.results[0]
    assert first.status is ToolStatus.ERROR
    assert first.error is not None
    assert (first.error.type, first.error.message) == ("LookupError", "no station near 'Paris'")
    assert outcome.messages[0].content == "[error] LookupError: no station near 'Paris'"


@pytest.mark.parametrize(
    "interrupt", [KeyboardInterrupt, asyncio.CancelledError, SystemExit], ids=lambda t: t.__name__
)
def test_toolsystem_never_catches_a_base_exception(
    flavour: Flavour, interrupt: type[BaseException]
) -> None:
    forecast, spy = spy_tool(flavour)

    def stop(_: dict[str, object]) -> object:
        raise interrupt

    spy.behaviour = stop

    with pytest.raises(interrupt):
        asyncio.run(ToolSystem([forecast]).run_round([call("c1"), call("c2")], CONTEXT))
    assert len(spy.calls) == 1


def test_toolsystem_reports_observations_in_order(flavour: Flavour) -> None:
    forecast, _ = spy_tool(flavour)
    seen: list[ToolObservation] = []
    system = ToolSystem([forecast], observer=seen.append, clock=lambda: 1_700_000_000.0)

    system.run_round_sync([call("a"), call("b", "nope")], CONTEXT)

    assert [(o.type, o.index, o.call_id) for o in seen] == [
        (ObservationType.STARTED, 0, "a"),
        (ObservationType.FINISHED, 0, "a"),
        (ObservationType.FINISHED, 1, "b"),
    ]
    assert all((o.run_id, o.turn, o.iteration, o.at) == ("run-1", 3, 2, 1.7e9) for o in seen)
    assert seen[0].result is None
    assert seen[2].result is not None
    assert seen[2].result.status is ToolStatus.NOT_FOUND
    assert ToolObservation.model_validate_json(seen[1].model_dump_json()) == seen[1]


@pytest.mark.parametrize(
    ("decisions", "message"),
    [
        ({}, "cannot run the tool round: call ids must be unique within a round: 'a'"),
        (
            {"z": Decision.approve()},
            "cannot run the tool round: decisions name calls that are not in the round: 'z'",
        ),
    ],
    ids=["duplicate-call-ids", "stray-decision"],
)
def test_toolsystem_refuses_an_inconsistent_round_before_running_anything(
    decisions: dict[str, Decision], message: str
) -> None:
    forecast, spy = spy_tool("sync")
    calls = [call("a"), call("a")] if not decisions else [call("a")]

    with pytest.raises(ToolRoundError) as raised:
        ToolSystem([forecast]).run_round_sync(calls, CONTEXT, decisions=decisions)

    assert str(raised.value) == message
    assert spy.calls == []


def test_run_round_sync_refuses_to_nest_in_a_running_loop() -> None:
    system = ToolSystem([noop])

    async def inside_a_loop() -> None:
        system.run_round_sync([call("c1", "noop", "{}")], CONTEXT)

    with pytest.raises(ToolRoundError, match=r"await run_round\(\.\.\.\) there instead"):
        asyncio.run(inside_a_loop())


def test_toolsystem_offers_only_enabled_tools() -> None:
    forecast, _ = spy_tool("sync")
    system = ToolSystem([forecast, Tool(noop)])

    offered = system.openai_tools(enabled={"noop"})

    assert offered == [
        {
            "type": "function",
            "function": {
                "name": "noop",
                "description": "Report the time.",
                "parameters": {"additionalProperties": False, "properties": {}, "type": "object"},
            },
        }
    ]


def test_empty_arguments_count_as_an_empty_object() -> None:
    outcome = ToolSystem([noop]).run_round_sync([call("c1", "noop", "")], CONTEXT)

    assert outcome.results[0].output == "noon"


def test_toolsystem_shares_a_given_registry() -> None:
    system = ToolSystem([noop])
    other = ToolSystem(system.registry)

    assert other.registry is system.registry


@pytest.mark.parametrize("hooked", [False, True])
def test_the_agents_unchecked_system_is_the_checked_one(hooked: bool) -> None:
    registry = ToolRegistry([spy_tool("sync")[0]])
    hooks = Hooks()
    if hooked:
        hooks.add(HookKind.BEFORE_EACH_TOOL, lambda context: None)

    def timer() -> float:
        return 1.0

    def clock() -> float:
        return 2.0

    checked = ToolSystem(registry, hooks=hooks, timer=timer, clock=clock)
    unchecked = ToolSystem._with_defaults(registry, hooks, timer, clock)

    assert {slot: getattr(unchecked, slot) for slot in ToolSystem.__slots__} == {
        slot: getattr(checked, slot) for slot in ToolSystem.__slots__
    }
    assert unchecked._retry is checked._retry  # the shared default settings


@pytest.mark.parametrize(
    ("output_type", "said"), [("object", "an object"), ("set", "a set"), ("Item", "an Item")]
)
def test_a_tool_output_error_names_the_type_with_its_article(output_type: str, said: str) -> None:
    error = ToolOutputError("forecast", "c1", output_type, "not serialisable")
    assert str(error).startswith(f"call 'c1' to tool 'forecast' returned {said} that is not JSON")
