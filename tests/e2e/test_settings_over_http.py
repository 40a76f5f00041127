"""End to end: model settings reach the chat completions API through the real `openai` client."""

from __future__ import annotations

import json

from agentfsm import Agent, OpenAIModel, ToolCall, tool
from agentfsm.testing import LoopbackOpenAIServer, Reply


@tool
def look(city: str) -> str:
    """Look a city up."""
    return f"{city}: fine"


def test_the_agents_and_the_turns_settings_are_sent_with_each_call() -> None:
    call = ToolCall(id="c1", name="look", arguments=json.dumps({"city": "Oslo"}))
    with LoopbackOpenAIServer([Reply(tool_calls=(call,)), Reply("Fine."), Reply("Hi.")]) as server:
        model = OpenAIModel("gpt-test", base_url=server.url, api_key="k", stream=True)
        agent = Agent(
            model,
            [look],
            settings={"temperature": 0.2, "extra_headers": {"X-Team": "blue"}},
        )
        agent.start(
            "Oslo?",
            settings={
                "tool_choice": "look",
                "max_tokens": 99,
                "stop": ["END"],
                "seed": 3,
                "parallel_tool_calls": False,
                "reasoning_effort": "low",
                "extra_body": {"user": "u-1"},
            },
        )
        agent.submit("Hello")
        first, second, third = (request.json for request in server.requests)
        headers = server.requests[0].headers
    assert first["temperature"] == 0.2
    assert first["tool_choice"] == {"type": "function", "function": {"name": "look"}}
    assert first["max_completion_tokens"] == 99
    assert first["stop"] == ["END"]
    assert first["seed"] == 3
    assert first["parallel_tool_calls"] is False
    assert first["reasoning_effort"] == "low"
    assert first["user"] == "u-1"
    assert headers["x-team"] == "blue"
    assert "tool_choice" not in second  # a forcing choice: the turn's first call only
    assert second["seed"] == 3
    assert {k: third.get(k) for k in ("temperature", "seed", "max_completion_tokens")} == {
        "temperature": 0.2,
        "seed": None,
        "max_completion_tokens": None,
    }
