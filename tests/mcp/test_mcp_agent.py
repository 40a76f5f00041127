"""End to end: an Agent (public API) calls MCP tools, one of which needs approval.

Once with a `ScriptedModel`, once through the loopback OpenAI server with the real ``openai``
client, so the MCP tools' schemas go over the wire exactly as the model would see them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agentfsm import Agent, OpenAIModel, ScriptedModel, ToolCall
from agentfsm.stores import SQLiteStore, replay
from agentfsm.testing import LoopbackOpenAIServer, Reply
from agentfsm.tools.mcp import MCPServer, load_tools_sync
from agentfsm.verify import check_log
from tests.agent.agent_support import assert_history_valid
from tests.mcp.servers import toolbox


def test_an_agent_calls_a_read_only_mcp_tool_freely_and_a_write_after_approval() -> None:
    notes: dict[str, str] = {}
    tools = load_tools_sync(MCPServer("notes", toolbox(notes), trusted=True))
    model = (
        ScriptedModel()
        .tool_call("notes__add", a=2, b=3)
        .tool_call("notes__write", path="sum.txt", text="5")
        .text("Saved the sum.")
    )
    agent = Agent(model, tools)
    agent.start()

    waiting = agent.submit("Add 2 and 3 and save it")

    assert waiting.state == "requires_action"
    assert [call.name for call in waiting.pending] == ["notes__write"]
    assert notes == {}  # nothing written before the approval
    done = agent.resolve_action({waiting.pending[0].id: "approve"})

    assert (done.state, done.reply) == ("completed", "Saved the sum.")
    assert notes == {"sum.txt": "5"}
    tool_messages = [m.content for m in agent.messages if m.role == "tool"]
    assert tool_messages == ['{"result": 5}', '{"result": "wrote 1 characters to sum.txt"}']
    assert_history_valid(agent.messages)
    agent.shutdown()


def test_a_denied_mcp_call_never_reaches_the_server() -> None:
    notes: dict[str, str] = {}
    tools = load_tools_sync(MCPServer("notes", toolbox(notes)))  # untrusted: all need approval
    model = ScriptedModel().tool_call("notes__write", path="x", text="y").text("Not saved.")
    agent = Agent(model, tools)
    agent.start()

    waiting = agent.submit("Save y to x")
    done = agent.resolve_action({waiting.pending[0].id: "deny"})

    assert (done.state, notes) == ("completed", {})
    assert "[denied]" in next(m.content for m in agent.messages if m.role == "tool")
    agent.shutdown()


def call(call_id: str, name: str, **arguments: object) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=json.dumps(arguments))


def test_through_the_openai_client_the_model_sees_and_calls_mcp_tools() -> None:
    notes: dict[str, str] = {}
    tools = load_tools_sync(MCPServer("notes", toolbox(notes), trusted=True))
    with LoopbackOpenAIServer() as server:
        server.add(Reply(tool_calls=(call("a1", "notes__add", a=20, b=22),)))
        server.add(Reply(tool_calls=(call("w1", "notes__write", path="n.txt", text="42"),)))
        server.add(Reply("Wrote 42."))
        model = OpenAIModel("loopback", base_url=server.url, api_key="test", timeout=10)
        agent = Agent(model, tools)
        agent.start()

        waiting = agent.submit("Compute and save")
        done = agent.resolve_action({"w1": "approve"})

        offered = {t["function"]["name"]: t["function"] for t in server.requests[0].tools}
        assert offered["notes__add"]["parameters"]["required"] == ["a", "b"]
        assert offered["notes__add"]["description"] == "Add two integers."
        assert server.requests[1].messages[-1]["content"] == '{"result": 42}'
        agent.shutdown()

    assert (waiting.state, [c.id for c in waiting.pending]) == ("requires_action", ["w1"])
    assert (done.state, done.reply, notes) == ("completed", "Wrote 42.", {"n.txt": "42"})


def test_e2e_openai_client_stdio_server_approval_question_and_two_restarts(
    tmp_path: Path,
) -> None:
    """A free MCP tool, one that needs approval, one that asks; a restart before each answer.

    Each "process" is a new Agent (and model client) from the SQLite file.
    """
    script = str(Path(__file__).with_name("servers.py"))
    path = tmp_path / "runs.db"

    def process(url: str) -> Agent:
        model = OpenAIModel("loopback", base_url=url, api_key="test", timeout=10)
        server = MCPServer(
            "tb", [sys.executable, script], trusted=True, policies={"book": "allow"}, timeout=20
        )
        return Agent(model, store=SQLiteStore(path), mcp_servers=[server], run_id="trip")

    with LoopbackOpenAIServer() as server:
        server.add(Reply(tool_calls=(call("a1", "tb__add", a=20, b=22),)))
        server.add(Reply(tool_calls=(call("w1", "tb__write", path="n.txt", text="42"),)))
        server.add(Reply(tool_calls=(call("b1", "tb__book", flight="LH1"),)))
        server.add(Reply("Saved 42 and booked seat 12C."))
        first = process(server.url)
        first.start()
        waiting = first.submit("Add, save, then book a flight")
        first.close()

        second = process(server.url)  # restarted: approves the write
        second.start()
        asked = second.resolve_action({"w1": "approve"})
        second.close()

        third = process(server.url)  # restarted again: answers the server's question
        third.start()
        done = third.provide_input("12C")

        offered = {t["function"]["name"] for t in server.requests[0].tools}
        tool_messages = [m.content for m in third.messages if m.role == "tool"]
        third.shutdown()

    assert {"tb__add", "tb__write", "tb__book"} <= offered
    assert (waiting.state, [c.id for c in waiting.pending]) == ("requires_action", ["w1"])
    assert (asked.state, asked.question) == ("input_required", "Which seat do you want?")
    assert (done.state, done.reply) == ("completed", "Saved 42 and booked seat 12C.")
    assert tool_messages == [
        '{"result": 42}',
        '{"result": "wrote 2 characters to n.txt"}',
        '{"result": "booked LH1, seat 12C"}',
    ]
    store = SQLiteStore(path)
    events = list(store.events("trip"))
    assert replay(events, store.load("trip")).state == "shutdown"
    assert check_log(events).ok
