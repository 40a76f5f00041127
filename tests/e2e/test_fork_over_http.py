"""End to end: fork a run at an approval wait, edit the pending call, approve, complete.

The public API only (`Agent`, `OpenAIModel`, `SQLiteStore`, `agentfsm.stores.fork`), the
real ``openai`` client over HTTP against the loopback server, and a real SQLite file: the
fork makes no model call and runs no tool to rebuild the prefix, and the origin's stored
bytes stay as they were.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from agentfsm import Agent, OpenAIModel, SQLiteStore, ToolCall, tool
from agentfsm.stores import EditCall, fork, replay_run
from agentfsm.testing import LoopbackOpenAIServer, Reply

SENT: list[int] = []


@tool(policy="require_approval")
def transfer(amount: int) -> str:
    """Move money."""
    SENT.append(amount)
    return f"transferred {amount}"


def agent(server: LoopbackOpenAIServer, store: SQLiteStore, run_id: str) -> Agent:
    model = OpenAIModel("loopback-model", base_url=server.url, api_key="test-key", timeout=5.0)
    return Agent(model, [transfer], store=store, run_id=run_id, system_prompt="Be brief.")


def stored_rows(path: Path, run_id: str) -> list[Any]:
    with sqlite3.connect(path) as db:
        rows: list[Any] = []
        for table in ("runs", "events", "items"):
            query = (
                f"SELECT * FROM {table} WHERE run_no = "
                "(SELECT run_no FROM runs WHERE run_id = ?) ORDER BY 2"
            )
            rows += db.execute(query, (run_id,)).fetchall()
        return rows


def test_fork_at_an_approval_edit_the_call_approve_and_complete(tmp_path: Path) -> None:
    SENT.clear()
    path = tmp_path / "runs.db"
    call = ToolCall(id="call_1", name="transfer", arguments='{"amount": 100}')
    with LoopbackOpenAIServer() as server:
        server.add(Reply(tool_calls=(call,)))
        server.add(Reply("Sent 100."))
        with SQLiteStore(path) as store:
            origin = agent(server, store, "origin")
            origin.start()
            assert origin.submit("Send 100 to Ann").state == "requires_action"
            wait = store.load("origin")
            assert wait is not None
            assert origin.resolve_action({"call_1": "approve"}).reply == "Sent 100."
        before = stored_rows(path, "origin")
        asked = len(server.requests)

        with SQLiteStore(path) as store:  # as another process would
            forked = fork(store, "origin", at=wait.seq, edit=EditCall("call_1", {"amount": 50}))
        assert len(server.requests) == asked  # the prefix was rebuilt without a model call
        assert SENT == [100]

        server.add(Reply("Sent 50."))
        with SQLiteStore(path) as store:
            resumed = agent(server, store, forked.run_id)
            resumed.start()
            assert (resumed.state, [c.id for c in resumed.pending]) == (
                "requires_action",
                ["call_1"],
            )
            outcome = resumed.resolve_action({"call_1": "approve"})
            assert (outcome.state, outcome.reply) == ("completed", "Sent 50.")
            assert SENT == [100, 50]
            sent = server.requests[-1].messages
            assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]  # type: ignore[index]
            arguments = sent[2]["tool_calls"][0]["function"]["arguments"]  # type: ignore[index]
            assert json.loads(arguments) == {"amount": 50}
            assert replay_run(store, forked.run_id).messages == resumed.messages
            origin_now = store.load("origin")
            assert origin_now is not None
            assert origin_now.messages[-1].content == "Sent 100."

    assert stored_rows(path, "origin") == before
    assert len(server.requests) == asked + 1
