"""The simulation's part of agentfsm's pytest plugin: seeds, steps and the nightly profile.

A test that takes the ``sim_seed`` fixture runs once per seed: those of its
``@pytest.mark.agentfsm_seeds(...)`` marker, or only the ones given on the command line::

    @pytest.mark.agentfsm_seeds(range(10), nightly=range(10, 1000))
    def test_my_agent_survives(sim_seed, sim_steps):
        report = Simulation(sim_seed, MemoryStore(), steps=sim_steps, world=MyWorld()).run()
        report.raise_if_violated()

    pytest --agentfsm-seed 417             # rerun one seed (a failure prints it)
    pytest --agentfsm-nightly              # also the marker's nightly seeds
    HYPOTHESIS_PROFILE=nightly pytest      # the same, with the kit's nightly profile
    pytest --hypothesis-profile=agentfsm-nightly

Tests marked ``nightly`` run only with the nightly profile (deselected otherwise).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import pytest

NIGHTLY_PROFILES = frozenset({"nightly", "agentfsm-nightly"})
"""``HYPOTHESIS_PROFILE`` values that turn the nightly seeds and tests on."""
DEFAULT_STEPS = 100
"""Steps a simulation takes in a test unless ``--agentfsm-steps`` says otherwise."""


def add_options(parser: pytest.Parser) -> None:
    """The plugin's command line options."""
    group = parser.getgroup("agentfsm", "agentfsm's deterministic simulation")
    group.addoption(
        "--agentfsm-seed",
        action="append",
        type=int,
        default=[],
        metavar="N",
        help="run the simulation tests (sim_seed) for this seed only; repeatable",
    )
    group.addoption(
        "--agentfsm-steps",
        type=int,
        default=None,
        metavar="K",
        help="steps per simulation (the sim_steps fixture)",
    )
    group.addoption(
        "--agentfsm-nightly",
        action="store_true",
        default=False,
        help="run the nightly seeds and the tests marked nightly",
    )


def configure(config: pytest.Config) -> None:
    """Register the markers."""
    config.addinivalue_line(
        "markers",
        "agentfsm_seeds(seeds, nightly=()): the seeds a test taking sim_seed runs for "
        "(nightly: more, with --agentfsm-nightly or HYPOTHESIS_PROFILE=nightly)",
    )
    config.addinivalue_line(
        "markers", "nightly: a long test run only by the nightly profile (--agentfsm-nightly)"
    )


def nightly(config: pytest.Config) -> bool:
    """Whether the nightly profile is on."""
    if config.getoption("agentfsm_nightly", default=False):
        return True
    profile = config.getoption("hypothesis_profile", default=None)  # (hypothesis's option)
    chosen = profile if isinstance(profile, str) else os.environ.get("HYPOTHESIS_PROFILE", "")
    return chosen in NIGHTLY_PROFILES


def seeds_for(metafunc: pytest.Metafunc) -> list[int]:
    """The seeds a test taking ``sim_seed`` runs for."""
    given: list[int] = metafunc.config.getoption("agentfsm_seed", default=[]) or []
    if given:
        return list(given)
    marker = metafunc.definition.get_closest_marker("agentfsm_seeds")
    if marker is None:
        return list(range(5))
    seeds: Iterable[int] = marker.args[0] if marker.args else range(5)
    more: Iterable[int] = marker.kwargs.get("nightly", ())
    return [*seeds, *more] if nightly(metafunc.config) else list(seeds)


def generate(metafunc: pytest.Metafunc) -> None:
    """Parametrise a test taking ``sim_seed`` over its seeds."""
    if "sim_seed" in metafunc.fixturenames:
        metafunc.parametrize("sim_seed", seeds_for(metafunc), ids=lambda seed: f"seed{seed}")


def deselect_nightly(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the tests marked ``nightly`` unless the nightly profile is on.

    Deselected, not skipped: a CI run reports them as deselected, so a skip there always
    means something is missing.
    """
    if nightly(config):
        return
    kept = [item for item in items if item.get_closest_marker("nightly") is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(
            items=[item for item in items if item.get_closest_marker("nightly") is not None]
        )
        items[:] = kept
