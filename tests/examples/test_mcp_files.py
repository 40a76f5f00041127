"""examples/mcp_files.py: the files MCP server over stdio, writes only once approved."""

from __future__ import annotations

import json
from pathlib import Path

from agentfsm.states.messages import ToolCall
from agentfsm.tools import Decision, ToolContext, ToolStatus, ToolSystem
from agentfsm.tools.mcp import MCPServer, load_tools_sync
from examples.mcp_files import files_server, main


def notes(tmp_path: Path) -> Path:
    (tmp_path / "todo.txt").write_text("buy milk\ncall Ada\n")
    return tmp_path


def test_the_agent_reads_freely_and_writes_once_approved(tmp_path: Path) -> None:
    asked: list[str] = []
    said: list[str] = []

    agent = main(notes(tmp_path), lambda name, _: asked.append(name) is None, said.append)

    assert asked == ["files__write_file"]
    assert said == ["completed: I wrote the summary to summary.txt."]
    assert (tmp_path / "summary.txt").read_text() == "2 things to do"
    tool_messages = [m.content for m in agent.messages if m.role == "tool"]
    assert json.loads(tool_messages[0]) == {"result": ["todo.txt"]}
    assert json.loads(tool_messages[1]) == {"result": "buy milk\ncall Ada\n"}


def test_a_refused_write_leaves_the_directory_alone(tmp_path: Path) -> None:
    agent = main(notes(tmp_path), lambda name, _: False, lambda _: None, stdio=False)

    assert not (tmp_path / "summary.txt").exists()
    assert "[denied]" in [m.content for m in agent.messages if m.role == "tool"][2]


def test_the_server_refuses_paths_outside_its_directory(tmp_path: Path) -> None:
    system = ToolSystem(load_tools_sync(MCPServer("files", files_server(notes(tmp_path)))))
    escape = ToolCall(id="c1", name="files__read_file", arguments='{"path": "../secret"}')
    context = ToolContext(run_id="r", turn=1, iteration=1)

    (result,) = system.run_round_sync(
        [escape], context, decisions={"c1": Decision.approve()}
    ).results

    assert (result.status, result.error.type) == (ToolStatus.ERROR, "MCPToolError")
    assert "outside the served directory" in result.error.message
