"""``agentfsm serve-a2a`` as a real process: it serves a factory from the current directory."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from a2a.helpers.proto_helpers import get_text_parts
from a2a.types import TaskState

from agentfsm import SQLiteStore
from agentfsm.cli import main
from tests.serve.a2a_support import client, collect, run, text_message

FACTORY = """
from agentfsm import Agent, ScriptedModel


def make_agent(run_id, store):
    model = ScriptedModel().text("Hello from the CLI.")
    return Agent(model, run_id=run_id, store=store)
"""


def test_serve_a2a_serves_the_factory_of_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / "myagent.py").write_text(textwrap.dedent(FACTORY))
    command = [sys.executable, "-m", "agentfsm.cli", "serve-a2a", "--agent", "myagent:make_agent"]
    command += ["--store", "runs.db", "--port", "0"]
    process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("serving 'agentfsm' over A2A at http://127.0.0.1:"), first
        url = first.split(" at ")[1].split(" ")[0]

        async def talk() -> list[str]:
            a2a = await client(url)
            (response,) = await collect(a2a, text_message("Hi", context_id="cli-run"))
            assert response.task.status.state == TaskState.TASK_STATE_COMPLETED
            return get_text_parts(response.task.artifacts[0].parts)

        assert run(talk()) == ["Hello from the CLI."]
    finally:
        process.terminate()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()
    with SQLiteStore(tmp_path / "runs.db") as store:
        snapshot = store.load("cli-run")
        assert snapshot is not None
        assert snapshot.state == "completed"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("myagent", "expected MODULE:FUNCTION"),
        ("nosuchmodule:make", "cannot import 'nosuchmodule'"),
        ("myagent:missing", "'myagent' has no callable 'missing'"),
    ],
)
def test_serve_a2a_names_a_bad_factory(
    spec: str,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "myagent.py").write_text(textwrap.dedent(FACTORY))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "myagent", raising=False)
    try:
        assert main(["serve-a2a", "--agent", spec, "--store", "runs.db"]) == 2
    finally:
        sys.modules.pop("myagent", None)
    assert message in capsys.readouterr().err
    assert not (tmp_path / "runs.db").exists()  # nothing was created


def test_serve_a2a_says_when_its_port_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "myagent.py").write_text(textwrap.dedent(FACTORY))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        try:
            code = main(["serve-a2a", "--agent", "myagent:make_agent", "--port", port])
        finally:
            sys.modules.pop("myagent", None)
    assert code == 1
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


SLOW_FACTORY = """
import asyncio

from agentfsm import Agent
from agentfsm.llm.base import ModelResponse


class SlowModel:
    name = "slow"

    async def complete(self, messages, tools, **_):
        with open("started", "w"):
            pass
        await asyncio.sleep(1.0)
        return ModelResponse(content="slept well")


def make_agent(run_id, store):
    return Agent(SlowModel(), run_id=run_id, store=store)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_serve_a2a_finishes_the_task_in_flight_then_exits_0_on_a_signal(
    tmp_path: Path, sig: signal.Signals
) -> None:
    (tmp_path / "slowagent.py").write_text(textwrap.dedent(SLOW_FACTORY))
    script = "import sys; from agentfsm.cli import main; sys.exit(main())"
    command = [sys.executable, "-c", script, "serve-a2a", "--agent", "slowagent:make_agent"]
    command += ["--store", "runs.db", "--port", "0", "--grace", "5"]
    process = subprocess.Popen(
        command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().split(" at ")[1].split(" ")[0]

        streaming = sig == signal.SIGTERM  # (a stream in flight with one, a send with the other)

        async def talk() -> list[str]:
            a2a = await client(url, streaming=streaming)
            sent = asyncio.ensure_future(collect(a2a, text_message("Hi", context_id="busy")))
            deadline = time.monotonic() + 30
            while not (tmp_path / "started").exists():  # the model call is in flight
                assert time.monotonic() < deadline, "the model was never called"
                await asyncio.sleep(0.02)
            process.send_signal(sig)
            responses = await sent
            last = responses[-1]
            if streaming:  # the stream went on to its terminal event
                assert last.status_update.status.state == TaskState.TASK_STATE_COMPLETED
                return get_text_parts(responses[-2].artifact_update.artifact.parts)
            assert last.task.status.state == TaskState.TASK_STATE_COMPLETED
            return get_text_parts(last.task.artifacts[0].parts)

        assert run(talk()) == ["slept well"]  # the request in flight was let finish
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert "Traceback" not in err, err
    assert out.splitlines()[-1] == "agentfsm serve-a2a: stopped"
