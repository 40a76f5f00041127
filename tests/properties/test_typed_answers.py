"""Property tests of typed answers: the retry budget is a bound, and only a valid answer completes.

For any script of valid and invalid answers (as JSON text for a model with structured
output, or as ``final_answer`` calls for one without), any ``output_retries`` and any
iteration cap:

- a turn records at most ``output_retries + 1`` ``output_invalid`` events, and at most
  ``output_retries`` of them go back to ``thinking``;
- it completes exactly when a valid answer comes within the answers it may take, and then
  its output is that answer, as the output type;
- otherwise it fails with reason ``output_invalid``, its loop ``rejected``, every answer
  it took in the log; I8 holds, and the log replays to the stored run (I10).
"""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from agentfsm import Agent, ScriptedModel
from agentfsm.agent.output import FINAL_ANSWER
from agentfsm.stores import MemoryStore
from agentfsm.stores.exact_replay import replay
from tests.agent.agent_support import assert_history_valid


class Reading(BaseModel):
    """A meter reading."""

    meter: str
    value: int


def answer(valid: bool, n: int) -> dict[str, object]:
    return {"meter": f"m{n}", "value": n} if valid else {"meter": f"m{n}"}


def scripted(answers: list[bool], tool_mode: bool) -> ScriptedModel:
    model = ScriptedModel(structured_output=not tool_mode)
    for n, valid in enumerate(answers):
        if tool_mode:
            model.tool_call(FINAL_ANSWER, **answer(valid, n))  # type: ignore[arg-type]
        else:
            model.text(json.dumps(answer(valid, n)))
    return model


@given(
    answers=st.lists(st.booleans(), min_size=1, max_size=8),
    retries=st.integers(0, 4),
    max_iterations=st.integers(1, 6),
    tool_mode=st.booleans(),
)
def test_the_retry_budget_bounds_the_turn_and_only_a_valid_answer_completes_it(
    answers: list[bool], retries: int, max_iterations: int, tool_mode: bool
) -> None:
    store = MemoryStore()
    model = scripted([*answers, *[False] * 10], tool_mode)
    agent = Agent(
        model,
        output_type=Reading,
        output_retries=retries,
        max_iterations=max_iterations,
        store=store,
    )
    agent.start()

    outcome = agent.submit("Read the meter")

    log = store.events(agent.run_id)
    invalid = [e for e in log if e.event == "output_invalid"]
    assert len(invalid) <= retries + 1
    assert sum(e.target == "thinking" for e in invalid) <= retries
    may_take = min(retries + 1, max_iterations)
    first_valid = next((n for n, ok in enumerate(answers[:may_take]) if ok), None)
    if first_valid is not None:
        assert (outcome.state, outcome.reason, agent.loop_state) == (
            "completed",
            "answered",
            "answered",
        )
        assert outcome.output == Reading(meter=f"m{first_valid}", value=first_valid)
        assert len(invalid) == first_valid
    else:
        assert (outcome.state, outcome.reason, agent.loop_state) == (
            "failed",
            "output_invalid",
            "rejected",
        )
        assert outcome.output is None
        assert len(invalid) == may_take
        assert invalid[-1].target == "rejected"
    taken = len(invalid) + (first_valid is not None)
    assert len(model.requests) == taken == agent.iteration <= max_iterations
    assert sum(m.role == "assistant" for m in agent.messages) == taken
    assert_history_valid(agent.messages)
    stored = store.load(agent.run_id)
    assert stored is not None
    replay(log, expected=stored)
