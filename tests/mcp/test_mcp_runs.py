"""An Agent given MCP servers: listings recorded, changes between rounds, a tool that asks.

Every run here is on a real SQLite file; each test checks the log replays to the stored run
(I10) and is a legal path of the machines.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import types

from agentfsm import Agent, ScriptedModel
from agentfsm.errors import MCPConnectionError, MCPServerError
from agentfsm.states.events import Event
from agentfsm.states.names import MachineName, RecordKind
from agentfsm.stores import SQLiteStore, replay
from agentfsm.tools.mcp import MCPServer
from agentfsm.verify import check_log
from tests.agent.agent_support import assert_history_valid
from tests.mcp.servers import declared, raw, toolbox


def listed(events: list[Event]) -> list[tuple[str, list[str]]]:
    """The ``tools_listed`` records of a log: (server, tool names)."""
    return [
        (str(e.data["server"]), [t["name"] for t in e.data["tools"]])  # type: ignore[index,union-attr]
        for e in events
        if e.machine == MachineName.CONVERSATION and e.event == RecordKind.TOOLS_LISTED
    ]


def assert_replays(store: SQLiteStore, run_id: str) -> list[Event]:
    events = list(store.events(run_id))
    stored = store.load(run_id)
    assert stored is not None
    rebuilt = replay(events, stored)
    assert (rebuilt.tool_lists, rebuilt.inputs) == (stored.tool_lists, stored.inputs)
    assert check_log(events).ok
    return events


def test_the_listing_is_recorded_when_each_turn_starts_and_follows_the_server(
    tmp_path: Path,
) -> None:
    tools = [declared("first")]
    server = MCPServer("raw", raw(tools), policies={"first": "allow"})
    model = ScriptedModel().text("one").tool_call("raw__first", n=2).text("two")
    store = SQLiteStore(tmp_path / "runs.db")
    agent = Agent(model, store=store, mcp_servers=[server], run_id="r")
    agent.start()

    agent.submit("turn one")
    offered_first = [n for n in agent.tools.registry.names if n.startswith("raw__")]
    tools.append(declared("second"))  # the server's list changes between the turns
    done = agent.submit("turn two")

    assert offered_first == ["raw__first"]
    assert [n for n in agent.tools.registry.names if n.startswith("raw__")] == [
        "raw__first",
        "raw__second",
    ]
    assert done.state == "completed"
    assert [m.content for m in agent.messages if m.role == "tool"] == [""]  # ran: no content
    events = assert_replays(store, "r")
    assert listed(events) == [("raw", ["first"]), ("raw", ["first", "second"])]
    submits = [e.seq for e in events if e.event == "submit"]
    records = [e.seq for e in events if e.event == RecordKind.TOOLS_LISTED]
    assert [s < r for s, r in zip(submits, records, strict=True)] == [True, True]
    agent.shutdown()


def test_a_change_the_server_announces_is_applied_between_rounds_as_a_record(
    tmp_path: Path,
) -> None:
    model = (
        ScriptedModel()
        .tool_call("tb__learn")
        .tool_call("tb__shout", text="hello")
        .text("Shouted.")
    )
    store = SQLiteStore(tmp_path / "runs.db")
    server = MCPServer("tb", toolbox(), trusted=True)
    agent = Agent(model, store=store, mcp_servers=[server], run_id="r")
    agent.start()

    done = agent.submit("learn to shout, then shout")

    assert done.state == "completed"
    assert [m.content for m in agent.messages if m.role == "tool"] == [
        '{"result": "learned shout"}',
        '{"result": "HELLO"}',
    ]
    events = assert_replays(store, "r")
    (first, second) = listed(events)
    assert "tb__shout" not in first[1]
    assert "shout" not in first[1]
    assert "shout" in second[1]
    learned = next(e.seq for e in events if e.event == "tools_finished")
    relisted = [e.seq for e in events if e.event == RecordKind.TOOLS_LISTED][1]
    model_calls = [e.seq for e in events if e.event == "model_replied"]
    assert learned < relisted < model_calls[1]  # between the rounds, before the next call
    agent.shutdown()


def test_a_server_that_cannot_be_listed_refuses_the_submit_and_nothing_changes() -> None:
    broken = MCPServer("raw", raw([declared()], list_delay=30), timeout=0.2)
    agent = Agent(ScriptedModel().text("never"), mcp_servers=[broken])
    agent.start()
    before = agent.snapshot()

    with pytest.raises(MCPConnectionError, match="took longer than its timeout"):
        agent.submit("hello")

    assert agent.snapshot() == before
    assert agent.state == "ready"


def test_a_clash_with_the_applications_tools_refuses_the_submit() -> None:
    def raw__point(n: int) -> int:
        return n

    agent = Agent(
        ScriptedModel().text("never"),
        [raw__point],
        mcp_servers=[MCPServer("raw", raw([declared("point")]))],
    )
    agent.start()

    with pytest.raises(MCPServerError, match="'raw__point' clashes with a tool of the app"):
        agent.submit("hello")
    assert (agent.state, agent.turn) == ("ready", 0)


@pytest.mark.parametrize(
    "bad",
    [["not a server"], "files", [MCPServer("a", toolbox()), MCPServer("a", toolbox())]],
    ids=["not-a-source", "a-string", "same-prefix"],
)
def test_bad_mcp_servers_are_refused_naming_the_argument(bad: object) -> None:
    with pytest.raises((TypeError, ValueError), match="mcp_servers"):
        Agent(ScriptedModel(), mcp_servers=bad)  # type: ignore[arg-type]


def test_a_tool_that_asks_the_user_waits_in_input_required_and_resumes_after_a_restart(
    tmp_path: Path,
) -> None:
    notes: dict[str, str] = {}
    path = tmp_path / "runs.db"

    def agent_of(model: ScriptedModel) -> Agent:
        server = MCPServer("tb", toolbox(notes), trusted=True, policies={"book": "allow"})
        return Agent(model, store=SQLiteStore(path), mcp_servers=[server], run_id="trip")

    first = agent_of(
        ScriptedModel().tool_call("tb__add", a=1, b=2).tool_call("tb__book", flight="LH1")
    )
    first.start()
    first.submit("add, then book")
    waiting = first.outcome()

    assert (waiting.state, waiting.question) == ("input_required", "Which seat do you want?")
    assert first.loop_state == "awaiting_input"
    assert notes == {}
    stored = SQLiteStore(path).load("trip")
    assert stored is not None
    assert "request_state" in str(stored.inputs)

    # another process: a new Agent from the store, the same server given again
    second = agent_of(ScriptedModel().text("Booked seat 12C."))
    second.start()
    done = second.provide_input("12C")

    assert (done.state, done.reply) == ("completed", "Booked seat 12C.")
    assert notes == {"LH1": "12C"}
    tool_messages = [m.content for m in second.messages if m.role == "tool"]
    assert tool_messages[-1] == '{"result": "booked LH1, seat 12C"}'
    assert_history_valid(second.messages)
    events = assert_replays(SQLiteStore(path), "trip")
    asked = next(e for e in events if e.event == "input_requested")
    assert (asked.source, asked.target) == ("acting", "awaiting_input")
    second.shutdown()


def test_a_question_cancelled_answers_the_call_and_fails_the_turn(tmp_path: Path) -> None:
    server = MCPServer("tb", toolbox(), trusted=True, policies={"book": "allow"})
    store = SQLiteStore(tmp_path / "runs.db")
    agent = Agent(
        ScriptedModel().tool_call("tb__book", flight="LH1"),
        store=store,
        mcp_servers=[server],
        run_id="r",
    )
    agent.start()
    agent.submit("book")

    done = agent.cancel()

    assert (done.state, done.reason) == ("failed", "cancelled")
    assert "cancelled" in next(m.content for m in agent.messages if m.role == "tool")
    assert agent.snapshot().inputs == {}
    assert_replays(store, "r")


def test_a_call_that_needs_approval_and_asks_keeps_its_approval_for_the_retry(
    tmp_path: Path,
) -> None:
    notes: dict[str, str] = {}
    server = MCPServer("tb", toolbox(notes))  # untrusted: book needs approval
    store = SQLiteStore(tmp_path / "runs.db")
    model = ScriptedModel().tool_call("tb__book", flight="LH1").text("done")
    agent = Agent(model, store=store, mcp_servers=[server], run_id="r")
    agent.start()

    waiting = agent.submit("book")
    asked = agent.resolve_action({waiting.pending[0].id: "approve"})
    done = agent.provide_input('{"seat": "1A"}')

    assert (waiting.state, asked.state, done.state) == (
        "requires_action",
        "input_required",
        "completed",
    )
    assert notes == {"LH1": "1A"}
    assert_replays(store, "r")


def test_a_server_killed_mid_call_is_an_error_result_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    import sys

    script = str(Path(__file__).with_name("servers.py"))
    server = MCPServer("tb", [sys.executable, script], trusted=True, timeout=20)
    store = SQLiteStore(tmp_path / "runs.db")
    model = ScriptedModel().tool_call("tb__die").text("The server died.")
    agent = Agent(model, store=store, mcp_servers=[server], run_id="r")
    agent.start()

    done = agent.submit("die")

    assert (done.state, done.reply) == ("completed", "The server died.")
    (message,) = [m.content for m in agent.messages if m.role == "tool"]
    assert "MCPConnectionError" in message
    assert "went away" in message
    assert_replays(store, "r")


def test_replay_and_a_restored_run_use_the_recorded_list_with_the_server_gone(
    tmp_path: Path,
) -> None:
    calls: list[str] = []
    answer = types.CallToolResult(content=[types.TextContent(type="text", text="ok")])
    server = MCPServer("raw", raw([declared("point")], answer, calls), trusted=False)
    store = SQLiteStore(tmp_path / "runs.db")
    model = ScriptedModel().tool_call("raw__point", n=1).text("done")
    agent = Agent(model, store=store, mcp_servers=[server], run_id="r")
    agent.start()
    waiting = agent.submit("point")
    del agent, server  # the server is gone: nothing may contact it again

    class Gone(MCPServer):
        async def list_tools(self) -> tuple[types.Tool, ...]:
            raise AssertionError("a restored run listed its server")

    gone = Gone("raw", "http://127.0.0.1:9/mcp", timeout=1)
    restored = Agent(ScriptedModel().text("done"), store=store, mcp_servers=[gone], run_id="r")
    restored.start()

    assert waiting.state == "requires_action"
    assert "raw__point" in restored.tools.registry.names
    assert [c.name for c in restored.pending] == ["raw__point"]
    events = assert_replays(store, "r")
    assert listed(events) == [("raw", ["point"])]
    assert calls == []
