"""``agentfsm ui``: the real command, serving a store; and its errors."""

from __future__ import annotations

import ast
import signal
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


def _ui(store: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    """``agentfsm ui`` in a subprocess (as the installed script runs it); its printed URL."""
    script = "import sys; from agentfsm.cli import main; sys.exit(main())"
    command = [sys.executable, "-c", script, "ui", "--store", str(store), "--port", "0"]
    server = subprocess.Popen(
        [*command, *extra], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    first = server.stdout.readline()
    assert first.startswith(f"agentfsm ui: serving {store} at http://127.0.0.1:"), first
    return server, first.split(" at ")[1].strip()


def test_agentfsm_ui_serves_the_store_on_the_url_it_prints_token_included(
    store_path: Path,
) -> None:
    with SQLiteStore(store_path) as store:
        travel_agent("trip", store).start()
    server, url = _ui(store_path, "--agent", "tests.serve.travel:travel_agent")
    try:
        base, _, token = url.partition("?token=")
        assert len(token) >= 32
        assert httpx.get(base + "api/runs", timeout=10).status_code == 403
        with httpx.Client(base_url=base, timeout=10, follow_redirects=True) as browser:
            assert browser.get(url).status_code == 200  # the cookie, then the page
            runs = browser.get("api/runs").json()["runs"]
            assert [(run["run_id"], run["state"]) for run in runs] == [("trip", "ready")]
        auth = {"Authorization": f"token {token}"}
        answer = httpx.post(
            base + "api/runs/trip/actions", json={"action": "pause"}, headers=auth, timeout=10
        )
        assert answer.json()["state"] == "paused"
    finally:
        server.terminate()
        server.communicate(timeout=10)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_agentfsm_ui_stops_cleanly_on_a_signal_with_a_page_open(
    store_path: Path, sig: signal.Signals
) -> None:
    server, url = _ui(store_path, "--grace", "5")
    try:
        base, _, token = url.partition("?token=")
        auth = {"Authorization": f"token {token}"}
        with httpx.stream("GET", base + "api/stream/runs", headers=auth, timeout=10) as stream:
            lines = stream.iter_lines()
            assert next(lines) == "event: runs"  # a page is live: its stream is open
            server.send_signal(sig)
            out, err = server.communicate(timeout=15)
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()
    assert (server.returncode, err) == (0, "")
    assert out.splitlines()[-1] == "agentfsm ui: stopped"


def test_no_token_is_refused_off_loopback_and_warned_about_on_it(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    off_loopback = ["--host", "0.0.0.0", "--port", "0", "--no-token"]
    assert main(["ui", "--store", str(store_path), *off_loopback]) == 1
    assert "only allowed on a loopback address" in capsys.readouterr().err
    server, url = _ui(store_path, "--no-token")
    try:
        assert "?token=" not in url
        assert httpx.get(url + "api/runs", timeout=10).status_code == 200
        foreign = httpx.get(url + "api/runs", headers={"Host": "evil.example"}, timeout=10)
        assert foreign.status_code == 403  # the Host is checked all the same
    finally:
        server.terminate()
        _, err = server.communicate(timeout=10)
    assert "WARNING: --no-token" in err


def test_ui_imports_the_factory_from_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "myviewagent.py").write_text("def make(run_id, store):\n    return None\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    try:
        assert load_factory("myviewagent:make").__module__ == "myviewagent"
    finally:
        sys.modules.pop("myviewagent", None)


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
    assert main(["ui", "--store", str(missing), "--port", "0"]) == 1
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
