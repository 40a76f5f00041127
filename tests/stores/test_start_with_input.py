"""`start(text)` on a durable store: the start and the input in one transaction.

Counted on SQLite (FULL): one transaction fewer and one fsync fewer per run than
``start()`` then ``submit(text)``, the run and its log otherwise the same; SIGKILLed in that
save nothing is stored, right after it the run is busy with its input and resumes.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentfsm import Agent, Event, MemoryStore, ScriptedModel, SQLiteStore, replay, tool
from agentfsm.errors import IllegalTransitionError
from agentfsm.llm.base import ModelResponse
from agentfsm.states import LoopState, Message, RunState
from agentfsm.states.json import JSONObject
from agentfsm.stores import RunStore, Snapshot
from agentfsm.stores.base import DelegatingStore
from agentfsm.testing import assert_history_valid
from tests.stores.crash_child import FIRST_POINTS
from tests.stores.durable_support import agent
from tests.stores.test_crash import child
from tests.stores.test_sqlite_save_many import Traced

RUN_ID = "trip"


class Batches(DelegatingStore):
    """Records the events of each save, in order."""

    def __init__(self, inner: RunStore) -> None:
        super().__init__(inner)
        self.batches: list[list[str]] = []

    def save(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        super().save(snapshot, events, expected_version=expected_version)
        self.batches.append([str(event.event) for event in events])


class Awaited(DelegatingStore):
    """A SQLite store seen through a plain `RunStore`, so not written behind.

    Each save is awaited where the run makes it: the commits are the same on every run.
    """


def durable_run(
    path: Path, one_call: bool, *, behind: bool
) -> tuple[list[str], list[Event], Snapshot]:
    """The durable test agent's turn on SQLite (FULL): the commits' levels, log and run."""
    with Traced(path) as traced:
        store: RunStore = traced if behind else Awaited(traced)
        the_agent = agent(store, RUN_ID, path.with_suffix(".log"))
        if one_call:
            the_agent.start("Plan my trip")
        else:
            the_agent.start()
            the_agent.submit("Plan my trip")
        stored = traced.load(RUN_ID)
        assert stored is not None
        return traced.commits(), traced.events(RUN_ID), stored


@pytest.mark.parametrize("behind", [False, True])
def test_one_transaction_and_one_fsync_fewer_than_start_then_submit(
    tmp_path: Path, behind: bool
) -> None:
    two_commits, two_log, two_run = durable_run(tmp_path / "two.db", False, behind=behind)
    one_commits, one_log, one_run = durable_run(tmp_path / "one.db", True, behind=behind)
    assert len(one_commits) == len(two_commits) - 1  # one transaction fewer
    if behind:
        # the start's save and the input's, each awaited (fsynced) on its own; then one
        # (how the later saves share fsyncs depends on the worker's timing)
        assert two_commits[:2] == ["FULL", "FULL"]
        assert one_commits[0] == "FULL"
    else:
        assert one_commits.count("FULL") == two_commits.count("FULL") - 1  # one fsync fewer
        assert (len(two_commits), len(one_commits)) == (7, 6)  # all FULL: 7 fsyncs → 6

    def shape(log: list[Event]) -> list[tuple[object, ...]]:  # (durations are real ones)
        return [(e.seq, e.machine, e.event, e.source, e.target) for e in log]

    assert shape(one_log) == shape(two_log)
    assert one_run.state == RunState.COMPLETED
    assert one_run.messages == two_run.messages
    assert one_run.version == two_run.version - 1
    replay(one_log, expected=one_run)


@pytest.mark.parametrize("inner", ["sqlite", "memory"])
def test_the_first_save_holds_the_start_and_the_input_before_the_model_is_called(
    tmp_path: Path, inner: str
) -> None:
    base: RunStore = SQLiteStore(tmp_path / "runs.db") if inner == "sqlite" else MemoryStore()
    store = Batches(base)
    at_model_call: list[list[list[str]]] = []

    def respond(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
        at_model_call.append([list(batch) for batch in store.batches])
        return ModelResponse(content="hello")

    the_agent = Agent(ScriptedModel(fallback=respond), store=store, run_id=RUN_ID)
    assert the_agent.start("hi").reply == "hello"
    assert at_model_call == [[["start", "submit"]]]  # one save, awaited before the call
    base.close()


def test_a_restored_ready_run_takes_text_and_a_completed_one_refuses_it_unclaimed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as store:
        first = agent(store, RUN_ID)
        first.start()
        first.pause()
        first.resume()  # (ready again, in another transaction)
        stored = store.load(RUN_ID)
        assert stored is not None
        assert stored.state == RunState.READY
    with SQLiteStore(path) as store:  # a new process: the run is taken up with its input
        ready = agent(store, RUN_ID)
        assert ready.start("Plan my trip").state == RunState.COMPLETED
        again = agent(store, RUN_ID)
        completed = store.load(RUN_ID)
        with pytest.raises(IllegalTransitionError, match="only where start"):
            again.start("more")
        assert store.load(RUN_ID) == completed  # not even claimed


@pytest.mark.parametrize("point", FIRST_POINTS)
def test_start_with_text_killed_at_its_save_stores_all_or_nothing(
    tmp_path: Path, point: str
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    log = tmp_path / "effects.log"

    killed = child("first", url, str(log), RUN_ID, point)

    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with SQLiteStore(tmp_path / "runs.db") as store:
        stored = store.load(RUN_ID)
        if point == "before_first_save":
            assert stored is None
            assert store.events(RUN_ID) == []
            assert store.list_runs() == []
            return
        assert stored is not None
        assert stored.state == RunState.BUSY
        assert stored.loop_state == LoopState.THINKING
        assert [m.content for m in stored.messages] == ["Plan my trip"]
        assert [e.event for e in store.events(RUN_ID)][:2] == ["start", "submit"]
        replay(store.events(RUN_ID), expected=stored)
        with pytest.raises(IllegalTransitionError, match="only where start"):
            agent(store, RUN_ID, log).start("Plan my trip")  # busy: text refused
    resumed = child("resume", url, str(log), RUN_ID)
    assert resumed.returncode == 0, resumed.stderr
    with SQLiteStore(tmp_path / "runs.db") as store:
        final = store.load(RUN_ID)
        assert final is not None
        assert final.state == RunState.COMPLETED
        assert_history_valid(final.messages)
        replay(store.events(RUN_ID), expected=final)
        uninterrupted = agent(MemoryStore(), RUN_ID)
        uninterrupted.start("Plan my trip")
        assert final.messages == uninterrupted.messages


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


def test_end_to_end_through_the_public_api_on_a_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    seen: list[object] = []
    with SQLiteStore(path) as store:
        model = ScriptedModel().tool_call("weather", city="Oslo").text("Sunny in Oslo.")
        the_agent = Agent(model, [weather], store=store, run_id="run-7", listeners=[seen.append])
        outcome = the_agent.start("Weather in Oslo?")
        assert (outcome.state, outcome.reply) == ("completed", "Sunny in Oslo.")
    with SQLiteStore(path) as store:  # reopened: the run is on disk, whole
        stored = store.load("run-7")
        assert stored is not None
        assert stored.state == "completed"
        assert [m.role for m in stored.messages] == ["user", "assistant", "tool", "assistant"]
        events = store.events("run-7")
        assert [e.event for e in events][:2] == ["start", "submit"]
        assert [e for e in seen if isinstance(e, Event)] == events
        replay(events, expected=stored)
        restored = Agent(ScriptedModel(), [weather], store=store, run_id="run-7")
        assert restored.messages == stored.messages
