"""Shared test configuration: hypothesis profiles.

``ci`` (chosen when the CI environment variable is set) is derandomised, so a run on the same
code always tries the same examples; ``dev`` is the default; ``nightly`` digs deeper. Pick one
with ``HYPOTHESIS_PROFILE=nightly``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None)
settings.register_profile("nightly", max_examples=2_000, deadline=None)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
)
