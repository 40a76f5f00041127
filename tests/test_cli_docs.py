"""The ``agentfsm`` commands shown in docs/cli.md and docs/diagrams.md work as shown.

Every ``$ agentfsm …`` line of their ``console`` blocks (but pipelines) runs as a real
subprocess, in a folder holding a store with the runs the pages use. Diagrams and errors
must print exactly what the page shows; ``runs`` and ``inspect``, whose numbers depend on
how the run was recorded, must succeed and print the page's first line.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from agentfsm import Event, Message, ToolCall
from agentfsm.fsm import Emitter, RunData, loop_machine, run_machine
from agentfsm.states.json import JSONValue
from agentfsm.stores import Snapshot, SQLiteStore

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "docs" / "cli.md", ROOT / "docs" / "diagrams.md"]
CONSOLE = re.compile(r"^```console\n(.*?)^```", re.DOTALL | re.MULTILINE)
EXACT = {"diagram"}


def documented_commands(page: Path) -> list[tuple[str, list[str]]]:
    """Each ``$ agentfsm …`` command of the page's console blocks, with the lines after it."""
    commands: list[tuple[str, list[str]]] = []
    for block in CONSOLE.findall(page.read_text()):
        for line in block.splitlines():
            if line.startswith("$ "):
                commands.append((line[2:], []))
            elif commands:
                commands[-1][1].append(line)
    return [(c, out) for c, out in commands if c.startswith("agentfsm ") and "|" not in c]


SHOWN = [(page, c, out) for page in PAGES for c, out in documented_commands(page)]
CASES = [pytest.param(c, out, id=f"{page.name}: {c}") for page, c, out in SHOWN]


def _dump(message: Message) -> JSONValue:
    return message.model_dump(mode="json")


def _store(path: Path) -> None:
    call = ToolCall(id="call_2", name="book_table", arguments='{"city": "Paris", "people": 2}')
    with SQLiteStore(path) as store:
        for run_id in ("dinner", "hello"):
            data = RunData(run_id)
            log: list[Event] = []
            emitter = Emitter(run_id, listeners=[log.append], clock=lambda: 0.0)
            run = run_machine(data, emitter)
            run.send("start")
            run.send("submit", text="Book a table for two in Paris")
            loop = loop_machine(data, emitter)
            # Each reply carries its message, as an Agent records it, so the log replays
            # (agentfsm fork rebuilds the run from it).
            asked = Message.assistant(tool_calls=(call,))
            if run_id == "hello":
                loop.send("model_replied", tool_calls=0, message=_dump(Message.assistant("Hi")))
                run.send("complete")
            else:
                loop.send("model_replied", tool_calls=1, message=_dump(asked))
                loop.send("tools_finished")
                loop.send("model_replied", tool_calls=1, needing_action=1, message=_dump(asked))
                run.send("need_action", calls=["call_2"])
            messages = [Message.user("hi"), asked]
            snapshot = Snapshot.from_data(data, messages, (), seq=len(log), version=1)
            store.save(snapshot, log, expected_version=None)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("docs-cli")
    (where / ".agentfsm").mkdir()
    _store(where / ".agentfsm" / "runs.db")
    _store(where / "runs.db")
    (where / "notes.txt").write_text("not a database\n")
    return where


def test_the_pages_show_commands() -> None:
    shown = {command.split()[1] for _, command, _ in SHOWN}
    assert {"diagram", "runs", "inspect"} <= shown


@pytest.mark.parametrize(("command", "output"), CASES)
def test_documented_command_does_what_the_page_shows(
    command: str, output: list[str], folder: Path
) -> None:
    args = shlex.split(command)[1:]
    done = subprocess.run(
        [sys.executable, "-m", "agentfsm.cli", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    printed = (done.stdout + done.stderr).splitlines()
    if "error:" in "".join(output):
        assert done.returncode == 1
        assert printed == output
    elif args[0] in EXACT:
        assert done.returncode == 0, done.stderr
        assert printed == output
        written = folder / output[0].removeprefix("wrote ")
        assert written.stat().st_size > 0
    else:
        assert done.returncode == 0, done.stderr
        assert printed[0] == output[0]
