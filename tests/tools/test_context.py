from __future__ import annotations

import dataclasses
import doctest

import pytest

import agentfsm.tools.context
import agentfsm.tools.hooks
import agentfsm.tools.spec
from agentfsm.tools import ToolContext


def test_a_context_bound_to_a_call_keys_it_for_idempotency() -> None:
    round_context = ToolContext(run_id="run-9", turn=4, iteration=1, user_id="u")

    bound = round_context.for_call("call-2")

    assert bound == ToolContext(run_id="run-9", turn=4, iteration=1, call_id="call-2", user_id="u")
    assert bound.idempotency_key == "run-9:call-2"
    assert round_context.call_id == ""


def test_a_context_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        ToolContext(run_id="r").turn = 2  # type: ignore[misc]


@pytest.mark.parametrize(
    "module",
    [agentfsm.tools.context, agentfsm.tools.hooks, agentfsm.tools.spec],
    ids=lambda m: m.__name__,
)
def test_docstring_examples_run(module: object) -> None:
    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)  # type: ignore[arg-type]

    assert tried > 0
    assert failures == 0
