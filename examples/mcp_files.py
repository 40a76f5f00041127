"""An agent using a small filesystem MCP server, with a human approving every write.

The server is written with the official MCP SDK and serves one directory over stdio: it lists,
reads and writes text files there, and refuses any path that leaves the directory. The
agent starts it as a subprocess through `agentfsm.tools.mcp`; the server is trusted, so its
read-only tools run freely while ``write_file`` (destructive by the protocol's default)
waits for the application's approval (docs/tools.md, "Tools from MCP servers").

Run it on a scripted model, over a temporary directory::

    python examples/mcp_files.py
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from mcp.server.mcpserver import MCPServer as SDKServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from agentfsm import Agent, Model, ScriptedModel
from agentfsm.tools.mcp import MCPServer, load_tools_sync

READ_ONLY = ToolAnnotations(read_only_hint=True)
WRITE = ToolAnnotations(destructive_hint=True, open_world_hint=False)


def files_server(root: Path) -> SDKServer:
    """An MCP server whose tools list, read and write the text files under ``root``."""
    server = SDKServer("files")
    root = root.resolve()

    def inside(path: str) -> Path:
        target = (root / path).resolve()
        if not target.is_relative_to(root):
            raise ToolError(f"{path!r} is outside the served directory")
        return target

    @server.tool(annotations=READ_ONLY)
    def list_files() -> list[str]:
        """The names of the files in the directory, sorted."""
        return sorted(p.name for p in root.iterdir() if p.is_file())

    @server.tool(annotations=READ_ONLY)
    def read_file(path: str) -> str:
        """The text of one file."""
        return inside(path).read_text()

    @server.tool(annotations=WRITE)
    def write_file(path: str, text: str) -> str:
        """Write (or overwrite) a file with ``text``."""
        inside(path).write_text(text)
        return f"wrote {len(text)} characters to {path}"

    return server


def build_agent(model: Model, root: Path, *, stdio: bool = True) -> Agent:
    """An agent whose tools come from the files server on ``root``.

    The server runs as a subprocess over stdio, or (``stdio=False``) in this process.
    """
    command = [sys.executable, __file__, "serve", str(root)]
    files = MCPServer("files", command if stdio else files_server(root), trusted=True)
    return Agent(
        model,
        load_tools_sync(files),
        system_prompt="You keep the notes in a directory tidy. Ask before changing anything.",
    )


def scripted() -> ScriptedModel:
    """What a model might do: look around, read, then write a summary."""
    return (
        ScriptedModel()
        .tool_call("files__list_files")
        .tool_call("files__read_file", path="todo.txt")
        .tool_call("files__write_file", path="summary.txt", text="2 things to do")
        .text("I wrote the summary to summary.txt.")
    )


def main(
    root: Path,
    approve: Callable[[str, str], bool],
    say: Callable[[str], None],
    *,
    stdio: bool = True,
) -> Agent:
    """Run one turn over ``root``, asking ``approve(tool, arguments)`` before each write."""
    agent = build_agent(scripted(), root, stdio=stdio)
    agent.start()
    outcome = agent.submit("Summarise my to-do list into summary.txt")
    while outcome.state == "requires_action":
        decisions = {
            call.id: "approve" if approve(call.name, call.arguments) else "deny"
            for call in outcome.pending
        }
        outcome = agent.resolve_action(decisions)
    say(f"{outcome.state}: {outcome.reply}")
    agent.shutdown()
    return agent


def _ask(name: str, arguments: str) -> bool:
    print(f"approve {name} {arguments}? yes")
    return True


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        files_server(Path(sys.argv[2])).run("stdio")
    else:
        with tempfile.TemporaryDirectory() as directory:
            Path(directory, "todo.txt").write_text("buy milk\ncall Ada\n")
            main(Path(directory), _ask, print)
            print("summary.txt:", Path(directory, "summary.txt").read_text())
