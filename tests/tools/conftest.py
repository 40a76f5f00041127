"""Fixtures of the tools tests: sync and async tool bodies through one parametrised fixture."""

from __future__ import annotations

import pytest

from tests.tools.spies import Flavour


@pytest.fixture(params=["sync", "async"])
def flavour(request: pytest.FixtureRequest) -> Flavour:
    """Every test that takes it runs once with a sync body and once with an async one."""
    value: Flavour = request.param
    return value
