# file: examples/extract_invoice.py
"""An extraction agent: it reads an invoice's text and returns a typed `Invoice`.

python examples/extract_invoice.py            # offline, with a scripted model
OPENAI_API_KEY=... python examples/extract_invoice.py --openai gpt-4o-mini

The answer must validate against `Invoice` (pydantic), then against the application's own
check that the lines add up to the total. An answer that fails either goes back to the
model with what was wrong, at most ``output_retries`` times; every attempt is in the run's
log, and the typed invoice is on the outcome (``outcome.output``).
"""

from __future__ import annotations

import json
import sys

from pydantic import BaseModel

from agentfsm import Agent, Model, ScriptedModel
from agentfsm.errors import OutputRejectedError

TEXT = """ACME Tools Ltd. Invoice no. 2026-117, 24 Nov 2026.
2 x hammer at 12.50; 1 x saw at 30.00. Total due: 55.00 EUR."""


class Line(BaseModel):
    """One line of the invoice."""

    item: str
    quantity: int
    unit_price: float


class Invoice(BaseModel):
    """What the agent extracts."""

    number: str
    seller: str
    lines: list[Line]
    total: float
    currency: str


def lines_add_up(invoice: object) -> None:
    """The application's own check: the lines must add up to the total."""
    assert isinstance(invoice, Invoice)
    counted = sum(line.quantity * line.unit_price for line in invoice.lines)
    if abs(counted - invoice.total) > 0.005:
        raise OutputRejectedError(
            f"the lines add up to {counted:.2f}, not to the total {invoice.total:.2f}: "
            "read the quantities and prices again"
        )


def build_agent(model: Model | str, **options: object) -> Agent:
    """The extraction agent: any model, `Invoice` answers, two retries."""
    return Agent(
        model,
        system_prompt="Extract the invoice from the user's text.",
        output_type=Invoice,
        output_retries=2,
        output_validators=[lines_add_up],
        **options,  # type: ignore[arg-type]
    )


def scripted_model(*, structured: bool = True) -> ScriptedModel:
    """A model that first misreads a quantity, then gets it right (no network, no key)."""
    wrong = {
        "number": "2026-117",
        "seller": "ACME Tools Ltd.",
        "lines": [
            {"item": "hammer", "quantity": 1, "unit_price": 12.5},
            {"item": "saw", "quantity": 1, "unit_price": 30.0},
        ],
        "total": 55.0,
        "currency": "EUR",
    }
    right = {**wrong, "lines": [{**wrong["lines"][0], "quantity": 2}, wrong["lines"][1]]}
    model = ScriptedModel(structured_output=structured)
    for answer in (wrong, right):
        if structured:
            model.text(json.dumps(answer))
        else:
            model.tool_call("final_answer", **answer)
    return model


def main(argv: list[str]) -> Invoice:
    """Extract the invoice of `TEXT` and print it."""
    model: Model | str = f"openai:{argv[2]}" if argv[1:2] == ["--openai"] else scripted_model()
    agent = build_agent(model)
    outcome = agent.start(TEXT)  # start and submit, in one call
    if not isinstance(outcome.output, Invoice):
        raise SystemExit(f"no invoice: {outcome.reason}: {outcome.error}")
    print(outcome.output.model_dump_json(indent=2))
    print(f"{agent.iteration} answer(s); state {outcome.state}")
    return outcome.output


if __name__ == "__main__":
    main(sys.argv)
