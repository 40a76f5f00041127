"""The lease guarantees of a `LeasingStore`, as tests (part of `RunStoreConformance`).

Every store that keeps leases (`agentfsm.stores.base.leasing`) is checked the same way; a
store that keeps none skips them. Time is a fake clock throughout: no test sleeps.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentfsm.errors import RunBusyError, SnapshotConflictError
from agentfsm.fsm.data import RunData
from agentfsm.states.names import RunState
from agentfsm.stores.base import LeasingStore, RunStore, leasing
from agentfsm.stores.leases import Hold, Lease
from agentfsm.stores.snapshot import Snapshot
from agentfsm.testing.clock import FakeClock

DURATION = 10.0
"""The leases' duration in these tests (seconds of the fake clock)."""


def at_state(run_id: str, state: RunState, version: int) -> Snapshot:
    """A snapshot of ``run_id`` in ``state`` (busy: thinking) with no events, at ``version``."""
    data = RunData(
        run_id=run_id,
        state=state,
        loop_state="thinking" if state == RunState.BUSY else None,
    )
    return Snapshot.from_data(data, [], [], seq=0, version=version)


class LeaseConformance:
    """The lease guarantees (`LeasingStore`); mixed into `RunStoreConformance`."""

    def make_store(self, directory: Path) -> RunStore:
        """A new, empty store (`RunStoreConformance.make_store`)."""
        raise NotImplementedError  # (RunStoreConformance's subclass's)

    @pytest.fixture
    def leases(self, tmp_path: Path) -> Iterator[LeasingStore]:
        """One empty store that keeps leases (the test is skipped for one that keeps none)."""
        with self.make_store(tmp_path) as store:
            found = leasing(store)
            if found is None:
                pytest.skip("this store keeps no leases")
            yield found

    def test_a_busy_save_through_a_hold_takes_the_lease_and_one_at_rest_clears_it(
        self, leases: LeasingStore
    ) -> None:
        """A busy save through a hold takes the lease; a save at rest clears it."""
        clock = FakeClock(1000.0)
        hold = Hold("a", DURATION, 1.0, clock)
        leases.save(at_state("r1", RunState.READY, 1), [], expected_version=None)
        assert leases.lease("r1") is None
        leases.hold("r1", hold)
        try:
            leases.save(at_state("r1", RunState.BUSY, 2), [], expected_version=1)
            assert leases.lease("r1") == Lease("r1", "a", 1000.0 + DURATION)
            clock.advance(3)  # every save of the busy run renews it
            leases.save(at_state("r1", RunState.BUSY, 3), [], expected_version=2)
            assert leases.lease("r1") == Lease("r1", "a", 1003.0 + DURATION)
            leases.save(at_state("r1", RunState.COMPLETED, 4), [], expected_version=3)
            assert leases.lease("r1") is None
        finally:
            leases.unhold("r1", hold)

    def test_another_owner_is_refused_while_the_lease_is_live_and_takes_it_over_after(
        self, leases: LeasingStore, tmp_path: Path
    ) -> None:
        """Another owner is refused while the lease is live, then takes an expired one over."""
        clock = FakeClock(1000.0)
        first, second = Hold("a", DURATION, 1.0, clock), Hold("b", DURATION, 1.0, clock)
        leases.hold("r1", first)
        leases.save(at_state("r1", RunState.BUSY, 1), [], expected_version=None)
        leases.unhold("r1", first)  # (as if its process stopped renewing)
        leases.hold("r1", second)
        try:
            before = leases.load("r1")
            clock.advance(DURATION - 0.5)
            with pytest.raises(RunBusyError) as refused:
                leases.save(at_state("r1", RunState.BUSY, 2), [], expected_version=1)
            assert (refused.value.run_id, refused.value.owner) == ("r1", "a")
            assert refused.value.expires_at == 1000.0 + DURATION
            assert leases.load("r1") == before  # nothing was written
            assert leases.lease("r1") == Lease("r1", "a", 1000.0 + DURATION)
            clock.advance(0.5)  # expired: taken over
            leases.save(at_state("r1", RunState.BUSY, 2), [], expected_version=1)
            assert leases.lease("r1") == Lease("r1", "b", clock() + DURATION)
        finally:
            leases.unhold("r1", second)

    def test_a_save_without_a_hold_is_refused_while_any_lease_is_live(
        self, leases: LeasingStore
    ) -> None:
        """A save without a hold is refused while any lease is live (judged by the real time)."""
        far = Hold("a", 1e9, 1.0, FakeClock())  # (a lease that lasts past the real time)
        leases.hold("r1", far)
        leases.save(at_state("r1", RunState.BUSY, 1), [], expected_version=None)
        leases.unhold("r1", far)
        with pytest.raises(RunBusyError):
            leases.save(at_state("r1", RunState.READY, 2), [], expected_version=1)
        assert leases.lease("r1") is not None

    def test_a_lease_is_refused_before_the_version_is_checked(self, leases: LeasingStore) -> None:
        """A stale save of a run another owner drives hears who drives it (RunBusyError)."""
        clock = FakeClock(1000.0)
        first, second = Hold("a", DURATION, 1.0, clock), Hold("b", DURATION, 1.0, clock)
        leases.save(at_state("r1", RunState.READY, 1), [], expected_version=None)
        leases.hold("r1", first)
        leases.save(at_state("r1", RunState.BUSY, 2), [], expected_version=1)
        leases.unhold("r1", first)
        leases.hold("r1", second)
        try:
            with pytest.raises(RunBusyError):
                leases.save(at_state("r1", RunState.BUSY, 2), [], expected_version=1)
            clock.advance(DURATION)  # expired: the stale save is then a plain conflict
            with pytest.raises(SnapshotConflictError):
                leases.save(at_state("r1", RunState.BUSY, 2), [], expected_version=1)
        finally:
            leases.unhold("r1", second)

    def test_renewing_extends_only_the_owners_own_lease(self, leases: LeasingStore) -> None:
        """``renew_lease`` extends only its owner's lease, and creates none."""
        clock = FakeClock(1000.0)
        hold = Hold("a", DURATION, 1.0, clock)
        leases.save(at_state("r1", RunState.READY, 1), [], expected_version=None)
        assert leases.renew_lease("r1", "a", 2000.0) is None  # no lease: none is made
        assert leases.lease("r1") is None
        assert leases.renew_lease("nowhere", "a", 2000.0) is None
        leases.hold("r1", hold)
        try:
            leases.save(at_state("r1", RunState.BUSY, 2), [], expected_version=1)
        finally:
            leases.unhold("r1", hold)
        assert leases.renew_lease("r1", "b", 5000.0) == Lease("r1", "a", 1010.0)
        assert leases.renew_lease("r1", "a", 1500.0) == Lease("r1", "a", 1500.0)
        assert leases.lease("r1") == Lease("r1", "a", 1500.0)

    def test_delete_removes_the_lease(self, leases: LeasingStore) -> None:
        """Deleting a run removes its lease."""
        hold = Hold("a", 1e9, 1.0, FakeClock())
        leases.hold("r1", hold)
        leases.save(at_state("r1", RunState.BUSY, 1), [], expected_version=None)
        leases.unhold("r1", hold)
        leases.delete("r1")
        assert leases.lease("r1") is None
        leases.save(at_state("r1", RunState.READY, 1), [], expected_version=None)

    def test_two_holds_of_one_store_object_do_not_share_a_run(self, leases: LeasingStore) -> None:
        """Through one store object, a second owner's hold is refused while the first's lives."""
        clock = FakeClock(1000.0)
        first, second = Hold("a", DURATION, 1.0, clock), Hold("b", DURATION, 1.0, clock)
        leases.hold("r1", first)
        try:
            with pytest.raises(RunBusyError):
                leases.hold("r1", second)
            clock.advance(DURATION)  # the first stalled past its lease: replaced
            leases.hold("r1", second)
            leases.unhold("r1", first)  # (not its hold any more: nothing happens)
            leases.save(at_state("r1", RunState.BUSY, 1), [], expected_version=None)
            assert leases.lease("r1") == Lease("r1", "b", clock() + DURATION)
        finally:
            leases.unhold("r1", second)

    # Two owners, random saves and clock steps: never two live leases, and a takeover only
    # of an expired lease (each subclass runs this with its own store).
    @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        steps=st.lists(
            st.tuples(
                st.sampled_from(["a", "b"]),
                st.sampled_from([RunState.BUSY, RunState.BUSY, RunState.READY]),
                st.sampled_from([0.0, 1.0, 4.0, DURATION]),
            ),
            min_size=1,
            max_size=12,
        )
    )
    def test_two_owners_never_both_hold_a_live_lease(
        self, steps: list[tuple[str, RunState, float]]
    ) -> None:
        """Two owners never both hold a live lease; a takeover only after expiry."""
        with tempfile.TemporaryDirectory() as directory, self.make_store(Path(directory)) as made:
            store = leasing(made)
            if store is not None:
                _two_owners(store, steps)


_runs = itertools.count()


def _two_owners(store: LeasingStore, steps: list[tuple[str, RunState, float]]) -> None:
    clock = FakeClock(1000.0)
    run_id = f"lease-{next(_runs)}"
    holds = {owner: Hold(owner, DURATION, 1.0, clock) for owner in ("a", "b")}
    version = 0
    for owner, state, step in steps:
        clock.advance(step)
        before = store.lease(run_id)
        store.hold(run_id, holds[owner])
        try:
            store.save(at_state(run_id, state, version + 1), [], expected_version=version or None)
        except RunBusyError as refused:
            # refused only for another owner's live lease, which stays as it was
            assert before is not None
            assert before.owner != owner
            assert before.live(clock())
            named = (refused.owner, refused.expires_at)
            assert named == (before.owner, before.expires_at)
            assert store.lease(run_id) == before
            continue
        finally:
            store.unhold(run_id, holds[owner])
        version += 1
        after = store.lease(run_id)
        if before is not None and before.owner != owner:
            assert not before.live(clock())  # a takeover only of an expired lease
        if state == RunState.BUSY:
            assert after == Lease(run_id, owner, clock() + DURATION)
        else:
            assert after is None
