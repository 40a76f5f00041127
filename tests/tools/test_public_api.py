"""End to end through the public names only: declare, register, offer, approve, run."""

from __future__ import annotations

import asyncio
from typing import Annotated

from pydantic import Field

import agentfsm
from agentfsm import (
    Decision,
    Message,
    ToolCall,
    ToolContext,
    ToolPolicy,
    ToolRegistry,
    tool,
)
from agentfsm.tools import ToolStatus, ToolSystem


def test_a_round_through_the_public_api() -> None:
    balances = {"acct-1": 120}
    transfers: list[tuple[str, int, str]] = []

    @tool
    def balance(account: Annotated[str, Field(description="Account id")]) -> int:
        """Read an account's balance."""
        return balances[account]

    @tool(policy=ToolPolicy.REQUIRE_APPROVAL, idempotent=True, timeout=1.0)
    async def transfer(account: str, amount: Annotated[int, Field(gt=0)], ctx: ToolContext) -> str:
        """Move money out of an account."""
        transfers.append((account, amount, ctx.idempotency_key))
        balances[account] -= amount
        return f"sent {amount}"

    @tool(client_side=True)
    def confirm_with_user(question: str) -> bool:
        """Ask the user to confirm something in the app's UI."""
        raise AssertionError("a client-side body never runs")

    system = ToolSystem(ToolRegistry([balance, transfer, confirm_with_user]))
    enabled = {"balance", "transfer", "confirm_with_user"}
    offered = [t["function"]["name"] for t in system.openai_tools(enabled)]  # type: ignore[index, call-overload]
    calls = (
        ToolCall(id="c1", name="balance", arguments='{"account": "acct-1"}'),
        ToolCall(id="c2", name="transfer", arguments='{"account": "acct-1", "amount": 20}'),
        ToolCall(id="c3", name="confirm_with_user", arguments='{"question": "Send 20?"}'),
        ToolCall(id="c4", name="transfer", arguments='{"account": "acct-1", "amount": -5}'),
        ToolCall(id="c5", name="delete_account", arguments="{}"),
    )
    history = [Message.user("Send 20 from acct-1"), Message.assistant(tool_calls=calls)]

    pending = system.awaiting_decision(calls, enabled)
    outcome = asyncio.run(
        system.run_round(
            calls,
            ToolContext(run_id="run-42", turn=1, iteration=1),
            decisions={
                "c2": Decision.approve(),
                "c3": Decision.output(True),
                "c4": Decision.approve(),
            },
            enabled=enabled,
            messages=history,
        )
    )

    assert offered == ["balance", "transfer", "confirm_with_user"]
    assert pending == ("c2", "c3")  # c4's arguments can never validate: nobody is asked
    assert [r.status for r in outcome.results] == [
        ToolStatus.SUCCESS,
        ToolStatus.SUCCESS,
        ToolStatus.SUCCESS,
        ToolStatus.INVALID_ARGUMENTS,
        ToolStatus.DISABLED,  # not enabled for the run (checked before registration)
    ]
    assert [m.content for m in outcome.messages[:3]] == ["120", "sent 20", "true"]
    assert transfers == [("acct-1", 20, "run-42:c2")]
    assert balances == {"acct-1": 100}
    conversation = [*history, *outcome.messages]
    assert [m.role for m in conversation] == ["user", "assistant"] + ["tool"] * 5
    assert [m.tool_call_id for m in conversation[2:]] == [c.id for c in calls]


def test_the_public_names_are_sorted_and_importable() -> None:
    names = agentfsm.__all__

    assert all(hasattr(agentfsm, name) for name in names)
    assert {"tool", "Tool", "Decision", "ToolCallError"} <= set(names)
    assert {"ToolSystem", "HookKind", "Hooks"} <= set(agentfsm.tools.__all__)
    assert issubclass(agentfsm.errors.ToolArgumentsError, agentfsm.ToolCallError)
    assert issubclass(agentfsm.errors.ToolTimeoutError, TimeoutError)
    assert agentfsm.tools.__all__ == sorted(
        agentfsm.tools.__all__, key=lambda n: (not n.isupper(), not n[0].isupper(), n)
    )
