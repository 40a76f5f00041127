"""A small customer-support agent, property-tested with the testing kit (docs/testing.md).

Three tools — one free to run, one that a human must approve, one the model may never run —
and two hooks: one reminds the model of the refund policy before each model call, the other
audits every call before it runs. ``tests/examples/test_support_agent.py`` drives it with
`agentfsm.testing.AgentStateMachine`.

Run it on the scripted demo model::

    python examples/support_agent.py
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated

from pydantic import Field

from agentfsm import Agent, Message, Model, RunStore, ToolPolicy, tool
from agentfsm.tools.hooks import HookContext

ORDERS: dict[str, dict[str, object]] = {
    "A100": {"item": "kettle", "total": 39.0, "status": "delivered"},
    "A101": {"item": "toaster", "total": 120.0, "status": "in transit"},
}
"""The shop's orders, by id."""

REFUND_LIMIT = 500.0
"""The largest refund the agent may offer."""

OrderId = Annotated[str, Field(pattern=r"^[A-Z][0-9]{3}$", description="An order id, like A100.")]


@tool
def lookup_order(order_id: OrderId) -> dict[str, object]:
    """Look up an order: its item, total and status."""
    order = ORDERS.get(order_id)
    if order is None:
        raise LookupError(f"there is no order {order_id!r}")
    return {"order_id": order_id, **order}


@tool(policy=ToolPolicy.REQUIRE_APPROVAL)
def refund(
    order_id: OrderId,
    amount: Annotated[float, Field(gt=0, le=REFUND_LIMIT, description="In euros.")],
    reason: str = "",
) -> str:
    """Refund part or all of an order. A human approves each refund before it is paid."""
    return f"refunded {amount:.2f} EUR on order {order_id}"


@tool(policy=ToolPolicy.DENY)
def delete_account(customer: str) -> str:
    """Delete a customer's account. Never run by the agent: support staff do it by hand."""
    return f"deleted {customer}"


class Audit:
    """A ``before_each_tool`` hook that records each call before it runs."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        """``"tool_name(call_id)"`` for each call, in order."""

    def __call__(self, context: HookContext) -> None:
        """Record the call about to run."""
        call = context.pending_tool
        if call is not None:
            self.calls.append(f"{call.name}({call.id})")


def remind_of_policy(context: HookContext) -> None:
    """A ``before_llm`` hook: remind the model of the refund limit once per turn."""
    if context.iteration == 1:
        context.add_message(
            Message.system(f"Refunds above {REFUND_LIMIT:.0f} EUR are not possible.")
        )


def build_agent(
    model: Model | str,
    *,
    store: RunStore | None = None,
    clock: Callable[[], float] = time.time,
    audit: Audit | None = None,
) -> Agent:
    """The support agent on ``model``, keeping its run in ``store`` if one is given.

    Approvals wait at most an hour and questions to the customer a day.
    """
    return Agent(
        model,
        tools=[lookup_order, refund, delete_account],
        system_prompt="You are the support agent of a small shop. Be brief and polite.",
        hooks={"before_llm": remind_of_policy, "before_each_tool": audit or Audit()},
        max_iterations=4,
        ask_user=True,  # the agent may ask the customer (provide_input answers)
        action_timeout=3_600,
        input_timeout=86_400,
        store=store,
        clock=clock,
    )


if __name__ == "__main__":
    agent = build_agent("scripted:demo")
    print(agent.start("Where is my order A100?").reply)  # start and submit, in one call
