"""Nothing leaks, nothing injects (issue 18, part 3).

The CLI only reads stores, and data can drive neither a terminal nor a DOT file.
"""

from __future__ import annotations

import hashlib
import html
import sqlite3
import subprocess
from pathlib import Path

import pytest

from agentfsm import Event, Message, ToolCall
from agentfsm._terminal import terminal_safe
from agentfsm.diagrams import combined_diagram, run_diagram
from agentfsm.fsm import LOOP_MACHINE, RUN_MACHINE, RunData
from agentfsm.states import MachineName
from agentfsm.stores import Snapshot, SQLiteStore
from agentfsm.verify.diagram import Counterexample, Step, counterexample_dot
from tests.test_runs_cli import _question, _save, agentfsm

ESCAPE = "\x1b]0;pwned\x07\x1b[2J"
"""Retitles the window and clears the screen, when printed raw."""


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _journal_mode(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        mode: str = conn.execute("PRAGMA journal_mode").fetchone()[0]
    conn.close()
    return mode


def _foreign(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.execute("INSERT INTO users VALUES ('ada')")
    conn.commit()
    conn.close()
    return path


@pytest.mark.parametrize("command", [["runs"], ["inspect", "r"], ["diagram", "--run", "r"]])
def test_store_commands_leave_a_foreign_sqlite_file_byte_for_byte_unchanged(
    tmp_path: Path, command: list[str]
) -> None:
    path = _foreign(tmp_path / "app.db")
    before = _digest(path)

    done = agentfsm(*command, "--store", str(path), cwd=tmp_path)

    assert done.returncode == 1
    assert "something else" in done.stderr
    assert _digest(path) == before
    assert _journal_mode(path) == "delete"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]


@pytest.mark.parametrize("command", [["runs"], ["inspect", "r-question"]])
def test_store_commands_leave_an_agentfsm_store_and_its_journal_mode_unchanged(
    tmp_path: Path, command: list[str]
) -> None:
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as store:
        _save(store, "r-question", _question)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    before = _digest(path)

    done = agentfsm(*command, "--store", str(path), cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert "r-question" in done.stdout
    assert _digest(path) == before
    assert _journal_mode(path) == "delete"


def test_a_read_only_store_refuses_to_write(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as store:
        _save(store, "r1", _question)
    before = _digest(path)
    with SQLiteStore(path, read_only=True) as store:
        snapshot = store.load("r1")
        assert snapshot is not None
        with pytest.raises(Exception, match="read_only=True"):
            store.save(snapshot, [], expected_version=snapshot.version)
        with pytest.raises(Exception, match="read_only=True"):
            store.delete("r1")
    assert _digest(path) == before


def _store_with_a_hostile_run(path: Path) -> None:
    """A run whose id, question and stored state carry terminal escapes."""
    run_id = f"r{ESCAPE}"
    data = RunData(run_id)
    data.state = "requires_input"
    data.question = f"Which day?{ESCAPE}\nrun          fake line"
    call = ToolCall(id="call_9", name="ask_user", arguments='{"question": "x"}')
    messages = (Message.user("hi"), Message.assistant(tool_calls=(call,)))
    data.pending = ("call_9",)
    snapshot = Snapshot.from_data(data, messages, (), seq=0, version=1)
    with SQLiteStore(path) as store:
        store.save(snapshot, [], expected_version=None)


def test_runs_and_inspect_neutralise_control_characters(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    _store_with_a_hostile_run(path)

    listed = agentfsm("runs", "--store", str(path), cwd=tmp_path)
    shown = agentfsm("inspect", f"r{ESCAPE}", "--store", str(path), cwd=tmp_path)
    missing = agentfsm("inspect", f"x{ESCAPE}", "--store", str(path), cwd=tmp_path)

    assert listed.returncode == shown.returncode == 0, (listed.stderr, shown.stderr)
    for text in (listed.stdout, shown.stdout, missing.stderr):
        assert "\x1b" not in text
        assert "\x07" not in text
        assert "\\x1b]0;pwned\\x07" in text
    assert "question     Which day?\\x1b]0;pwned\\x07\\x1b[2J\\nrun          fake line" in (
        shown.stdout.splitlines()
    )


def test_terminal_safe_escapes_c0_c1_del_and_bidi_but_keeps_what_it_is_told() -> None:
    assert terminal_safe("a\x00b\x7fc\x9bd\u202ee") == "a\\x00b\\x7fc\\x9bd\\u202ee"
    assert terminal_safe("line\nnext\tcol", keep="\n\t") == "line\nnext\tcol"
    assert terminal_safe("line\nnext\r") == "line\\nnext\\r"
    assert terminal_safe("plain é ✓") == "plain é ✓"


def _event(source: str, target: str, event: str = "jump") -> Event:
    return Event(
        seq=1, run_id="r", machine=MachineName.RUN, event=event, source=source, target=target, at=0
    )


def _dot_accepts(source: str, tmp_path: Path) -> str:
    done = subprocess.run(
        ["dot", "-Tsvg"], input=source, capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout


@pytest.mark.parametrize(
    "name",
    ["ready\\", "a\\\\", 'quo"te\\', "port:side", "<IMG SRC='/etc/passwd'/>", "<<b>x</b>>"],
)
def test_state_names_from_a_log_are_quoted_in_the_diagram(name: str, tmp_path: Path) -> None:
    for draw in (run_diagram, combined_diagram):
        source = draw(events=[_event(name, "busy", event=name)])
        svg = _dot_accepts(source, tmp_path)
        assert "<image" not in svg.lower()
        assert name in html.unescape(svg)


def test_diagram_run_of_a_state_ending_in_a_backslash_is_valid_dot(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as store:
        _save(store, "r", _question)
    with sqlite3.connect(path) as conn:
        (text,) = conn.execute("SELECT event FROM events WHERE seq = 1").fetchone()
        conn.execute("DELETE FROM events WHERE seq = 1")
        tampered = text.replace('"created"', '"x\\\\"')
        conn.execute(
            "INSERT INTO events SELECT (run_no << 32) + 1, run_no, 1, ? FROM runs "
            "WHERE run_id = 'r'",
            (tampered,),
        )
    conn.close()

    drawn = agentfsm("diagram", "--run", "r", "--store", str(path), cwd=tmp_path)
    rendered = agentfsm("diagram", "--run", "r", "--store", str(path), "-o", "r.svg", cwd=tmp_path)

    assert drawn.returncode == 0, drawn.stderr
    _dot_accepts(drawn.stdout, tmp_path)
    assert rendered.returncode == 0, rendered.stderr
    assert "x\\" in (tmp_path / "r.svg").read_text()


def test_counterexample_dot_never_reads_a_state_value_as_html(tmp_path: Path) -> None:
    hostile = "<IMG SRC='/etc/passwd'/>"
    step = Step(MachineName.RUN, "start", {}, {}, hostile, f"{hostile}\\")
    counterexample = Counterexample("I1", f"reached {hostile}", {}, steps=(step,))

    source = counterexample_dot(RUN_MACHINE, LOOP_MACHINE, counterexample)

    svg = _dot_accepts(source, tmp_path)
    assert "<image" not in svg.lower()
    assert hostile in html.unescape(svg)
