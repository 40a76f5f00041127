"""A conformance suite any `RunStore` can run against itself.

Subclass `RunStoreConformance` in a test module, name the subclass ``Test…`` and implement
`RunStoreConformance.make_store`; pytest then runs every guarantee of the protocol against
your store::

    class TestMyStore(RunStoreConformance):
        def make_store(self, directory: Path) -> RunStore:
            return MyStore(directory / "runs")

Needs pytest and hypothesis (the ``testing`` extra).
"""

from __future__ import annotations

import itertools
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentfsm.errors import InvalidSaveError, SnapshotConflictError
from agentfsm.fsm.data import RunData
from agentfsm.fsm.trace import AnyTraceEntry, LLMCallTrace, LLMRetryTrace, UserInputTrace
from agentfsm.llm.base import Usage
from agentfsm.states.events import Event
from agentfsm.states.json import JSONValue
from agentfsm.states.messages import Message, ToolCall
from agentfsm.states.names import InputPolicy, MachineName, RunState
from agentfsm.stores.base import RunStore, RunSummary
from agentfsm.stores.snapshot import Snapshot
from agentfsm.testing.lease_conformance import LeaseConformance


def make_events(run_id: str, first_seq: int, count: int) -> list[Event]:
    """``count`` plausible events of ``run_id``, numbered from ``first_seq``."""
    return [
        Event(
            seq=seq,
            run_id=run_id,
            machine=MachineName.RUN,
            event="submit",
            source="ready",
            target="busy",
            at=1_700_000_000.0 + seq,
            data={"text": f"input {seq}"},
        )
        for seq in range(first_seq, first_seq + count)
    ]


def make_snapshot(run_id: str, seq: int, version: int, messages: int = 2) -> Snapshot:
    """A snapshot of a busy run with ``messages`` messages and a small trace."""
    conversation = [Message.system("be brief")]
    for number in range(1, messages):
        conversation.append(Message.user(f"question {number}"))
    data = RunData(run_id=run_id, state=RunState.BUSY, loop_state="thinking", turn=version)
    trace = [UserInputTrace(turn=version, text="question", at=1_700_000_000.0)]
    return Snapshot.from_data(data, conversation[:messages], trace, seq=seq, version=version)


# Hypothesis strategies for lossless round trips.
_text = st.text(max_size=20)
_finite = st.floats(allow_nan=False, allow_infinity=False)
_json: st.SearchStrategy[JSONValue] = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | _finite | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)
_calls = st.lists(
    st.builds(ToolCall, id=st.text(min_size=1, max_size=8), name=_text, arguments=_text),
    max_size=2,
    unique_by=lambda call: call.id,
).map(tuple)
_calls_nonempty = st.lists(
    st.builds(ToolCall, id=st.text(min_size=1, max_size=8), name=_text, arguments=_text),
    min_size=1,
    max_size=2,
    unique_by=lambda call: call.id,
).map(tuple)
_messages = st.one_of(
    st.builds(Message.system, _text),
    st.builds(Message.user, _text),
    st.builds(Message.assistant, st.none() | _text, _calls_nonempty),
    st.builds(Message.assistant, _text, st.just(())),
    st.builds(Message.tool, st.text(min_size=1, max_size=8), _text, st.none() | _text),
)
_counts = st.integers(0, 10**6)
_caps = st.integers(1, 10**6)  # a cap is at least 1 (RunData and Snapshot refuse 0)
_trace: st.SearchStrategy[AnyTraceEntry] = st.one_of(
    st.builds(UserInputTrace, turn=_counts, text=_text, at=_finite),
    st.builds(
        LLMCallTrace,
        model=_text,
        turn=_counts,
        iteration=_counts,
        duration=st.floats(0, 1e6),
        tool_call_count=_counts,
        finish_reason=_text,
        usage=st.none() | st.builds(Usage, prompt_tokens=_counts, completion_tokens=_counts),
        at=_finite,
    ),
    st.builds(
        LLMRetryTrace,
        model=_text,
        turn=_counts,
        iteration=_counts,
        attempt=_counts,
        error_type=_text,
        message=_text,
        status_code=st.none() | st.integers(100, 599),
        wait=st.floats(0, 1e6),
        at=_finite,
    ),
)
_data = st.builds(
    RunData,
    run_id=st.just("placeholder"),
    state=st.sampled_from(list(RunState)).map(str),
    loop_state=st.none() | _text,
    turn=_counts,
    iteration=_counts,
    max_iterations=_caps,
    max_turns=st.none() | _caps,
    input_policy=st.sampled_from(list(InputPolicy)),
    at_boundary=st.booleans(),
    pending=st.lists(_text, max_size=3).map(tuple),
    question=st.none() | _text,
    deadline=st.none() | _finite,
    paused_from=st.none() | _text,
    reason=st.none() | _text,
    queued=st.lists(_text, max_size=3).map(tuple),
    cancel_requested=st.booleans(),
    output_retries=st.none() | _counts,
    invalid_outputs=_counts,
)
_event_fields = st.tuples(
    st.sampled_from(list(MachineName)), _text, _text, _text, _finite, st.dictionaries(_text, _json)
)


