"""``agentfsm runs``, ``inspect`` and ``diagram --run`` as real subprocesses, on store files.

The stores are filled through the store API (`SQLiteStore.save` of a `Snapshot` and the
`Event`s the machines emitted), independently of the Agent's own store integration.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agentfsm import Agent, Event, Message, ScriptedModel, ToolCall, cli, tool
from agentfsm._runs_cli import describe, event_line
from agentfsm.cli import main
from agentfsm.diagrams import combined_diagram, path_counts, run_diagram
from agentfsm.fsm import AnyMachine, Emitter, RunData, loop_machine, run_machine
from agentfsm.states import MachineName
from agentfsm.states.json import JSONValue
from agentfsm.stores import Snapshot, SQLiteStore

CALL = ToolCall(id="call_1", name="book_table", arguments='{"city": "Paris"}')
ASK = ToolCall(id="call_9", name="ask_user", arguments='{"question": "Which day?"}')
HAS_CONVERSATION = "conversation" in {name.value for name in MachineName}


def agentfsm(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentfsm.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        check=False,
    )


Story = Callable[[AnyMachine, Callable[[], AnyMachine]], list[Message]]


def _save(store: SQLiteStore, run_id: str, story: Story, **config: int) -> list[Event]:
    data = RunData(run_id, **config)  # type: ignore[arg-type]
    log: list[Event] = []
    emitter = Emitter(run_id, listeners=[log.append], clock=lambda: 1_700_000_000.0)
    run = run_machine(data, emitter)
    messages = story(run, lambda: loop_machine(data, emitter))
    snapshot = Snapshot.from_data(data, messages, (), seq=len(log), version=1)
    store.save(snapshot, log, expected_version=None)
    return log


def _approval(run: AnyMachine, loop: Callable[[], AnyMachine]) -> list[Message]:
    run.send("start")
    run.send("submit", text="Book a table in Paris")
    loop().send("model_replied", tool_calls=1, needing_action=1)
    run.send("need_action", calls=["call_1"])
    return [Message.user("Book a table in Paris"), Message.assistant(tool_calls=(CALL,))]


def _question(run: AnyMachine, loop: Callable[[], AnyMachine]) -> list[Message]:
    run.send("start")
    run.send("submit", text="Book a table")
    loop().send("model_replied", tool_calls=1, asking_user=1)
    run.send("need_input", question="Which day?", calls=["call_9"])
    return [Message.user("Book a table"), Message.assistant(tool_calls=(ASK,))]


def _answered(run: AnyMachine, loop: Callable[[], AnyMachine]) -> list[Message]:
    run.send("start")
    run.send("submit", text="Weather?")
    turn = loop()
    turn.send("model_replied", tool_calls=1)
    turn.send("tools_finished")
    turn.send("model_replied", tool_calls=1)
    turn.send("tools_finished")
    turn.send("model_replied", tool_calls=0)
    run.send("complete")
    return [Message.user("Weather?"), Message.assistant("Sunny.")]


@pytest.fixture
def store_file(tmp_path: Path) -> Path:
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as store:
        _save(store, "r-approval", _approval, max_iterations=5)
        _save(store, "r-question", _question, max_turns=3)
        _save(store, "r-done", _answered)
    return path


def test_runs_lists_every_run_with_its_state_turn_seq_and_version(
    store_file: Path, tmp_path: Path
) -> None:
    done = agentfsm("runs", "--store", str(store_file), cwd=tmp_path)

    assert (done.returncode, done.stderr) == (0, "")
    header, *rows = done.stdout.splitlines()
    assert header.split() == ["run", "id", "state", "turn", "seq", "version", "origin"]
    assert [row.split() for row in rows] == [
        ["r-approval", "requires_action", "1", "4", "1", "—"],
        ["r-done", "completed", "1", "8", "1", "—"],
        ["r-question", "input_required", "1", "4", "1", "—"],
    ]


def test_runs_of_an_empty_store_says_so(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "empty.db").close()

    done = agentfsm("runs", "--store", "empty.db", cwd=tmp_path)

    assert (done.returncode, done.stdout) == (0, "no runs in 'empty.db'\n")


@pytest.mark.parametrize(
    "command",
    [["runs"], ["inspect", "r-1"], ["diagram", "--run", "r-1"]],
    ids=["runs", "inspect", "diagram"],
)
def test_a_missing_default_store_is_an_error_and_is_not_created(
    command: list[str], tmp_path: Path
) -> None:
    done = agentfsm(*command, cwd=tmp_path)

    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert "error: no store at '.agentfsm/runs.db' (no such file)" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_missing_named_store_is_an_error_and_is_not_created(tmp_path: Path) -> None:
    done = agentfsm("inspect", "r-1", "--store", "nowhere/runs.db", cwd=tmp_path)

    assert done.returncode == 1
    assert "no store at 'nowhere/runs.db'" in done.stderr
    assert not (tmp_path / "nowhere").exists()
    (tmp_path / "empty.db").touch()
    empty = agentfsm("runs", "--store", "empty.db", cwd=tmp_path)
    assert (empty.returncode, empty.stderr.count("\n")) == (1, 1)
    assert "no store at 'empty.db' (the file is empty)" in empty.stderr
    assert (tmp_path / "empty.db").stat().st_size == 0
    folder = agentfsm("runs", "--store", ".", cwd=tmp_path)
    assert (folder.returncode, folder.stderr.count("\n")) == (1, 1)
    assert "(it is a directory)" in folder.stderr


def test_the_default_store_is_agentfsm_runs_db_in_the_working_directory(
    store_file: Path, tmp_path: Path
) -> None:
    (tmp_path / ".agentfsm").mkdir()
    store_file.rename(tmp_path / ".agentfsm" / "runs.db")

    done = agentfsm("runs", cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert "r-approval" in done.stdout


def test_inspect_shows_states_counters_and_the_pending_calls_with_their_arguments(
    store_file: Path, tmp_path: Path
) -> None:
    done = agentfsm("inspect", "r-approval", "--store", str(store_file), cwd=tmp_path)

    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert lines[:7] == [
        "run          r-approval",
        "state        requires_action",
        "loop state   awaiting_action",
        "turn         1",
        "iteration    1 of 5",
        "version      1 (seq 4, 2 messages)",
        "pending      1 call",
    ]
    assert lines[7] == '  call_1  book_table({"city": "Paris"})'
    assert lines[8] == "last 4 of 4 events"
    assert lines[9].split() == ["1", "run", "start", "created", "→", "ready"]
    assert lines[12].split()[:6] == ["4", "run", "need_action", "busy", "→", "requires_action"]
    assert lines[12].endswith('calls=["call_1"]')


def test_inspect_shows_the_question_and_the_turn_cap(store_file: Path, tmp_path: Path) -> None:
    done = agentfsm("inspect", "r-question", "--store", str(store_file), cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert "turn         1 of 3\n" in done.stdout
    assert "question     Which day?\n" in done.stdout
    assert '  call_9  ask_user({"question": "Which day?"})\n' in done.stdout


def test_inspect_events_option_limits_the_events_listed(store_file: Path, tmp_path: Path) -> None:
    two = agentfsm("inspect", "r-done", "--store", str(store_file), "--events", "2", cwd=tmp_path)
    none = agentfsm("inspect", "r-done", "--store", str(store_file), "--events", "0", cwd=tmp_path)

    assert "state        completed (answered)\n" in two.stdout
    assert "loop state   answered\n" in two.stdout
    assert "pending      none\n" in two.stdout
    tail = two.stdout.split("last 2 of 8 events\n")[1].splitlines()
    assert [line.split()[:3] for line in tail] == [
        ["7", "loop", "model_replied"],
        ["8", "run", "complete"],
    ]
    assert none.returncode == 0
    assert "events" not in none.stdout
    bad = agentfsm("inspect", "r-done", "--store", str(store_file), "--events", "-1", cwd=tmp_path)
    assert bad.returncode == 2
    assert "expected a whole number >= 0, got '-1'" in bad.stderr


@pytest.mark.parametrize(
    "command",
    [["inspect", "r-nope"], ["diagram", "--run", "r-nope"]],
    ids=["inspect", "diagram"],
)
def test_an_unknown_run_is_one_line_saying_how_to_list_the_runs(
    command: list[str], store_file: Path, tmp_path: Path
) -> None:
    done = agentfsm(*command, "--store", str(store_file), cwd=tmp_path)

    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"agentfsm {command[0]}: error: no run 'r-nope' in {str(store_file)!r}; "
        f"'agentfsm runs --store {store_file}' lists its runs\n"
    )


def test_a_file_that_is_not_a_database_is_the_stores_error_on_one_line(tmp_path: Path) -> None:
    (tmp_path / "junk.db").write_bytes(b"this is not sqlite\n" * 100)

    for command in (["runs"], ["inspect", "r-1"], ["diagram", "--run", "r-1"]):
        done = agentfsm(*command, "--store", "junk.db", cwd=tmp_path)
        assert done.returncode == 1, command
        assert done.stderr.count("\n") == 1, done.stderr
        assert "Traceback" not in done.stderr
        assert "cannot read 'junk.db': it is not a readable SQLite database" in done.stderr


def test_a_damaged_snapshot_is_the_stores_error_on_one_line(
    store_file: Path, tmp_path: Path
) -> None:
    with sqlite3.connect(store_file) as conn:
        conn.execute("UPDATE runs SET snapshot = '{\"run_id\": 3}' WHERE run_id = 'r-done'")
    conn.close()

    done = agentfsm("inspect", "r-done", "--store", str(store_file), cwd=tmp_path)

    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert "its snapshot is not a valid Snapshot" in done.stderr


def _stored(store_file: Path, run_id: str) -> tuple[Snapshot, list[Event]]:
    with SQLiteStore(store_file) as store:
        snapshot = store.load(run_id)
        assert snapshot is not None
        return snapshot, store.events(run_id)


def test_diagram_run_writes_the_runs_path_as_dot_to_stdout(
    store_file: Path, tmp_path: Path
) -> None:
    done = agentfsm("diagram", "--run", "r-done", "--store", str(store_file), cwd=tmp_path)

    assert (done.returncode, done.stderr) == (0, "")
    snapshot, events = _stored(store_file, "r-done")
    assert done.stdout == combined_diagram(snapshot, events)
    assert 'label="tools_finished\\n[below_max_iterations]\\n2x"' in done.stdout
    assert 'class="state current"' in done.stdout  # run.completed
    assert done.stdout != combined_diagram()


def test_diagram_run_writes_the_chosen_view_to_the_file(store_file: Path, tmp_path: Path) -> None:
    done = agentfsm(
        "diagram",
        "run",
        "--run",
        "r-approval",
        "--store",
        str(store_file),
        "-o",
        "r.dot",
        cwd=tmp_path,
    )

    assert (done.returncode, done.stdout) == (0, "wrote r.dot\n")
    snapshot, events = _stored(store_file, "r-approval")
    assert (tmp_path / "r.dot").read_text() == run_diagram(snapshot, events)
    assert 'label="need_action\\n[has_calls]\\n1x"' in (tmp_path / "r.dot").read_text()


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' missing")
def test_diagram_run_renders_svg(store_file: Path, tmp_path: Path) -> None:
    done = agentfsm(
        "diagram", "--run", "r-done", "--store", str(store_file), "-o", "r.svg", cwd=tmp_path
    )

    assert done.returncode == 0, done.stderr
    svg = (tmp_path / "r.svg").read_text()
    assert "2x" in svg
    assert "current" in svg


def test_diagram_run_errors_are_one_line(store_file: Path, tmp_path: Path) -> None:
    done = agentfsm(
        "diagram", "--run", "r-done", "--store", str(store_file), "-o", "r.gif", cwd=tmp_path
    )

    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert "unknown suffix '.gif'" in done.stderr


def test_diagram_store_without_run_is_a_usage_error(store_file: Path, tmp_path: Path) -> None:
    done = agentfsm("diagram", "--store", str(store_file), "-o", "x.dot", cwd=tmp_path)

    assert done.returncode == 2
    assert "--store needs --run RUN_ID" in done.stderr
    assert not (tmp_path / "x.dot").exists()


def _record(seq: int, event: str, **data: JSONValue) -> Event:
    # A record of the conversation (not a transition); built without validation, since
    # MachineName may not have its member yet.
    return Event.model_construct(
        seq=seq,
        run_id="r",
        machine="conversation",
        event=event,
        source="busy",
        target="busy",
        at=0.0,
        data=data,
    )


def test_conversation_records_are_listed_without_an_arrow_and_not_drawn() -> None:
    submit = Event(
        seq=1,
        run_id="r",
        machine=MachineName.RUN,
        event="submit",
        source="ready",
        target="busy",
        at=0.0,
        data={"text": "hi"},
    )
    record = _record(2, "message", role="user", content="x" * 200)

    assert event_line(submit) == '    1  run          submit          ready → busy  text="hi"'
    line = event_line(record)
    assert line.startswith('    2  conversation message         role="user", content="xxx')
    assert "→" not in line
    assert "↺" not in line
    assert line.endswith("…")
    assert len(line) == len("    2  conversation message         ") + 100
    calls = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "name": "f"}]}
    told = {"role": "tool", "content": "Sunny", "tool_call_id": "c1"}
    assert event_line(_record(4, "message", message=calls, deadline=None)).endswith(
        "message         message=assistant calling f"
    )
    assert event_line(_record(5, "message", message=told)).endswith('message=tool "Sunny"')
    assert path_counts([submit, record, _record(3, "reset")]) == {
        ("run", "submit", "ready", "busy"): 1
    }
    assert combined_diagram(events=[submit, record]) == combined_diagram(events=[submit])


def test_describe_names_a_pending_call_missing_from_the_conversation() -> None:
    snapshot = Snapshot(
        run_id="r",
        state="requires_action",
        loop_state="awaiting_action",
        turn=1,
        iteration=1,
        pending=("call_x",),
        paused_from=None,
        deadline=1_700_000_000.0,
        queued=("later",),
    )

    lines = describe(snapshot, [], last=10)

    assert "  call_x  (not in the conversation)" in lines
    assert "deadline     2023-11-14T22:13:20Z" in lines
    assert "queued       1 input(s)" in lines
    assert lines[-1] == "last 0 of 0 events"


@pytest.mark.skipif(not HAS_CONVERSATION, reason="MachineName has no 'conversation' yet")
def test_stored_conversation_records_show_in_inspect_and_stay_off_the_diagram(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as store:
        log = _save(store, "r", _answered)
        record = Event(
            seq=len(log) + 1,
            run_id="r",
            machine=MachineName("conversation"),
            event="message",
            source="completed",
            target="completed",
            at=0.0,
            data={"role": "assistant"},
        )
        snapshot = store.load("r")
        assert snapshot is not None
        moved = snapshot.model_copy(update={"seq": record.seq, "version": 2})
        store.save(moved, [record], expected_version=1)

    shown = agentfsm("inspect", "r", "--store", str(path), cwd=tmp_path)
    drawn = agentfsm("diagram", "--run", "r", "--store", str(path), cwd=tmp_path)

    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[-1].split() == [
        "9",
        "conversation",
        "message",
        'role="assistant"',
    ]
    assert drawn.returncode == 0, drawn.stderr
    assert "not in the table" not in drawn.stdout


def test_a_reader_that_goes_away_ends_the_command_without_a_traceback(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "agentfsm.cli", "table", "run"]
    with subprocess.Popen(
        command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as process:
        assert process.stdout is not None
        process.stdout.close()  # no reader left: the command's first write fails (EPIPE)
        _, err = process.communicate(timeout=60)

    assert process.returncode == 1
    assert err == b""


# The same commands in process (so coverage sees them): exit code, stdout and stderr.


@pytest.mark.parametrize(
    ("args", "code", "out", "err"),
    [
        (["runs"], 0, "r-approval  requires_action     1      4        1", ""),
        (["runs", "--store", "empty.db"], 0, "no runs in 'empty.db'", ""),
        (["runs", "--store", "none.db"], 1, "", "error: no store at 'none.db' (no such file)"),
        (["runs", "--store", "junk.db"], 1, "", "it is not a readable SQLite database"),
        (["inspect", "r-question"], 0, "question     Which day?", ""),
        (["inspect", "r-nope"], 1, "", "'agentfsm runs' lists its runs"),
        (["inspect", "r-done", "--events", "1"], 0, "last 1 of 8 events", ""),
        (["diagram", "run", "-o", "machine.dot"], 0, "wrote machine.dot", ""),
        (["diagram", "run", "-o", "machine.jpg"], 1, "", "unknown suffix '.jpg'"),
        (["inspect", "r-1", "--store", "junk.db"], 1, "", "not a readable SQLite database"),
        (["diagram", "--run", "r-done"], 0, "digraph agentfsm {", ""),
        (["diagram", "loop", "--run", "r-done", "-o", "l.dot"], 0, "wrote l.dot", ""),
        (["diagram", "--run", "r-done", "-o", "l.gif"], 1, "", "unknown suffix '.gif'"),
        (["diagram", "--run", "r-nope"], 1, "", "error: no run 'r-nope'"),
        (["diagram", "--run", "r-1", "--store", "junk.db"], 1, "", "not a readable SQLite"),
    ],
)
def test_store_commands_in_process(
    args: list[str],
    code: int,
    out: str,
    err: str,
    store_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / ".agentfsm").mkdir()
    store_file.rename(tmp_path / ".agentfsm" / "runs.db")
    SQLiteStore(tmp_path / "empty.db").close()
    (tmp_path / "junk.db").write_bytes(b"junk" * 100)
    monkeypatch.chdir(tmp_path)

    assert main(args) == code

    printed = capsys.readouterr()
    assert out in printed.out
    assert err in printed.err
    assert printed.err.count("\n") == (1 if code else 0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["diagram", "--store", "x.db", "-o", "x.dot"], "--store needs --run RUN_ID"),
        (["diagram", "run"], "the following arguments are required: -o/--output"),
        (["inspect", "r", "--events", "many"], "expected a whole number >= 0, got 'many'"),
    ],
)
def test_usage_errors_in_process_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(args)

    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_a_broken_pipe_in_process_returns_1_and_silences_stdout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def closed_reader(argv: object) -> int:
        raise BrokenPipeError

    sink = (tmp_path / "stdout").open("w")
    monkeypatch.setattr(cli, "_main", closed_reader)
    monkeypatch.setattr(sys, "stdout", sink)

    assert cli.main(["table", "run"]) == 1
    sink.close()


def test_a_run_saved_by_an_agent_is_listed_inspected_and_drawn(tmp_path: Path) -> None:
    @tool
    def weather(city: str) -> str:
        """Today's weather in a city."""
        return f"sunny in {city}"

    @tool(policy="require_approval")
    def book(city: str) -> str:
        """Book a table."""
        return f"booked in {city}"

    model = ScriptedModel().tool_call("weather", city="Oslo").tool_call("book", city="Oslo")
    with SQLiteStore(tmp_path / ".agentfsm" / "runs.db") as store:
        agent = Agent(model, [weather, book], run_id="oslo", store=store)
        agent.start()
        assert agent.submit("Weather, then book").state == "requires_action"

    listed = agentfsm("runs", cwd=tmp_path)
    shown = agentfsm("inspect", "oslo", "--events", "20", cwd=tmp_path)
    drawn = agentfsm("diagram", "--run", "oslo", cwd=tmp_path)

    assert listed.stdout.splitlines()[1].split()[:3] == ["oslo", "requires_action", "1"]
    assert '  call_2  book({"city": "Oslo"})' in shown.stdout.splitlines()
    records = [line for line in shown.stdout.splitlines() if " conversation " in line]
    assert records
    assert not [line for line in records if "→" in line or "↺" in line]
    assert drawn.returncode == 0, drawn.stderr
    assert "not in the table" not in drawn.stdout
    assert 'label="model_replied\\n[may_run_now]\\n1x"' in drawn.stdout
