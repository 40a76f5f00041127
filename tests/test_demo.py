"""``agentfsm demo`` from a clean folder: every state, two processes, real SVGs."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from agentfsm import SQLiteStore, replay
from agentfsm._demo import RUN_ID, main
from agentfsm.states import LoopState, RunState, ToolCall
from agentfsm.testing import LoopbackOpenAIServer, Reply, assert_history_valid
from agentfsm.verify import check_log

EVENT_LINE = re.compile(r"^\s*(\d+)\s+(run|loop)\s+(\w+)\s+(\w+) [→↺] (\w+)", re.MULTILINE)
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The demo run once, as a user runs it: the console script, in an empty folder."""
    here = tmp_path_factory.mktemp("clean")
    script = Path(sys.executable).with_name("agentfsm")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "agentfsm.cli"]
    done = subprocess.run(
        [*command, "demo"], cwd=here, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    (folder,) = here.iterdir()
    return done.stdout, folder


def test_the_transcript_passes_through_every_run_state(demo: tuple[str, Path]) -> None:
    out, _ = demo
    lines = EVENT_LINE.findall(out)
    run_states = {s for _, m, _, src, dst in lines if m == "run" for s in (src, dst)}
    loop_states = {dst for _, m, _, _, dst in lines if m == "loop"}
    assert run_states == set(RunState)
    assert {"acting", "awaiting_action", "awaiting_input", "answered", "aborted"} <= loop_states
    seqs = [int(seq) for seq, *_ in lines]
    assert seqs == sorted(seqs)
    assert "IllegalTransitionError: event 'provide_input' is not allowed" in out
    for said in ("user: What's the weather", "tool weather: sunny", "❓ For how many guests?"):
        assert said in out


def test_the_answers_are_printed_as_they_stream(demo: tuple[str, Path]) -> None:
    out, folder = demo
    streamed = re.findall(r"✍  assistant \(streaming\): (.*)", out)
    with SQLiteStore(folder / "runs.db") as store:
        stored = store.load(RUN_ID)
    assert stored is not None
    answers = [m.content for m in stored.messages if m.role == "assistant" and not m.tool_calls]
    assert streamed
    assert streamed == answers[: len(streamed)]
    assert streamed[0].startswith("Here is the weather")


def test_the_pause_is_resumed_by_another_process(demo: tuple[str, Path]) -> None:
    out, _ = demo
    pids = re.findall(r"process (\d+) (?:starts|restored)", out)
    assert len(pids) == 2
    assert pids[0] != pids[1]
    before, after = out.split("restored", 1)
    assert "requires_action → paused" in before
    assert "paused → requires_action" in after
    assert "hotel booked in Rome for 2 guests" in after


def test_the_folder_has_the_store_and_five_readable_svgs(demo: tuple[str, Path]) -> None:
    out, folder = demo
    assert f"diagrams and the store are in {folder}" in out
    names = {p.name for p in folder.glob("*.svg")}
    assert names == {
        "run-lifecycle.svg",
        "turn-loop.svg",
        "combined.svg",
        "live-at-pause.svg",
        "run-path.svg",
    }
    for path in folder.glob("*.svg"):
        root = ET.parse(path).getroot()  # well-formed XML
        assert root.tag == f"{SVG}svg"
        text = {t.text for t in root.iter(f"{SVG}text")}
        assert {"thinking", "acting"} <= text or {"created", "shutdown"} <= text
    live = ET.parse(folder / "live-at-pause.svg").getroot()
    current = [g for g in live.iter(f"{SVG}g") if "current" in (g.get("class") or "")]
    labels = {t.text for g in current for t in g.iter(f"{SVG}text")}
    assert {"paused", "awaiting_action"} <= labels


def test_the_stored_run_is_whole_legal_and_replays(demo: tuple[str, Path]) -> None:
    _, folder = demo
    with SQLiteStore(folder / "runs.db") as store:
        stored = store.load(RUN_ID)
        events = store.events(RUN_ID)
    assert stored is not None
    assert (stored.state, stored.turn, stored.loop_state) == ("shutdown", 4, LoopState.ANSWERED)
    assert_history_valid(stored.messages)
    replay(events, expected=stored)
    assert check_log(events, config={"max_iterations": 4}).ok


def test_the_resume_entry_point_refuses_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["resume"]) == 2
    assert "usage: python -m agentfsm._demo resume FOLDER" in capsys.readouterr().err


def test_with_a_key_the_demo_runs_on_a_real_model_over_http(tmp_path: Path) -> None:
    def call(call_id: str, name: str, arguments: str) -> ToolCall:
        return ToolCall(id=call_id, name=name, arguments=arguments)

    replies = [
        Reply(tool_calls=(call("a", "weather", '{"city": "Paris"}'),)),
        Reply(content="Sunny in Paris."),
        Reply(tool_calls=(call("b", "ask_user", '{"question": "How many guests?"}'),)),
        Reply(tool_calls=(call("c", "book_hotel", '{"city": "Rome", "guests": 2}'),)),
        Reply(content="Booked."),
        Reply(tool_calls=(call("d", "book_taxi", '{"city": "Rome"}'),)),
        Reply(content="Bye."),
    ]
    with LoopbackOpenAIServer(replies) as server:
        env = {**os.environ, "OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": server.url}
        done = subprocess.run(
            [sys.executable, "-m", "agentfsm.cli", "demo", "--model", "openai:gpt-test"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert server.remaining == 0  # both processes asked the loopback server
        assert {(r.body or {}).get("model") for r in server.requests} == {"gpt-test"}
    assert "model: openai:gpt-test" in done.stdout
    assert "💬 assistant: Booked." in done.stdout.split("restored", 1)[1]
    assert "completed → shutdown" in done.stdout


def test_the_demo_ends_with_the_command_that_opens_the_live_view(demo: tuple[str, Path]) -> None:
    from starlette.testclient import TestClient

    from agentfsm.serve import create_app

    out, folder = demo
    words = shlex.split(out.splitlines()[-1].removeprefix("watch it live: "))
    assert Path(words[0]).name == "agentfsm"
    assert words[1:3] == ["ui", "--store"]
    store = folder.parent / words[3]
    assert store.resolve() == (folder / "runs.db").resolve()
    with TestClient(create_app(store)) as client:
        runs = client.get("/api/runs").json()["runs"]
    assert [(run["run_id"], run["state"]) for run in runs] == [(RUN_ID, "shutdown")]


def test_the_printed_command_is_the_one_that_started_the_demo_when_path_has_none(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from agentfsm._demo import command_name

    script = tmp_path / "venv" / "bin" / "agentfsm"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(script), "demo"])
    monkeypatch.setenv("PATH", str(tmp_path / "elsewhere"))
    assert command_name() == str(script)

    monkeypatch.setenv("PATH", str(script.parent))
    assert command_name() == "agentfsm"

    monkeypatch.setattr(sys, "argv", ["python", "-m", "agentfsm"])
    assert command_name() == "agentfsm"
