"""``agentfsm ui``: the real command, serving a store; and its errors."""

from __future__ import annotations

import ast
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from agentfsm import SQLiteStore
from agentfsm.cli import main
from agentfsm.serve.command import UICommandError, _bind, load_factory
from tests.serve.travel import travel_agent

ROOT = Path(__file__).resolve().parents[2]


def test_agentfsm_ui_serves_the_store_on_the_port_it_prints(store_path: Path) -> None:
    with SQLiteStore(store_path) as store:
        travel_agent("trip", store).start()
    command = [sys.executable, "-m", "agentfsm.cli", "ui", "--store", str(store_path)]
    server = subprocess.Popen(
        [*command, "--port", "0", "--agent", "tests.serve.travel:travel_agent"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        assert first.startswith(f"agentfsm ui: serving {store_path} at http://127.0.0.1:")
        url = first.split(" at ")[1].strip()
        runs = httpx.get(url + "api/runs", timeout=10).json()["runs"]
        assert [(run["run_id"], run["state"]) for run in runs] == [("trip", "ready")]
        answer = httpx.post(url + "api/runs/trip/actions", json={"action": "pause"}, timeout=10)
        assert answer.json()["state"] == "paused"
    finally:
        server.terminate()
        server.communicate(timeout=10)


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        pytest.param(["--agent", "nocolon"], "expected MODULE:FUNCTION", id="spec"),
        pytest.param(["--agent", "no_such_module_x:f"], "cannot import", id="module"),
        pytest.param(["--agent", "tests.serve.travel:nothing"], "no callable", id="callable"),
        pytest.param(["--host", "203.0.113.7"], "cannot listen on 203.0.113.7", id="host"),
    ],
)
def test_agentfsm_ui_says_what_is_wrong(
    store_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], words: str
) -> None:
    assert main(["ui", "--store", str(store_path), "--port", "0", *extra]) == 1
    err = capsys.readouterr().err
    assert err.startswith("agentfsm ui: error: ")
    assert words in err


def test_agentfsm_ui_never_makes_a_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "typo.db"
    assert main(["ui", "--store", str(missing)]) == 1
    assert "no run store at" in capsys.readouterr().err
    assert not missing.exists()


def test_without_the_ui_extra_the_command_says_how_to_install_it(
    store_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "agentfsm.serve.command", None)
    assert main(["ui", "--store", str(store_path)]) == 1
    assert "pip install 'agentfsm[ui]'" in capsys.readouterr().err


def test_load_factory_returns_the_named_function() -> None:
    assert load_factory("tests.serve.travel:travel_agent") is travel_agent
    with pytest.raises(UICommandError, match="'x:'"):
        load_factory("x:")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_nothing_below_serve_imports_it_nor_its_web_libraries() -> None:
    package = ROOT / "agentfsm"
    for path in package.rglob("*.py"):
        if path.parent.name == "serve" or path.name == "cli.py":
            continue
        bad = {
            name
            for name in _imports(path)
            if name.startswith(("agentfsm.serve", "starlette", "uvicorn", "sse_starlette"))
        }
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_the_port_printed_already_takes_connections() -> None:
    # Bound *and* listening before the URL is printed: a client that connects at once
    # waits in the backlog for uvicorn instead of being refused.
    with _bind("127.0.0.1", 0) as sock:
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 1
        socket.create_connection(sock.getsockname()[:2], timeout=5).close()
