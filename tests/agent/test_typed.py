"""Typed answers: `Agent(output_type=...)` validates the answer in the `validating` step."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from agentfsm import Agent, ScriptedModel, tool
from agentfsm.agent.output import ACCEPTED, FINAL_ANSWER, OutputSpec
from agentfsm.errors import OutputRejectedError
from agentfsm.states import MachineName
from agentfsm.stores import MemoryStore, SQLiteStore
from agentfsm.stores.exact_replay import replay
from agentfsm.verify import check_log
from tests.agent.agent_support import assert_history_valid


class Invoice(BaseModel):
    """An invoice read from a text."""

    number: str
    total: float


SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    "required": ["city", "days"],
    "additionalProperties": False,
}

GOOD = json.dumps({"number": "A-1", "total": 12.5})
BAD = json.dumps({"number": "A-1"})


@tool
def lookup(number: str) -> str:
    """Find an invoice's text."""
    return f"invoice {number}: total 12.5"


def loop_events(agent: Agent, store: SQLiteStore) -> list[tuple[str, str, str]]:
    events = store.events(agent.run_id)
    return [(e.event, e.source, e.target) for e in events if e.machine == MachineName.LOOP]


def structured(*steps: str) -> ScriptedModel:
    return ScriptedModel(steps, structured_output=True)


def test_a_valid_structured_answer_is_the_outcomes_typed_output() -> None:
    model = structured(GOOD)
    agent = Agent(model, output_type=Invoice)
    agent.start()

    outcome = agent.submit("Read invoice A-1")

    assert (outcome.state, outcome.reason) == ("completed", "answered")
    assert outcome.output == Invoice(number="A-1", total=12.5)
    assert isinstance(outcome.output, Invoice)
    assert outcome.reply == GOOD
    assert agent.loop_state == "answered"
    assert model.requests[0].response_format == {
        "type": "json_schema",
        "json_schema": {"name": "Invoice", "schema": Invoice.model_json_schema(), "strict": False},
    }
    assert FINAL_ANSWER not in model.requests[0].tool_names


def test_an_invalid_answer_goes_back_with_its_errors_and_the_retry_is_typed(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    agent = Agent(structured(BAD, GOOD), output_type=Invoice, store=store)
    agent.start()

    outcome = agent.submit("Read invoice A-1")

    assert outcome.output == Invoice(number="A-1", total=12.5)
    assert loop_events(agent, store) == [
        ("model_replied", "thinking", "validating"),
        ("output_invalid", "validating", "thinking"),
        ("model_replied", "thinking", "validating"),
        ("output_valid", "validating", "answered"),
    ]
    invalid = next(e for e in store.events(agent.run_id) if e.event == "output_invalid")
    assert invalid.data["errors"] == ["total: Field required"]
    feedback = agent.messages[-2]
    assert feedback.role == "user"
    assert "total: Field required" in (feedback.content or "")
    assert agent.iteration == 2


def test_a_spent_budget_fails_the_turn_with_output_invalid_and_keeps_every_attempt(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    agent = Agent(structured(BAD, BAD, "not json"), output_type=Invoice, store=store)
    agent.start()

    outcome = agent.submit("Read invoice A-1")

    assert (outcome.state, outcome.reason) == ("failed", "output_invalid")
    assert outcome.output is None
    assert agent.loop_state == "rejected"
    assert outcome.error is not None
    assert outcome.error.type == "OutputInvalid"
    assert "3 attempt(s)" in outcome.error.message
    invalid = [e for e in store.events(agent.run_id) if e.event == "output_invalid"]
    assert [e.target for e in invalid] == ["thinking", "thinking", "rejected"]
    assert [m.content for m in agent.messages if m.role == "assistant"] == [BAD, BAD, "not json"]
    assert_history_valid(agent.messages)


@pytest.mark.parametrize("retries", [0, 1, 3])
def test_output_retries_bounds_the_answers_a_turn_takes(retries: int) -> None:
    model = structured(*[BAD] * 10)
    agent = Agent(model, output_type=Invoice, output_retries=retries)
    agent.start()

    outcome = agent.submit("Read invoice A-1")

    assert outcome.reason == "output_invalid"
    assert len(model.requests) == retries + 1


def test_the_iteration_cap_ends_the_retries_too() -> None:
    model = structured(*[BAD] * 10)
    agent = Agent(model, output_type=Invoice, output_retries=5, max_iterations=2)
    agent.start()

    outcome = agent.submit("Read invoice A-1")

    assert outcome.reason == "output_invalid"
    assert len(model.requests) == 2
    assert agent.iteration == 2


def test_a_json_schema_output_type_gives_the_json_value() -> None:
    agent = Agent(
        structured('{"city": "Paris", "days": 0}', '{"city": "Paris", "days": 3}'),
        output_type=SCHEMA,
    )
    agent.start()

    outcome = agent.submit("Plan a trip")

    assert outcome.output == {"city": "Paris", "days": 3}
    feedback = [m.content or "" for m in agent.messages if m.role == "user"][-1]
    assert "/days: 0 is less than the minimum of 1" in feedback


def test_a_json_schema_output_type_is_judged_by_its_own_draft() -> None:
    draft07 = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"card": {"type": "string"}, "cvv": {"type": "string"}},
        "dependencies": {"card": ["cvv"]},
    }
    agent = Agent(
        structured('{"card": "4111"}', '{"card": "4111", "cvv": "1"}'), output_type=draft07
    )
    agent.start()

    outcome = agent.submit("Pay")

    assert outcome.output == {"card": "4111", "cvv": "1"}
    feedback = [m.content or "" for m in agent.messages if m.role == "user"][-1]
    assert "'cvv' is a dependency of 'card'" in feedback


