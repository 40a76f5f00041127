"""Who decides whether a call may run: the tool's `ToolPolicy` and the application's `Decision`.

The rule (the contract's I9, the policy part), for a call whose tool is registered and enabled:

=================  ========================  ==========================================
tool               decision for the call     outcome
=================  ========================  ==========================================
policy ``deny``    any                       denied
any                ``deny``                  denied (with the decision's reason)
client-side        ``output``                answered with the output (no body runs)
client-side        none or ``approve``       denied: it needs an ``output`` decision
``require_appr…``  ``approve``               runs
``require_appr…``  none                      denied: it needs an ``approve`` decision
``allow``          none or ``approve``       runs
server-side        ``output``                denied: outputs are for client-side tools
=================  ========================  ==========================================
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

from agentfsm._compat import StrEnum
from agentfsm.states.json import JSONValue


class ToolPolicy(StrEnum):
    """Whether a tool's calls may run without asking the application first."""

    ALLOW = "allow"
    """Calls run as soon as their arguments validate."""
    REQUIRE_APPROVAL = "require_approval"
    """Each call runs only once the application approves it (`Decision.approve`)."""
    DENY = "deny"
    """Calls never run; each is answered with a ``denied`` result."""


DecisionKind = Literal["approve", "deny", "output"]
"""``approve``: the call may run. ``deny``: it may not. ``output``: the application ran a
client-side tool and this is its result."""


class Decision(BaseModel):
    """The application's answer to one pending tool call.

    Build one with `Decision.approve`, `Decision.deny` or `Decision.output`, and pass them to
    `ToolSystem.run_round` as ``decisions={call_id: decision}``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: DecisionKind
    """What the application decided."""
    reason: str | None = None
    """For ``deny``: why, shown to the model in the call's tool message."""
    value: JSONValue = None
    """For ``output``: the client-side tool's result, sent to the model as the call's output."""

    @model_validator(mode="after")
    def _fits_its_kind(self) -> Decision:
        if self.reason is not None and self.kind != "deny":
            raise ValueError(f"only a 'deny' decision has a reason, not {self.kind!r}")
        if self.value is not None and self.kind != "output":
            raise ValueError(f"only an 'output' decision has a value, not {self.kind!r}")
        return self

    @classmethod
    def approve(cls) -> Decision:
        """Let the call run."""
        return cls(kind="approve")

    @classmethod
    def deny(cls, reason: str | None = None) -> Decision:
        """Refuse the call; ``reason`` is shown to the model."""
        return cls(kind="deny", reason=reason)

    @classmethod
    def output(cls, value: JSONValue) -> Decision:
        """Answer a client-side call with ``value`` (the application ran the tool)."""
        return cls(kind="output", value=value)


def refusal(policy: ToolPolicy, client_side: bool, decision: Decision | None) -> str | None:
    """Why the policy and the decision do not let a call proceed, or None if they do.

    The reason says what would have been needed; it becomes part of a `ToolDeniedError`.
    """
    if policy is ToolPolicy.DENY:
        return "the tool's policy is 'deny', so its calls never run"
    if decision is not None and decision.kind == "deny":
        return f"the application denied it: {decision.reason or 'no reason given'}"
    kind = None if decision is None else decision.kind
    if client_side:
        if kind == "output":
            return None
        return (
            "it is a client-side tool, so the application must answer it with Decision.output(...)"
        )
    if kind == "output":
        return "an output decision answers only a client-side tool; approve or deny this one"
    if policy is ToolPolicy.REQUIRE_APPROVAL and kind != "approve":
        return "the tool requires approval and the application gave no Decision.approve()"
    return None
