"""agentfsm's pytest plugin, installed with agentfsm (entry point ``pytest11``: ``agentfsm``).

It provides the `scripted_model` and `fake_clock` fixtures, and registers the hypothesis
profiles of `agentfsm.testing.profiles` (when hypothesis is installed) so that
``pytest --hypothesis-profile=agentfsm-ci`` works. Disable it with ``-p no:agentfsm``.
"""

from __future__ import annotations

import pytest

from agentfsm.llm.scripted import ScriptedModel
from agentfsm.testing.clock import FakeClock

try:
    from agentfsm.testing.profiles import register_profiles
except ImportError:  # pragma: no cover - hypothesis is not installed
    pass
else:
    register_profiles()


@pytest.fixture
def scripted_model() -> ScriptedModel:
    """A fresh `ScriptedModel` with an empty script: script it, then build your Agent.

    Example::

        def test_weather(scripted_model):
            scripted_model.tool_call("weather", city="Paris").text("Sunny.")
            agent = Agent(scripted_model, tools=[weather])
            agent.start()
            assert agent.submit("Paris?").reply == "Sunny."
    """
    return ScriptedModel()


@pytest.fixture
def fake_clock() -> FakeClock:
    """A `FakeClock` to pass as an Agent's ``clock``: time moves only with ``advance``."""
    return FakeClock()
