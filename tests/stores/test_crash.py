"""Real crashes: a child process is SIGKILLed at each boundary of a turn, another resumes it.

Every test runs on each durable store: a SQLite file, and a database of the tests' own
PostgreSQL server (the ``store_url`` fixture).

After each kill the database must hold a valid history (I7) that its own log replays to
(I10); after the resume the conversation must equal an uninterrupted run's, no completed
tool call may have run twice, and a non-idempotent call cut short runs at most once (I11).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from agentfsm import MemoryStore, Message, replay
from agentfsm.states import LoopState
from agentfsm.stores.urls import open_store
from agentfsm.testing import assert_history_valid
from tests.stores.crash_child import BOOK_NEVER_RAN, POINTS
from tests.stores.durable_support import agent

ROOT = Path(__file__).resolve().parents[2]
RUN_ID = "trip"


def child(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.stores.crash_child", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def uninterrupted() -> tuple[Message, ...]:
    the_agent = agent(MemoryStore(), RUN_ID)
    the_agent.start()
    the_agent.submit("Plan my trip")
    return the_agent.messages


def ran(log: Path) -> Counter[str]:
    return Counter(log.read_text().split()) if log.exists() else Counter()


@pytest.mark.parametrize("point", POINTS)
def test_a_run_killed_at_any_boundary_resumes_in_a_new_process(
    tmp_path: Path, store_url: str, point: str
) -> None:
    log = tmp_path / "effects.log"

    killed = child("run", store_url, str(log), RUN_ID, point)

    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with open_store(store_url) as store:
        stored = store.load(RUN_ID)
        assert stored is not None
        open_round = stored.loop_state in (LoopState.ACTING, LoopState.AWAITING_ACTION)
        assert_history_valid(stored.messages, open_round=open_round)
        replay(store.events(RUN_ID), expected=stored)
        before = ran(log)
        book_pending = "c2-t1" in stored.started  # (started, no answer stored)
        assert book_pending or point not in BOOK_NEVER_RAN
        if point == "after_book_start_save":  # book's start and weather:Paris's answer
            assert list(stored.started) == ["c2-t1"]  # (one transaction: the last one)
            assert [answer.result.call_id for answer in stored.answers] == ["c1-t1"]

    resumed = child("resume", store_url, str(log), RUN_ID)

    assert resumed.returncode == 0, resumed.stderr
    final = tuple(Message.model_validate(m) for m in json.loads(resumed.stdout))
    after = ran(log)
    with open_store(store_url) as store:
        stored = store.load(RUN_ID)
        assert stored is not None
        assert stored.state == "completed"
        assert stored.messages == final
        assert_history_valid(final)
        replay(store.events(RUN_ID), expected=stored)
    if point == "inside_book":
        # at-most-once: the booking ran once, and the model is told its outcome is unknown
        assert after["book:Rome"] == 1
        booked = next(m for m in final if m.role == "tool" and m.name == "book")
        assert "ToolOutcomeUnknown" in str(booked.content)
        assert "outcome is unknown" in str(final[-1].content)
        return
    expected = uninterrupted()
    if book_pending:
        # at-most-once: book's start was stored, its body never ran, and it never runs; the
        # call before it keeps its answer
        assert after["book:Rome"] == 0
        booked = next(m for m in final if m.role == "tool" and m.name == "book")
        assert "ToolOutcomeUnknown" in str(booked.content)
        assert final[:3] == expected[:3]  # (the user's input, the reply, weather:Paris)
        assert after == Counter({"weather:Paris": 1, "weather:Nice": 1})
        return
    assert final == expected
    # nothing that had finished ran again; only the idempotent call cut short did, and one
    # whose answer was lost with the save of book's start (I11: writing behind, an idempotent
    # call completed since the run last waited for the disk may run again)
    rerun = {"inside_tool": {"weather:Nice"}, "before_book_start_save": {"weather:Paris"}}.get(
        point, set()
    )
    for line, count in after.items():
        assert count == 1 + (line in rerun), (line, before, after)
    assert sum(after.values()) == 3 + len(rerun)


def test_of_two_processes_taking_up_one_paused_run_exactly_one_wins(
    tmp_path: Path, store_url: str
) -> None:
    log, go = tmp_path / "effects.log", tmp_path / "go"
    with open_store(store_url) as store:
        paused = agent(store, RUN_ID, log)
        paused.start()
        paused.pause()
    racers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.stores.crash_child",
                "race",
                store_url,
                str(log),
                RUN_ID,
                str(go),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        for racer in racers:  # both have loaded the paused run before either goes on
            assert racer.stdout is not None
            assert racer.stdout.readline().strip() == "restored paused"
        go.touch()
        results = sorted(racer.communicate(timeout=60)[0].strip() for racer in racers)
    finally:
        for racer in racers:
            racer.kill()
    assert results == ["conflict", "won completed"]
    assert ran(log) == Counter({"weather:Paris": 1, "book:Rome": 1, "weather:Nice": 1})
    with open_store(store_url) as store:  # nothing of the loser is stored: one history
        stored = store.load(RUN_ID)
        assert stored is not None
        assert stored.state == "completed"
        replay(store.events(RUN_ID), expected=stored)
        assert sum(m.role == "user" for m in stored.messages) == 1
