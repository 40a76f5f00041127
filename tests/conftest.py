"""Shared test configuration: hypothesis profiles, those of the testing kit.

``ci`` (chosen when the CI environment variable is set) is derandomised, so a run on the same
code always tries the same examples; ``dev`` is the default; ``nightly`` digs deeper. Pick one
with ``HYPOTHESIS_PROFILE=nightly``. They are the kit's ``agentfsm-ci``, ``agentfsm-dev``
and ``agentfsm-nightly`` (agentfsm.testing.profiles) under short names.
"""

from __future__ import annotations

from hypothesis import settings

from agentfsm.testing.profiles import (
    CI_PROFILE,
    DEV_PROFILE,
    NIGHTLY_PROFILE,
    load_profile_from_environment,
    register_profiles,
)

register_profiles()
for alias, profile in (("ci", CI_PROFILE), ("dev", DEV_PROFILE), ("nightly", NIGHTLY_PROFILE)):
    settings.register_profile(alias, parent=settings.get_profile(profile))
load_profile_from_environment()