def test_an_output_type_naming_an_unknown_draft_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"draft-2099.*draft-07"):
        OutputSpec.of({"$schema": "https://example.com/draft-2099", "type": "object"})


def test_a_model_without_structured_output_answers_through_the_final_answer_tool() -> None:
    model = (
        ScriptedModel()
        .tool_call("lookup", number="A-1")
        .tool_call(FINAL_ANSWER, number="A-1")
        .tool_call(FINAL_ANSWER, number="A-1", total=12.5)
    )
    agent = Agent(model, [lookup], output_type=Invoice)
    agent.start()

    outcome = agent.submit("Read invoice A-1")

    assert outcome.output == Invoice(number="A-1", total=12.5)
    assert outcome.reply == json.dumps({"number": "A-1", "total": 12.5})
    assert model.requests[0].response_format is None
    assert FINAL_ANSWER in model.requests[0].tool_names
    tool_messages = [m for m in agent.messages if m.role == "tool" and m.name == FINAL_ANSWER]
    assert "total: Field required" in (tool_messages[0].content or "")
    assert tool_messages[1].content == ACCEPTED
    assert_history_valid(agent.messages)


def test_final_answer_called_beside_other_tools_is_refused_as_a_tool_error() -> None:
    model = (
        ScriptedModel()
        .tool_calls(("lookup", {"number": "A-1"}), (FINAL_ANSWER, {"number": "A", "total": 1}))
        .tool_call(FINAL_ANSWER, number="A-1", total=12.5)
    )
    agent = Agent(model, [lookup], output_type=Invoice)
    agent.start()

    outcome = agent.submit("Read invoice A-1")

    assert outcome.output == Invoice(number="A-1", total=12.5)
    refused = next(m for m in agent.messages if m.role == "tool" and m.name == FINAL_ANSWER)
    assert "on its own" in (refused.content or "")


def test_a_text_answer_in_tool_mode_is_told_to_call_final_answer() -> None:
    model = ScriptedModel().text("It is 12.5").tool_call(FINAL_ANSWER, number="A", total=12.5)
    agent = Agent(model, output_type=Invoice)
    agent.start()

    outcome = agent.submit("Read invoice A")

    assert outcome.output == Invoice(number="A", total=12.5)
    told = [m.content or "" for m in agent.messages if m.role == "user"][-1]
    assert f"calling {FINAL_ANSWER}" in told


def test_an_application_validator_asks_for_a_retry_with_its_own_message() -> None:
    seen: list[Invoice] = []

    def positive(invoice: object) -> None:
        assert isinstance(invoice, Invoice)
        seen.append(invoice)
        if invoice.total <= 0:
            raise OutputRejectedError("the total must be positive; read it again")

    agent = Agent(
        structured(json.dumps({"number": "A", "total": -1}), GOOD),
        output_type=Invoice,
        output_validators=[positive],
    )
    agent.start()

    outcome = agent.submit("Read invoice A")

    assert outcome.output == Invoice(number="A-1", total=12.5)
    assert [s.total for s in seen] == [-1, 12.5]
    assert "the total must be positive" in (agent.messages[-2].content or "")


def test_an_async_validator_may_replace_the_output() -> None:
    async def rounded(invoice: object) -> Invoice:
        assert isinstance(invoice, Invoice)
        return invoice.model_copy(update={"total": round(invoice.total)})

    agent = Agent(
        structured(json.dumps({"number": "A", "total": 12.6})),
        output_type=Invoice,
        output_validators=[rounded],
    )

    async def scenario() -> object:
        await agent.astart()
        return (await agent.asubmit("Read invoice A")).output

    assert asyncio.run(scenario()) == Invoice(number="A", total=13)


def test_a_validator_that_raises_another_error_fails_the_turn_with_error() -> None:
    def broken(_: object) -> None:
        raise RuntimeError("validator bug")

    agent = Agent(structured(GOOD), output_type=Invoice, output_validators=[broken])
    agent.start()

    with pytest.raises(RuntimeError, match="validator bug"):
        agent.submit("Read invoice A")

    assert (agent.state, agent.reason, agent.loop_state) == ("failed", "error", "aborted")


