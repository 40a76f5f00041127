"""The web view reads a run store on a place nothing can write.

A read-only mount or an immutable folder: what a reviewer is handed, a copy of
production's file on a read-only volume.
"""

from __future__ import annotations

from pathlib import Path

from agentfsm.serve import open_read_only
from agentfsm.testing.store_conformance import make_events, make_snapshot
from tests.stores.test_sqlite_foreign import read_only_place, state_of

__all__ = ["read_only_place"]  # (the fixture, found by pytest where it is imported)


def test_the_web_view_reads_a_store_on_a_read_only_place_leaving_it_as_it_was(
    read_only_place: Path,
) -> None:
    before = state_of(read_only_place)

    with open_read_only(read_only_place / "runs.db") as store:
        assert store.load("r1") == make_snapshot("r1", 2, 1)
        assert store.events("r1") == make_events("r1", 1, 2)
        assert [run.run_id for run in store.list_runs()] == ["r1"]

    assert state_of(read_only_place) == before
