from __future__ import annotations

import pytest

from agentfsm import Agent, Event, ScriptedModel, tool


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"Sunny in {city}"


@pytest.fixture
def answered_run() -> tuple[Agent, list[Event]]:
    """A real run: a tool round then an answer, then a second turn answered at once."""
    model = ScriptedModel().tool_call("get_weather", city="Paris").text("Sunny.").text("Bye.")
    agent = Agent(model, [get_weather], run_id="diagram-run")
    events: list[Event] = []
    agent.add_listener(lambda item: events.append(item) if isinstance(item, Event) else None)
    agent.start()
    agent.submit("Weather in Paris?")
    agent.submit("Thanks")
    return agent, events
