"""A pause between two tool calls survives a restart; a cancel there answers the rest."""

from __future__ import annotations

from pathlib import Path

from agentfsm import Agent, SQLiteStore
from agentfsm.stores.exact_replay import replay
from agentfsm.testing import assert_history_valid
from tests.stores.durable_support import agent

RUN_ID = "mid-round"


def _asking(request: str, holder: list[Agent]) -> object:
    def on_run(line: str) -> None:
        if line == "weather:Paris":
            assert getattr(holder[0], request)().state == "busy"  # taken after this call

    return on_run


def test_a_pause_between_tool_calls_resumes_in_another_process(tmp_path: Path) -> None:
    db, log = tmp_path / "runs.db", tmp_path / "side-effects.log"
    holder: list[Agent] = []
    with SQLiteStore(db) as store:
        first = agent(store, RUN_ID, log, _asking("pause", holder))  # type: ignore[arg-type]
        holder.append(first)
        first.start()
        assert first.submit("Plan my trip").state == "paused"
        assert log.read_text().splitlines() == ["weather:Paris"]
        assert_history_valid(first.messages, open_round=True)
        replay(store.events(RUN_ID), store.load(RUN_ID))  # I10 holds mid-round
    with SQLiteStore(db) as store:
        again = agent(store, RUN_ID, log)
        again.start()
        assert again.state == "paused"
        outcome = again.resume()
        assert (outcome.state, outcome.reason) == ("completed", "answered")
    assert log.read_text().splitlines() == ["weather:Paris", "book:Rome", "weather:Nice"]
    tools = [m for m in again.messages if m.role == "tool"]
    assert [m.tool_call_id for m in tools] == ["c1-t1", "c2-t1", "c3-t1"]
    assert_history_valid(again.messages)


def test_a_cancel_between_tool_calls_answers_the_rest_cancelled(tmp_path: Path) -> None:
    db, log = tmp_path / "runs.db", tmp_path / "side-effects.log"
    holder: list[Agent] = []
    with SQLiteStore(db) as store:
        first = agent(store, RUN_ID, log, _asking("cancel", holder))  # type: ignore[arg-type]
        holder.append(first)
        first.start()
        outcome = first.submit("Plan my trip")
        assert (outcome.state, outcome.reason) == ("failed", "cancelled")
        stored = store.load(RUN_ID)
        assert stored is not None
        assert stored.messages == first.messages
        replay(store.events(RUN_ID), stored)
    assert log.read_text().splitlines() == ["weather:Paris"]
    tools = [m for m in first.messages if m.role == "tool"]
    assert [m.tool_call_id for m in tools] == ["c1-t1", "c2-t1", "c3-t1"]
    assert all("cancelled" in str(m.content) for m in tools[1:])
    assert [t.call_id for t in first.trace if t.kind == "tool_execution"] == ["c1-t1"]
    assert_history_valid(first.messages)
