"""examples/mcp_files.py: the files MCP server over stdio, writes only once approved.

Over an existing file, only once the user said so; each answer from a restored Agent.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agentfsm import SQLiteStore, replay
from agentfsm.states.messages import ToolCall
from agentfsm.tools import Decision, ToolContext, ToolStatus, ToolSystem
from agentfsm.tools.mcp import MCPServer, load_tools_sync
from examples.mcp_files import files_server, main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mcp_files.py"
KEY = b"k" * 32


def notes(tmp_path: Path, *, summary: str | None = None) -> Path:
    served = tmp_path / "notes"
    served.mkdir()
    (served / "todo.txt").write_text("buy milk\ncall Ada\n")
    if summary is not None:
        (served / "summary.txt").write_text(summary)
    return served


def tool_messages(tmp_path: Path) -> list[str]:
    stored = SQLiteStore(tmp_path / "run.db").load("notes")
    assert stored is not None
    return [m.content or "" for m in stored.messages if m.role == "tool"]


def test_the_agent_reads_freely_and_writes_once_approved(tmp_path: Path) -> None:
    asked: list[str] = []
    said: list[str] = []

    main(
        notes(tmp_path),
        tmp_path / "run.db",
        lambda name, _: asked.append(name) is None,
        asked.append,
        said.append,
    )

    assert asked == ["files__write_file"]  # a new file: no question
    assert said == ["completed: I wrote the summary to summary.txt."]
    assert (tmp_path / "notes" / "summary.txt").read_text() == "2 things to do"
    listed, read, _ = tool_messages(tmp_path)
    assert json.loads(listed) == {"result": ["todo.txt"]}
    assert json.loads(read) == {"result": "buy milk\ncall Ada\n"}


def test_over_an_existing_file_the_server_asks_and_a_no_leaves_it(tmp_path: Path) -> None:
    asked: list[str] = []

    main(
        notes(tmp_path, summary="old"),
        tmp_path / "run.db",
        lambda _name, _arguments: True,
        lambda question: asked.append(question) or "no",
        lambda _: None,
    )

    assert asked == ["summary.txt exists: overwrite it?"]
    assert (tmp_path / "notes" / "summary.txt").read_text() == "old"
    assert tool_messages(tmp_path)[-1] == '{"result": "left summary.txt as it was"}'
    store = SQLiteStore(tmp_path / "run.db")
    events = list(store.events("notes"))
    assert [e.event for e in events].count("input_requested") == 1
    assert replay(events, store.load("notes")).state == "shutdown"


def test_a_refused_write_leaves_the_directory_alone(tmp_path: Path) -> None:
    main(notes(tmp_path), tmp_path / "run.db", lambda *_: False, lambda _: "yes", lambda _: None)

    assert not (tmp_path / "notes" / "summary.txt").exists()
    assert "[denied]" in tool_messages(tmp_path)[2]


def test_the_server_refuses_paths_outside_its_directory(tmp_path: Path) -> None:
    system = ToolSystem(load_tools_sync(MCPServer("files", files_server(notes(tmp_path), KEY))))
    escape = ToolCall(id="c1", name="files__read_file", arguments='{"path": "../secret"}')
    context = ToolContext(run_id="r", turn=1, iteration=1)

    (result,) = system.run_round_sync(
        [escape], context, decisions={"c1": Decision.approve()}
    ).results

    assert (result.status, result.error.type) == (ToolStatus.ERROR, "MCPToolError")
    assert "outside the served directory" in result.error.message


def test_the_example_runs_as_a_script(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )

    assert "summary.txt exists: overwrite it? yes" in done.stdout
    assert done.stdout.rstrip().endswith("summary.txt: 2 things to do")