class RunStoreConformance(LeaseConformance):
    """The guarantees of `RunStore`, as tests; subclass it with a ``Test…`` name.

    Implement `make_store`. The ``store`` fixture opens one store per test, in pytest's
    ``tmp_path``, and closes it afterwards. A store that keeps leases (`LeasingStore`) is
    checked for their guarantees too (`LeaseConformance`); for one that keeps none, those
    tests are skipped.
    """

    def make_store(self, directory: Path) -> RunStore:
        """A new, empty store whose files (if any) live under ``directory``."""
        raise NotImplementedError

    def reopen(self, store: RunStore, directory: Path) -> RunStore:
        """The store as another process would see it; the same store if not persistent."""
        return store

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[RunStore]:
        """One empty store, closed after the test."""
        with self.make_store(tmp_path) as store:
            yield store

    def test_save_then_load_returns_an_equal_snapshot(self, store: RunStore) -> None:
        """Save then load returns an equal snapshot."""
        snapshot = make_snapshot("r1", seq=2, version=1, messages=3)
        store.save(snapshot, make_events("r1", 1, 2), expected_version=None)
        loaded = store.load("r1")
        assert loaded == snapshot
        assert loaded.to_data() == snapshot.to_data()

    def test_load_of_an_unknown_run_is_none(self, store: RunStore) -> None:
        """Load of an unknown run is none."""
        assert store.load("nope") is None
        assert store.events("nope") == []

    def test_a_version_conflict_overwrites_nothing(self, store: RunStore) -> None:
        """A version conflict overwrites nothing."""
        first = make_snapshot("r1", seq=1, version=1)
        store.save(first, make_events("r1", 1, 1), expected_version=None)
        for expected in (None, 2, 0):
            with pytest.raises(SnapshotConflictError) as caught:
                store.save(
                    make_snapshot("r1", seq=2, version=9, messages=5),
                    make_events("r1", 2, 1),
                    expected_version=expected,
                )
            assert (caught.value.run_id, caught.value.expected) == ("r1", expected)
            assert caught.value.actual == 1
        assert store.load("r1") == first
        assert store.events("r1") == make_events("r1", 1, 1)

    def test_saving_an_unknown_run_with_a_version_conflicts(self, store: RunStore) -> None:
        """Saving an unknown run with a version conflicts."""
        with pytest.raises(SnapshotConflictError, match="none is stored"):
            store.save(make_snapshot("r1", 0, 2), [], expected_version=1)
        assert store.load("r1") is None

    def test_events_are_appended_in_order_across_saves(self, store: RunStore) -> None:
        """Events are appended in order across saves."""
        store.save(make_snapshot("r1", 2, 1), make_events("r1", 1, 2), expected_version=None)
        store.save(make_snapshot("r1", 2, 2), [], expected_version=1)
        store.save(make_snapshot("r1", 5, 3), make_events("r1", 3, 3), expected_version=2)
        assert store.events("r1") == make_events("r1", 1, 5)
        assert store.events("r1", after_seq=3) == make_events("r1", 4, 2)
        assert store.events("r1", after_seq=5) == []

    @pytest.mark.parametrize(
        ("first_seq", "count", "snapshot_seq", "version", "problem"),
        [
            (4, 1, 4, 2, "does not follow seq 2, expected 3"),
            (2, 1, 2, 2, "does not follow seq 2, expected 3"),
            (3, 1, 9, 2, "the snapshot has seq 9"),
            (3, 1, 3, 5, "the snapshot has version 5, expected 2"),
        ],
        ids=["gap", "repeat", "snapshot-seq", "snapshot-version"],
    )
    def test_a_save_that_does_not_continue_the_run_is_refused(
        self,
        store: RunStore,
        first_seq: int,
        count: int,
        snapshot_seq: int,
        version: int,
        problem: str,
    ) -> None:
        """A save that does not continue the run is refused."""
        first = make_snapshot("r1", 2, 1)
        store.save(first, make_events("r1", 1, 2), expected_version=None)
        with pytest.raises(InvalidSaveError, match=problem):
            store.save(
                make_snapshot("r1", snapshot_seq, version),
                make_events("r1", first_seq, count),
                expected_version=1,
            )
        assert store.load("r1") == first
        assert store.events("r1") == make_events("r1", 1, 2)

    def test_events_of_another_run_are_refused(self, store: RunStore) -> None:
        """Events of another run are refused."""
        with pytest.raises(InvalidSaveError, match="belongs to run 'r2'"):
            store.save(make_snapshot("r1", 1, 1), make_events("r2", 1, 1), expected_version=None)
        assert store.load("r1") is None
        assert store.events("r1") == []

    def test_list_and_delete(self, store: RunStore) -> None:
        """List and delete."""
        for run_id in ("b", "a", "c"):
            store.save(
                make_snapshot(run_id, 1, 1), make_events(run_id, 1, 1), expected_version=None
            )
        store.save(make_snapshot("a", 1, 2), [], expected_version=1)
        assert store.list_runs() == [
            RunSummary("a", "busy", 2, 1, 2),
            RunSummary("b", "busy", 1, 1, 1),
            RunSummary("c", "busy", 1, 1, 1),
        ]
        store.delete("b")
        store.delete("never-stored")
        assert [summary.run_id for summary in store.list_runs()] == ["a", "c"]
        assert store.load("b") is None
        assert store.events("b") == []
        store.save(make_snapshot("b", 1, 1), make_events("b", 1, 1), expected_version=None)
        assert store.load("b") == make_snapshot("b", 1, 1)

    def test_two_writers_with_the_same_version_exactly_one_wins(self, store: RunStore) -> None:
        """Two writers with the same version exactly one wins."""
        store.save(make_snapshot("r1", 1, 1), make_events("r1", 1, 1), expected_version=None)
        barrier = threading.Barrier(8)
        outcomes: list[str] = []

        def write(writer: int) -> None:
            candidate = make_snapshot("r1", 2, 2, messages=2 + writer)
            barrier.wait()
            try:
                store.save(candidate, make_events("r1", 2, 1), expected_version=1)
                outcomes.append(f"won {writer}")
            except SnapshotConflictError:
                outcomes.append("lost")

        threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        winners = [outcome for outcome in outcomes if outcome != "lost"]
        assert len(winners) == 1
        assert len(outcomes) == 8
        winner = int(winners[0].split()[1])
        assert store.load("r1") == make_snapshot("r1", 2, 2, messages=2 + winner)
        assert store.events("r1") == make_events("r1", 1, 2)

    def test_a_reopened_store_sees_every_save(self, tmp_path: Path) -> None:
        """A reopened store sees every save."""
        store = self.make_store(tmp_path)
        try:
            store.save(make_snapshot("r1", 2, 1), make_events("r1", 1, 2), expected_version=None)
            store.save(make_snapshot("r1", 3, 2), make_events("r1", 3, 1), expected_version=1)
            again = self.reopen(store, tmp_path)
            try:
                assert again.load("r1") == make_snapshot("r1", 3, 2)
                assert again.events("r1") == make_events("r1", 1, 3)
            finally:
                if again is not store:
                    again.close()
        finally:
            store.close()

    def test_a_store_is_a_context_manager_and_closes_twice(self, tmp_path: Path) -> None:
        """A store is a context manager and closes twice."""
        with self.make_store(tmp_path) as store:
            store.save(make_snapshot("r1", 0, 1), [], expected_version=None)
        store.close()

    # Every subclass runs this one inherited method with its own store: that is the point
    # of the suite, not the nondeterminism the differing_executors check looks for.
    @settings(max_examples=40, suppress_health_check=[HealthCheck.differing_executors])
    @given(
        data=_data,
        messages=st.lists(_messages, max_size=4),
        trace=st.lists(_trace, max_size=3),
        batches=st.lists(st.lists(_event_fields, max_size=3), min_size=1, max_size=3),
    )
    def test_random_snapshots_and_events_round_trip(
        self,
        data: RunData,
        messages: list[Message],
        trace: list[AnyTraceEntry],
        batches: list[list[tuple[MachineName, str, str, str, float, dict[str, JSONValue]]]],
    ) -> None:
        """Random snapshots and events round trip."""
        with tempfile.TemporaryDirectory() as directory, self.make_store(Path(directory)) as store:
            _round_trip(store, data, messages, trace, batches)


_run_ids = itertools.count()


def _round_trip(
    store: RunStore,
    data: RunData,
    messages: Sequence[Message],
    trace: Sequence[AnyTraceEntry],
    batches: list[list[tuple[MachineName, str, str, str, float, dict[str, JSONValue]]]],
) -> None:
    data.run_id = f"run-{next(_run_ids)}"
    saved: list[Event] = []
    version: int | None = None
    for batch in batches:
        events = [
            Event(
                seq=len(saved) + n,
                run_id=data.run_id,
                machine=m,
                event=e,
                source=s,
                target=t,
                at=at,
                data=args,
            )
            for n, (m, e, s, t, at, args) in enumerate(batch, start=1)
        ]
        snapshot = Snapshot.from_data(
            data, messages, trace, seq=len(saved) + len(events), version=(version or 0) + 1
        )
        store.save(snapshot, events, expected_version=version)
        saved.extend(events)
        version = snapshot.version
        assert store.load(data.run_id) == snapshot
        assert Snapshot.model_validate_json(snapshot.model_dump_json()) == snapshot
    assert store.events(data.run_id) == saved
    loaded = store.load(data.run_id)
    assert loaded is not None
    assert loaded.to_data() == data
