"""Shared test configuration: hypothesis profiles, and a PostgreSQL server of the tests' own.

``ci`` (chosen when the CI environment variable is set) is derandomised, so a run on the same
code always tries the same examples; ``dev`` is the default; ``nightly`` digs deeper. Pick one
with ``HYPOTHESIS_PROFILE=nightly``. They are the kit's ``agentfsm-ci``, ``agentfsm-dev``
and ``agentfsm-nightly`` (agentfsm.testing.profiles) under short names.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import settings

from agentfsm.testing.postgres_server import TemporaryPostgres
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


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[TemporaryPostgres]:
    """One throwaway PostgreSQL server for the whole session.

    Never skipped: `make test` installs the server when it is missing
    (scripts/ensure-postgres.sh).
    """
    with TemporaryPostgres() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: TemporaryPostgres) -> str:
    """The URL of a fresh, empty database on the session's server."""
    return postgres_server.new_database()
