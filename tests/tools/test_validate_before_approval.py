"""A call whose arguments can never validate is refused at once, not asked about first."""

from __future__ import annotations

from agentfsm import Agent, ScriptedModel
from agentfsm.tools import Decision, ToolContext, ToolPolicy, ToolStatus, ToolSystem, tool
from tests.tools.spies import call, spy_tool

CONTEXT = ToolContext(run_id="run-1", turn=1, iteration=0)
MISSING_CITY = '{"days": 2}'


def test_a_call_with_invalid_arguments_awaits_no_decision() -> None:
    approve, _ = spy_tool("sync", name="approve_me", policy=ToolPolicy.REQUIRE_APPROVAL)
    client, _ = spy_tool("sync", name="client", client_side=True)
    system = ToolSystem([approve, client])
    calls = [
        call("1", "approve_me", MISSING_CITY),
        call("2", "approve_me"),
        call("3", "client", "{"),
        call("4", "client"),
    ]

    assert system.awaiting_decision(calls) == ("2", "4")


def test_an_undecided_approval_call_with_invalid_arguments_is_refused_for_them() -> None:
    forecast, spy = spy_tool("sync", policy=ToolPolicy.REQUIRE_APPROVAL)

    outcome = ToolSystem([forecast]).run_round_sync([call("c1", arguments=MISSING_CITY)], CONTEXT)

    (result,) = outcome.results
    assert (result.status, spy.calls) == (ToolStatus.INVALID_ARGUMENTS, [])
    assert result.error is not None
    assert "'city' is a required property" in result.error.message


def test_a_denied_tool_is_still_denied_whatever_its_arguments() -> None:
    forecast, _ = spy_tool("sync", policy=ToolPolicy.DENY)

    outcome = ToolSystem([forecast]).run_round_sync([call("c1", arguments=MISSING_CITY)], CONTEXT)

    assert outcome.results[0].status is ToolStatus.DENIED


def test_an_application_denial_stands_whatever_the_arguments() -> None:
    forecast, _ = spy_tool("sync", policy=ToolPolicy.REQUIRE_APPROVAL)

    outcome = ToolSystem([forecast]).run_round_sync(
        [call("c1", arguments=MISSING_CITY)], CONTEXT, decisions={"c1": Decision.deny("no")}
    )

    assert outcome.results[0].status is ToolStatus.DENIED


def test_an_agent_does_not_ask_approval_for_a_call_that_cannot_validate() -> None:
    ran: list[str] = []

    @tool(policy=ToolPolicy.REQUIRE_APPROVAL)
    def delete(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return "deleted"

    model = ScriptedModel().tool_calls(("delete", {"pth": "/tmp/x"})).text("I got it wrong.")
    agent = Agent(model, [delete])
    agent.start()

    outcome = agent.submit("Delete /tmp/x")

    assert (outcome.state, outcome.reply, ran) == ("completed", "I got it wrong.", [])
    refused = agent.messages[2]
    assert refused.content is not None
    assert "invalid_arguments" in refused.content
    assert "'path' (required)" in refused.content
