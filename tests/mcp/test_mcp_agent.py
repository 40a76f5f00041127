"""End to end: an Agent (public API) calls MCP tools, one of which needs approval.

Once with a `ScriptedModel`, once through the loopback OpenAI server with the real ``openai``
client, so the MCP tools' schemas go over the wire exactly as the model would see them.
"""

from __future__ import annotations

import json

from agentfsm import Agent, OpenAIModel, ScriptedModel, ToolCall
from agentfsm.testing import LoopbackOpenAIServer, Reply
from agentfsm.tools.mcp import MCPServer, load_tools_sync
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
