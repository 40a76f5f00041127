"""The public surface is curated, documented, and has every error in `agentfsm.errors`.

`agentfsm.__all__` is short, sorted and complete. "Public" means `agentfsm.__all__`, the
``__all__`` of each subpackage and of `agentfsm.errors`. Documented means a docstring as
griffe reads it (the library mkdocstrings renders the API reference with), so a constant
needs its attribute docstring; that each name also appears in the built API reference is
checked by tests/test_docs_site.py.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import griffe
import pytest

import agentfsm
from agentfsm import errors

SUBPACKAGES = sorted(
    module.name
    for module in pkgutil.iter_modules(agentfsm.__path__, "agentfsm.")
    if module.ispkg or module.name == "agentfsm.errors"
)
"""Every subpackage, and `agentfsm.errors`: each has an ``__all__`` of public names."""

ROOTS = ("AgentFSMError", "IllegalTransitionError", "ModelError", "StoreError", "ToolCallError")
"""The errors an application usually catches, exported from `agentfsm` too."""


def public_names() -> list[tuple[str, str]]:
    """(module, name) for every public name of the package."""
    pairs = [("agentfsm", name) for name in agentfsm.__all__]
    for module in SUBPACKAGES:
        pairs += [(module, name) for name in importlib.import_module(module).__all__]
    return pairs


@pytest.fixture(scope="module")
def package() -> griffe.Module:
    loaded = griffe.load("agentfsm", docstring_parser="google", resolve_aliases=True)
    assert isinstance(loaded, griffe.Module)
    return loaded


def test_all_is_sorted() -> None:
    assert agentfsm.__all__ == sorted(agentfsm.__all__)


def test_all_has_at_most_40_names() -> None:
    assert len(agentfsm.__all__) <= 40


def test_all_lists_exactly_the_public_names() -> None:
    public = {
        name
        for name, value in vars(agentfsm).items()
        if not name.startswith("_") and not inspect.ismodule(value) and name != "annotations"
    }
    assert public == set(agentfsm.__all__)


@pytest.mark.parametrize("module", SUBPACKAGES)
def test_each_subpackage_lists_what_it_exports(module: str) -> None:
    names = importlib.import_module(module).__all__

    assert len(names) == len(set(names))
    assert all(hasattr(importlib.import_module(module), name) for name in names)


def test_every_top_level_name_is_public_in_its_subpackage_too() -> None:
    # Dropping a name from the top level never makes it private: it stays importable,
    # and documented, where it is defined.
    homes = {
        name: [m for m in SUBPACKAGES if name in importlib.import_module(m).__all__]
        for name in agentfsm.__all__
    }

    assert [name for name, found in homes.items() if not found] == []
    for name, found in homes.items():
        assert getattr(importlib.import_module(found[0]), name) is getattr(agentfsm, name)


def _exceptions(module: ModuleType) -> dict[str, type[BaseException]]:
    return {
        name: value
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__.startswith("agentfsm")
    }


def test_every_public_error_is_importable_from_errors() -> None:
    found: dict[str, type[BaseException]] = {}
    for module, _name in public_names():
        found |= _exceptions(importlib.import_module(module))

    assert found
    for name, error in found.items():
        assert getattr(errors, name, None) is error, name
        assert name in errors.__all__


def test_errors_all_is_every_error_class_of_the_module() -> None:
    assert set(_exceptions(errors)) == set(errors.__all__)


def test_the_error_roots_are_exported_from_the_top_level() -> None:
    exported = {name for name in agentfsm.__all__ if name.endswith("Error")}

    assert exported == set(ROOTS)
    for name in ROOTS:
        assert issubclass(getattr(agentfsm, name), errors.AgentFSMError)
    assert all(issubclass(getattr(errors, e), errors.AgentFSMError) for e in ROOTS)


@pytest.mark.parametrize(
    ("module", "name"), public_names(), ids=[f"{m}.{n}" for m, n in public_names()]
)
def test_every_public_name_has_a_docstring(package: griffe.Module, module: str, name: str) -> None:
    path = module.removeprefix("agentfsm").lstrip(".")
    owner = package[path] if path else package
    obj = owner.members[name]
    docstring = obj.docstring

    # A submodule of the same name hides the object from the docs (and its docstring from
    # this test): rename the module.
    runtime = getattr(importlib.import_module(module), name)
    assert obj.is_module == inspect.ismodule(runtime), f"{module}.{name} is shadowed"

    assert docstring is not None, f"{module}.{name} has no docstring"
    assert docstring.value.strip(), f"{module}.{name} has an empty docstring"
