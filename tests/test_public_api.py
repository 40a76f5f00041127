"""`agentfsm.__all__` is sorted and complete: it lists exactly the public names it exports."""

from __future__ import annotations

import inspect

import agentfsm
from agentfsm import errors


def test_all_is_sorted() -> None:
    assert agentfsm.__all__ == sorted(agentfsm.__all__)


def test_all_lists_exactly_the_public_names() -> None:
    public = {
        name
        for name, value in vars(agentfsm).items()
        if not name.startswith("_") and not inspect.ismodule(value) and name != "annotations"
    }
    assert public == set(agentfsm.__all__)


def test_every_error_is_exported() -> None:
    defined = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, errors.AgentFSMError)
    }
    assert defined <= set(agentfsm.__all__)
