"""examples/extract_invoice.py: the extraction agent returns a typed invoice, in both modes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentfsm import MemoryStore, ScriptedModel
from agentfsm.stores.exact_replay import replay
from examples.extract_invoice import TEXT, Invoice, build_agent, scripted_model

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "extract_invoice.py"


@pytest.mark.parametrize("structured", [True, False], ids=["response_format", "final_answer"])
def test_the_application_check_sends_a_misread_back_and_the_retry_is_typed(
    structured: bool,
) -> None:
    store = MemoryStore()
    model = scripted_model(structured=structured)
    agent = build_agent(model, store=store)
    agent.start()

    outcome = agent.submit(TEXT)

    assert isinstance(outcome.output, Invoice)
    assert [line.quantity for line in outcome.output.lines] == [2, 1]
    invalid = [e for e in store.events(agent.run_id) if e.event == "output_invalid"]
    assert len(invalid) == 1
    assert "add up to 42.50, not to the total 55.00" in str(invalid[0].data["errors"])
    assert (model.requests[0].response_format is not None) is structured
    stored = store.load(agent.run_id)
    assert stored is not None
    replay(store.events(agent.run_id), expected=stored)


def test_a_model_that_keeps_misreading_fails_the_turn_after_two_retries() -> None:
    always_wrong = ScriptedModel(structured_output=True)
    for _ in range(3):
        always_wrong.text(
            '{"number": "1", "seller": "S", "lines": [], "total": 5.0, "currency": "EUR"}'
        )
    failing = build_agent(always_wrong)
    failing.start()

    outcome = failing.submit(TEXT)

    assert (outcome.state, outcome.reason) == ("failed", "output_invalid")
    assert len(always_wrong.requests) == 3


def test_the_example_runs_as_a_script() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=60, check=True
    )

    assert '"quantity": 2' in done.stdout
    assert "2 answer(s); state completed" in done.stdout
