"""agentfsm's pytest plugin, installed with agentfsm (entry point ``pytest11``: ``agentfsm``).

It provides the `scripted_model` and `fake_clock` fixtures, and registers the hypothesis
profiles of `agentfsm.testing.profiles` (when hypothesis is installed) so that
``pytest --hypothesis-profile=agentfsm-ci`` works. For the deterministic simulation
(`agentfsm.testing.sim`) it parametrises a test taking ``sim_seed`` over its seeds (the
``agentfsm_seeds`` marker), reruns one with ``--agentfsm-seed N``, and runs the ``nightly``
tests and seeds with ``--agentfsm-nightly`` (see `agentfsm.testing.sim_pytest`). Disable it
with ``-p no:agentfsm``.
"""

from __future__ import annotations

import pytest

from agentfsm.llm.scripted import ScriptedModel
from agentfsm.testing import sim_pytest
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


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--agentfsm-seed``, ``--agentfsm-steps`` and ``--agentfsm-nightly``."""
    sim_pytest.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``agentfsm_seeds`` and ``nightly`` markers."""
    sim_pytest.configure(config)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise a test taking ``sim_seed`` over its seeds."""
    sim_pytest.generate(metafunc)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the ``nightly`` tests unless the nightly profile is on."""
    sim_pytest.deselect_nightly(config, items)


@pytest.fixture
def sim_steps(request: pytest.FixtureRequest) -> int:
    """Steps per simulation: ``--agentfsm-steps``, else 100."""
    steps: int | None = request.config.getoption("agentfsm_steps", default=None)
    return sim_pytest.DEFAULT_STEPS if steps is None else steps
