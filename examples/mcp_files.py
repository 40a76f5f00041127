"""An agent using a small filesystem MCP server, with a human approving every write.

The server is written with the official MCP SDK and serves one directory over stdio: it lists,
reads and writes text files there, and refuses any path that leaves the directory. Writing
over a file that exists makes it ask the user first (an input-required result). The agent is
handed the server (``mcp_servers=``): each turn lists its tools into the run's log. The server
is trusted, so its read-only tools run freely while ``write_file`` (destructive) waits for the
application's approval (docs/mcp.md). The run is kept in a SQLite
file, so the approval and the answer may come from another process.

Run it on a scripted model, over a temporary directory::

    python examples/mcp_files.py
"""

# No `from __future__ import annotations`: the SDK reads write_file's annotations, which
# name the local resolver `confirm`, at run time.
import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import MCPServer as SDKServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.server.request_state import RequestStateSecurity
from mcp.types import ToolAnnotations
from pydantic import BaseModel

from agentfsm import Agent, Message, Model, ModelResponse, ScriptedModel, SQLiteStore, ToolCall
from agentfsm.states.json import JSONObject
from agentfsm.tools.mcp import MCPServer

READ_ONLY = ToolAnnotations(read_only_hint=True)
WRITE = ToolAnnotations(destructive_hint=True, open_world_hint=False)


class Overwrite(BaseModel):
    """The user's answer when a write would replace a file."""

    overwrite: bool


def files_server(root: Path, key: bytes) -> SDKServer:
    """An MCP server whose tools list, read and write the text files under ``root``.

    ``key`` seals the state of its questions, so that any process of the server (a stdio
    server is started for each call) can take up the answer.
    """
    server = SDKServer("files", request_state_security=RequestStateSecurity(keys=[key]))
    root = root.resolve()

    def inside(path: str) -> Path:
        target = (root / path).resolve()
        if not target.is_relative_to(root):
            raise ToolError(f"{path!r} is outside the served directory")
        return target

    def confirm(path: str) -> Overwrite | Elicit[Overwrite]:
        if not inside(path).exists():
            return Overwrite(overwrite=True)
        return Elicit(f"{path} exists: overwrite it?", Overwrite)

    @server.tool(annotations=READ_ONLY)
    def list_files() -> list[str]:
        """The names of the files in the directory, sorted."""
        return sorted(p.name for p in root.iterdir() if p.is_file())

    @server.tool(annotations=READ_ONLY)
    def read_file(path: str) -> str:
        """The text of one file."""
        return inside(path).read_text()

    @server.tool(annotations=WRITE)
    def write_file(path: str, text: str, answer: Annotated[Overwrite, Resolve(confirm)]) -> str:
        """Write a file with ``text`` (asks before replacing one)."""
        if not answer.overwrite:
            return f"left {path} as it was"
        inside(path).write_text(text)
        return f"wrote {len(text)} characters to {path}"

    return server


def build_agent(
    model: Model, root: Path, store: SQLiteStore, key: bytes, *, restore: bool = False
) -> Agent:
    """The agent of run ``notes``, whose tools come from the files server on ``root``.

    With ``restore``, the stored run taken up (`Agent.restore`: it must exist).
    """
    command = [sys.executable, __file__, "serve", str(root), key.hex()]
    files = MCPServer("files", command, trusted=True)
    prompt = "You keep the notes in a directory tidy. Ask before changing anything."
    if restore:
        return Agent.restore(
            model, mcp_servers=[files], store=store, run_id="notes", system_prompt=prompt
        )
    return Agent(model, mcp_servers=[files], store=store, run_id="notes", system_prompt=prompt)


STEPS: list[tuple[str, dict[str, str]]] = [
    ("files__list_files", {}),
    ("files__read_file", {"path": "todo.txt"}),
    ("files__write_file", {"path": "summary.txt", "text": "2 things to do"}),
]
"""What a model might do: look around, read, then write a summary."""


def next_step(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
    """The scripted model's reply, from how far the conversation got (any process)."""
    done = sum(1 for message in messages if message.role == "assistant")
    if done < len(STEPS):
        name, arguments = STEPS[done]
        call = ToolCall(id=f"call-{done + 1}", name=name, arguments=json.dumps(arguments))
        return ModelResponse(tool_calls=(call,))
    return ModelResponse(content="I wrote the summary to summary.txt.")


def main(
    root: Path,
    db: Path,
    approve: Callable[[str, str], bool],
    answer: Callable[[str], str],
    say: Callable[[str], None],
) -> Agent:
    """Run one turn over ``root``, kept in ``db``, answering what it waits for.

    ``approve(tool, arguments)`` decides each write; ``answer(question)`` answers the
    server's questions.

    Each decision and answer is given by a new Agent restored from the SQLite file, as
    another process would (the server's key is shared with it).
    """
    key = os.urandom(32)
    store = SQLiteStore(db)
    agent = build_agent(ScriptedModel(fallback=next_step), root, store, key)
    # start and submit in one call: the start and the input are saved together
    outcome = agent.start("Summarise my to-do list into summary.txt")
    while outcome.state in ("requires_action", "input_required"):
        agent.close()  # "the process ends"; a new one takes the run up from the file
        agent = build_agent(ScriptedModel(fallback=next_step), root, store, key, restore=True)
        if outcome.state == "requires_action":
            decisions = {
                call.id: "approve" if approve(call.name, call.arguments) else "deny"
                for call in outcome.pending
            }
            outcome = agent.resolve_action(decisions)
        else:
            outcome = agent.provide_input(answer(outcome.question or ""))
    say(f"{outcome.state}: {outcome.reply}")
    agent.shutdown()
    return agent


def _ask(name: str, arguments: str) -> bool:
    print(f"approve {name} {arguments}? yes")
    return True


def _answer(question: str) -> str:
    print(f"{question} yes")
    return "yes"


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        files_server(Path(sys.argv[2]), bytes.fromhex(sys.argv[3])).run("stdio")
    else:
        with tempfile.TemporaryDirectory() as directory:
            served = Path(directory, "notes")
            served.mkdir()
            (served / "todo.txt").write_text("buy milk\ncall Ada\n")
            (served / "summary.txt").write_text("old summary\n")
            main(served, Path(directory, "run.db"), _ask, _answer, print)
            print("summary.txt:", (served / "summary.txt").read_text())
