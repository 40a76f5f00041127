"""End to end: typed answers with the real `openai` client against the loopback server.

The request carries the structured output (``response_format``) or the ``final_answer``
tool, and the outcome is typed; an invalid answer is retried over the wire, and the typed
output survives a restart of the process (a new Agent on the same SQLite file).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from agentfsm import Agent, OpenAIModel, ToolCall
from agentfsm.stores import SQLiteStore
from agentfsm.stores.exact_replay import replay
from agentfsm.testing import LoopbackOpenAIServer, Reply


class Invoice(BaseModel):
    """An invoice read from a text."""

    number: str
    total: float


GOOD = {"number": "A-1", "total": 12.5}


def model(server: LoopbackOpenAIServer, *, structured: bool, stream: bool = False) -> OpenAIModel:
    return OpenAIModel(
        "loopback-model",
        base_url=server.url,
        api_key="test-key",
        timeout=5.0,
        stream=stream,
        structured_output=structured,
    )


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_structured_output_is_requested_and_the_retried_answer_is_typed(
    tmp_path: Path, stream: bool
) -> None:
    path = tmp_path / "runs.db"
    with LoopbackOpenAIServer(
        [Reply(json.dumps({"number": "A-1"})), Reply(json.dumps(GOOD))]
    ) as server:
        agent = Agent(
            model(server, structured=True, stream=stream),
            output_type=Invoice,
            store=SQLiteStore(path),
        )
        agent.start()

        outcome = agent.submit("Read invoice A-1")

        sent = server.requests
    assert outcome.output == Invoice(number="A-1", total=12.5)
    assert [r.response_format for r in sent] == [
        {
            "type": "json_schema",
            "json_schema": {
                "name": "Invoice",
                "schema": Invoice.model_json_schema(),
                "strict": False,
            },
        }
    ] * 2
    retry = sent[1].messages[-1]
    assert isinstance(retry, dict)
    assert retry["role"] == "user"
    assert "total: Field required" in str(retry["content"])
    # The restarted process reads the output from the store: the server is gone.
    gone = OpenAIModel("loopback-model", api_key="test-key", structured_output=True)
    again = Agent(
        gone,
        output_type=Invoice,
        store=SQLiteStore(path),
        run_id=agent.run_id,
    )
    again.start()
    assert again.outcome().output == Invoice(number="A-1", total=12.5)


def test_a_model_without_structured_output_gets_the_final_answer_tool(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    answer = ToolCall(id="f1", name="final_answer", arguments=json.dumps(GOOD))
    with LoopbackOpenAIServer([Reply(tool_calls=(answer,))]) as server:
        agent = Agent(model(server, structured=False), output_type=Invoice, store=store)
        agent.start()

        outcome = agent.submit("Read invoice A-1")

        sent = server.requests
    assert outcome.output == Invoice(number="A-1", total=12.5)
    assert sent[0].response_format is None
    final = next(
        t for t in sent[0].tools if isinstance(t, dict) and t["function"]["name"] == "final_answer"
    )
    assert final["function"]["parameters"] == Invoice.model_json_schema()
    stored = store.load(agent.run_id)
    assert stored is not None
    assert replay(store.events(agent.run_id), expected=stored).state == "completed"


def test_the_model_id_decides_structured_output_by_default() -> None:
    assert OpenAIModel("gpt-4o-mini", api_key="k").structured_output
    assert not OpenAIModel("llama3", api_key="k").structured_output
    with pytest.raises(TypeError, match="structured_output"):
        OpenAIModel("gpt-4o", api_key="k", structured_output="yes")  # type: ignore[arg-type]
