"""The kit's profiles, its pytest plugin, and what importing agentfsm pulls in."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import settings

import agentfsm.testing
from agentfsm import ScriptedModel
from agentfsm.testing import (
    CI_PROFILE,
    DEV_PROFILE,
    NIGHTLY_PROFILE,
    FakeClock,
    register_profiles,
)
from agentfsm.testing.profiles import profile_from_environment


def test_the_ci_profile_is_derandomised_and_the_nightly_one_digs_deeper() -> None:
    register_profiles()
    ci, nightly = settings.get_profile(CI_PROFILE), settings.get_profile(NIGHTLY_PROFILE)
    assert ci.derandomize
    assert ci.deadline is None
    assert not nightly.derandomize
    assert nightly.max_examples >= 20 * ci.max_examples
    assert nightly.stateful_step_count > ci.stateful_step_count


@pytest.mark.parametrize(
    ("environ", "profile"),
    [
        ({}, DEV_PROFILE),
        ({"CI": "true"}, CI_PROFILE),
        ({"CI": "true", "HYPOTHESIS_PROFILE": NIGHTLY_PROFILE}, NIGHTLY_PROFILE),
        ({"HYPOTHESIS_PROFILE": "nightly"}, "nightly"),
    ],
    ids=["default", "ci", "chosen-over-ci", "short-name"],
)
def test_the_profile_comes_from_the_environment(environ: dict[str, str], profile: str) -> None:
    assert profile_from_environment(environ) == profile


def test_the_plugin_provides_a_fresh_scripted_model(scripted_model: ScriptedModel) -> None:
    assert isinstance(scripted_model, ScriptedModel)
    assert scripted_model.remaining == 0


def test_the_plugin_provides_a_fake_clock(fake_clock: FakeClock) -> None:
    start = fake_clock()
    fake_clock.advance(60)
    assert fake_clock() == start + 60


def test_the_kits_names_are_all_importable_and_listed_in_order() -> None:
    names = agentfsm.testing.__all__
    assert names == sorted(names, key=lambda name: (not name.isupper(), name))
    for name in names:
        assert getattr(agentfsm.testing, name) is not None
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = agentfsm.testing.no_such_name


@pytest.mark.parametrize("module", ["agentfsm", "agentfsm.testing"])
def test_importing_needs_neither_hypothesis_nor_pytest(module: str) -> None:
    code = (
        f"import sys, {module}; "
        "loaded = {'hypothesis', 'pytest'} & set(sys.modules); "
        "assert not loaded, loaded"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
