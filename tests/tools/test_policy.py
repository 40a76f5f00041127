from __future__ import annotations

import pytest
from pydantic import ValidationError

from agentfsm.tools import Decision, ToolPolicy
from agentfsm.tools.policy import refusal

ALLOW, APPROVAL, DENY = ToolPolicy.ALLOW, ToolPolicy.REQUIRE_APPROVAL, ToolPolicy.DENY
APPROVE, OUTPUT = Decision.approve(), Decision.output("result")


@pytest.mark.parametrize(
    ("policy", "client_side", "decision", "proceeds"),
    [
        (ALLOW, False, None, True),
        (ALLOW, False, APPROVE, True),
        (ALLOW, False, Decision.deny(), False),
        (ALLOW, False, OUTPUT, False),
        (APPROVAL, False, None, False),
        (APPROVAL, False, APPROVE, True),
        (APPROVAL, False, OUTPUT, False),
        (DENY, False, APPROVE, False),
        (DENY, True, OUTPUT, False),
        (ALLOW, True, OUTPUT, True),
        (APPROVAL, True, OUTPUT, True),
        (ALLOW, True, None, False),
        (ALLOW, True, APPROVE, False),
        (ALLOW, True, Decision.deny("no"), False),
    ],
    ids=lambda value: str(value.kind if isinstance(value, Decision) else value),
)
def test_the_policy_table_decides_whether_a_call_proceeds(
    policy: ToolPolicy, client_side: bool, decision: Decision | None, proceeds: bool
) -> None:
    reason = refusal(policy, client_side, decision)

    assert (reason is None) == proceeds
    if reason is not None:
        assert reason[0].islower()  # it continues 'call ... denied: '


def test_decisions_are_built_by_their_constructors_and_round_trip() -> None:
    decisions = [Decision.approve(), Decision.deny("too costly"), Decision.output({"a": [1]})]

    assert [d.kind for d in decisions] == ["approve", "deny", "output"]
    assert decisions[1].reason == "too costly"
    assert decisions[2].value == {"a": [1]}
    for decision in decisions:
        assert Decision.model_validate_json(decision.model_dump_json()) == decision


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"kind": "approve", "reason": "why"}, "only a 'deny' decision has a reason"),
        ({"kind": "deny", "value": 3}, "only an 'output' decision has a value"),
        ({"kind": "maybe"}, "Input should be 'approve', 'deny' or 'output'"),
        ({"kind": "approve", "extra": 1}, "Extra inputs are not permitted"),
    ],
    ids=["reason-on-approve", "value-on-deny", "unknown-kind", "extra-field"],
)
def test_a_decision_that_does_not_fit_its_kind_is_refused(
    fields: dict[str, object], problem: str
) -> None:
    with pytest.raises(ValidationError, match=problem):
        Decision.model_validate(fields)


def test_a_decision_is_frozen() -> None:
    with pytest.raises(ValidationError):
        Decision.approve().kind = "deny"  # type: ignore[misc]
