"""Hypothesis profiles for property tests of agents: one for CI, one for nightly runs.

`register_profiles` registers them under the names below; pick one with hypothesis's own
``--hypothesis-profile`` pytest option or ``settings.load_profile(...)``. The pytest plugin
(installed with agentfsm) registers them when pytest starts, so ::

    HYPOTHESIS_PROFILE=agentfsm-nightly pytest   # with load_profile_from_environment()
    pytest --hypothesis-profile=agentfsm-ci

both work. Needs hypothesis (the ``testing`` extra).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from hypothesis import HealthCheck, Phase, settings

CI_PROFILE = "agentfsm-ci"
"""Derandomised: a run on the same code always tries the same examples, so CI is stable;
no deadline (a shared CI machine's timings are noise), and a failure prints its blob."""
DEV_PROFILE = "agentfsm-dev"
"""Hypothesis's defaults, without the deadline: for working on a laptop."""
NIGHTLY_PROFILE = "agentfsm-nightly"
"""Twenty times the examples and longer runs of steps, randomised: for a nightly job."""

PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink)
"""Every phase but ``explain``: on a failing state machine test whose rules draw data, the
explain phase re-runs the whole machine for each draw and can take minutes; the shrunk
failing example it would annotate is printed all the same."""


def register_profiles() -> None:
    """Register `CI_PROFILE`, `DEV_PROFILE` and `NIGHTLY_PROFILE` (harmless to repeat).

    Each is hypothesis's defaults plus its own settings, whichever profile is loaded now.
    """
    default = settings.get_profile("default")
    settings.register_profile(
        CI_PROFILE,
        parent=default,
        derandomize=True,
        deadline=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
        phases=PHASES,
    )
    settings.register_profile(DEV_PROFILE, parent=default, deadline=None, phases=PHASES)
    settings.register_profile(
        NIGHTLY_PROFILE,
        parent=default,
        max_examples=2_000,
        stateful_step_count=100,
        deadline=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
        phases=PHASES,
    )


def profile_from_environment(environ: Mapping[str, str] | None = None) -> str:
    """The profile to load: ``HYPOTHESIS_PROFILE`` if set, else CI's when ``CI`` is set.

    Args:
        environ: The environment to read (`os.environ` by default).
    """
    env = os.environ if environ is None else environ
    return env.get("HYPOTHESIS_PROFILE") or (CI_PROFILE if env.get("CI") else DEV_PROFILE)


def load_profile_from_environment(environ: Mapping[str, str] | None = None) -> str:
    """Register the profiles, load the one `profile_from_environment` names, and return it."""
    register_profiles()
    name = profile_from_environment(environ)
    settings.load_profile(name)
    return name
