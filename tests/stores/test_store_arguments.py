"""Every store refuses arguments of the wrong kind before it reads or writes anything."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentfsm import Agent, ScriptedModel
from agentfsm.stores import MemoryStore, RunStore, SQLiteStore
from agentfsm.stores.postgres import PostgresStore

Call = Callable[[RunStore, Any], object]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunStore]:
    """A store holding run ``r``: one finished turn (version 3, 4 events)."""
    opened: RunStore
    if request.param == "memory":
        opened = MemoryStore()
    elif request.param == "sqlite":
        opened = SQLiteStore(tmp_path / "runs.db")
    else:
        opened = PostgresStore(request.getfixturevalue("postgres_url"))
    agent = Agent(ScriptedModel(["Hi."]), run_id="r", store=opened)
    agent.start()
    agent.submit("Hello")
    yield opened
    opened.close()


def _next(store: RunStore) -> Any:
    snapshot = store.load("r")
    assert snapshot is not None
    return snapshot.model_copy(update={"version": snapshot.version + 1})


CASES: list[tuple[str, Call, type[Exception], str]] = [
    ("load-int", lambda s, _: s.load(5), TypeError, "run_id must be a string, not 5 (int)"),
    ("delete-none", lambda s, _: s.delete(None), TypeError, "run_id must be a string"),
    ("events-int", lambda s, _: s.events(5), TypeError, "run_id must be a string"),
    (
        "events-after-str",
        lambda s, _: s.events("r", after_seq="1"),
        TypeError,
        "after_seq must be an int (the seq the events come after), not '1' (str)",
    ),
    (
        "events-after-float",
        lambda s, _: s.events("r", after_seq=1.0),
        TypeError,
        "after_seq must be an int",
    ),
    (
        "save-dict",
        lambda s, snap: s.save(snap.model_dump(), [], expected_version=3),
        TypeError,
        "snapshot must be a Snapshot",
    ),
    (
        "save-event-dict",
        lambda s, snap: s.save(snap, [{"seq": 5}], expected_version=3),
        TypeError,
        "events[0] must be an Event, not {'seq': 5} (dict)",
    ),
    (
        "save-events-generator",
        lambda s, snap: s.save(snap, (e for e in ()), expected_version=3),
        TypeError,
        "events must be a list of the Events to append",
    ),
    (
        "save-version-str",
        lambda s, snap: s.save(snap, [], expected_version="3"),
        TypeError,
        "expected_version must be an int or None, not '3' (str)",
    ),
    (
        "save-version-bool",
        lambda s, snap: s.save(snap, [], expected_version=True),
        TypeError,
        "expected_version must be an int or None, not True (bool)",
    ),
]


@pytest.mark.parametrize(
    ("call", "error", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_bad_argument_is_refused_naming_it_and_nothing_changes(
    store: RunStore, call: Call, error: type[Exception], words: str
) -> None:
    before = (store.load("r"), store.events("r"), store.list_runs())
    with pytest.raises(error) as raised:
        call(store, _next(store))
    assert str(raised.value).startswith(words)
    assert (store.load("r"), store.events("r"), store.list_runs()) == before
