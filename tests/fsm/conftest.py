from __future__ import annotations

import pytest

from agentfsm.fsm import Engine


@pytest.fixture(params=["compiled", "reference"])
def engine(request: pytest.FixtureRequest) -> Engine:
    """Every machine test runs on the compiled table and on python-statemachine itself."""
    engine: Engine = request.param
    return engine