def test_the_typed_output_survives_a_restart_as_the_same_type(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    first = Agent(structured(BAD, GOOD), output_type=Invoice, store=SQLiteStore(path))
    first.start()
    first.submit("Read invoice A-1")

    again = Agent(structured(), output_type=Invoice, store=SQLiteStore(path), run_id=first.run_id)
    again.start()
    outcome = again.outcome()

    assert isinstance(outcome.output, Invoice)
    assert outcome.output == Invoice(number="A-1", total=12.5)


@pytest.mark.parametrize("mode", ["structured", "tool", "rejected"])
def test_a_typed_run_replays_exactly_and_its_log_is_a_path_of_the_machines(
    tmp_path: Path, mode: str
) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    if mode == "tool":
        model = (
            ScriptedModel()
            .tool_call(FINAL_ANSWER, number="A")
            .tool_call(FINAL_ANSWER, number="A", total=1)
        )
    else:
        model = structured(BAD, GOOD if mode == "structured" else BAD)
    agent = Agent(model, output_type=Invoice, output_retries=1, store=store)
    agent.start()
    agent.submit("Read invoice A")

    log = store.events(agent.run_id)
    stored = store.load(agent.run_id)
    assert stored is not None
    assert replay(log, expected=stored).invalid_outputs == (2 if mode == "rejected" else 1)
    assert check_log(log, config={"output_retries": 1}).ok


def test_a_new_turn_starts_with_a_fresh_budget() -> None:
    agent = Agent(structured(BAD, BAD, BAD, GOOD), output_type=Invoice, output_retries=1)
    agent.start()

    assert agent.submit("first").reason == "output_invalid"
    second = agent.submit("second")

    assert second.output == Invoice(number="A-1", total=12.5)


def test_an_untyped_run_never_validates_and_has_no_output() -> None:
    model = ScriptedModel(["plain text"])
    agent = Agent(model)
    agent.start()

    outcome = agent.submit("hi")

    assert (outcome.reply, outcome.output, agent.loop_state) == ("plain text", None, "answered")
    assert model.requests[0].response_format is None
    assert FINAL_ANSWER not in model.requests[0].tool_names


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"output_type": int}, TypeError, "output_type must be a pydantic model class"),
        ({"output_type": "Invoice"}, TypeError, "output_type must be"),
        ({"output_type": {"type": "array"}}, ValueError, "must describe a JSON object"),
        ({"output_type": {"type": 5}}, ValueError, "not a valid JSON Schema"),
        ({"output_type": Invoice, "output_retries": -1}, ValueError, "output_retries"),
        ({"output_type": Invoice, "output_retries": "2"}, TypeError, "output_retries"),
        ({"output_type": Invoice, "output_validators": [1]}, TypeError, "a callable"),
        ({"output_type": Invoice, "output_validators": len}, TypeError, "output_validators"),
        ({"output_validators": [print]}, ValueError, "need an output_type"),
    ],
)
def test_bad_output_configuration_is_refused_with_a_clear_error(
    kwargs: dict[str, object], error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        Agent(ScriptedModel(), **kwargs)  # type: ignore[arg-type]


def test_a_tool_named_final_answer_is_refused_when_the_answer_needs_that_name() -> None:
    @tool
    def final_answer(text: str) -> str:
        """Clashes."""
        return text

    with pytest.raises(ValueError, match="named 'final_answer'"):
        Agent(ScriptedModel(), [final_answer], output_type=Invoice)


def test_a_typed_run_restored_without_its_output_type_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    first = Agent(structured(GOOD), output_type=Invoice, store=SQLiteStore(path))
    first.start()
    first.submit("go")

    with pytest.raises(ValueError, match="started with an output_type"):
        Agent(ScriptedModel(), store=SQLiteStore(path), run_id=first.run_id)


def test_output_rejected_error_needs_a_message() -> None:
    with pytest.raises(TypeError, match="needs a message"):
        OutputRejectedError("  ")


def test_strict_mode_is_asked_for_only_for_a_closed_schema() -> None:
    closed = OutputSpec.of(SCHEMA)
    open_ = OutputSpec.of(Invoice)

    assert closed is not None
    assert closed.strict
    assert open_ is not None
    assert not open_.strict
    assert OutputSpec.of(None) is None


def test_a_run_stopped_between_its_answer_and_the_check_validates_it_on_restart() -> None:
    done = MemoryStore()
    first = Agent(structured(GOOD), output_type=Invoice, store=done)
    first.start()
    first.submit("Read invoice A-1")
    log = done.events(first.run_id)
    cut = next(i for i, e in enumerate(log) if e.target == "validating") + 1
    stopped = MemoryStore()  # as a crash right after the answer was stored would leave it
    stopped.save(replay(log[:cut]), log[:cut], expected_version=None)

    again = Agent(structured(), output_type=Invoice, store=stopped, run_id=first.run_id)
    assert again.loop_state == "validating"
    outcome = again.start()

    assert outcome.output == Invoice(number="A-1", total=12.5)
    assert [e.event for e in stopped.events(first.run_id)][cut:] == ["output_valid", "complete"]
