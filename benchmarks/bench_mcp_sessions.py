"""A 9-call turn against a stdio MCP server: processes started, and wall time.

One Agent turn of 4 rounds (3 + 2 + 2 + 2 calls of the stateful counter server of
tests/mcp/counter.py, over stdio, on a scripted model), after the listing the turn starts
with. The server notes each process start in a file: each row says how many processes the
turn started, its wall time (median of ``REPEATS`` turns, each with a new `MCPServer`, closed
after), and the counts the tools returned (a server that keeps its state counts 1..9).

Two rows, interleaved turn by turn: the session kept (agentfsm's way), and the baseline of a
session per operation (what agentfsm did before 2026-12-06: its hooks close the session
after the listing and after each call, so each operation starts the server anew).

Run: ``.venv/bin/python benchmarks/bench_mcp_sessions.py [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentfsm import Agent, ScriptedModel
from agentfsm.tools.mcp import MCPServer

ROOT = Path(__file__).resolve().parent.parent

ROUNDS = (3, 2, 2, 2)
REPEATS = 5
COUNTER = ROOT / "tests" / "mcp" / "counter.py"


def one_turn(starts: Path, *, per_operation: bool) -> tuple[float, int, list[str]]:
    """Seconds for one turn, the processes it started, and the tools' answers."""
    model = ScriptedModel()
    for calls in ROUNDS:
        model = model.tool_calls(*[("c__bump", {})] * calls)
    model = model.text("Done.")
    server = MCPServer("c", [sys.executable, str(COUNTER), str(starts)], trusted=True)

    def drop(context: object) -> None:
        server.close()  # (the next operation opens a new session: a new process)

    hooks = {"before_tools": drop, "after_each_tool": drop} if per_operation else None
    agent = Agent(model, mcp_servers=[server], hooks=hooks)
    agent.start()
    begun = time.perf_counter()
    outcome = agent.submit("bump nine times")
    seconds = time.perf_counter() - begun
    assert outcome.reply == "Done."
    agent.shutdown()
    close = getattr(server, "close", None)
    if close is not None:
        close()
    processes = len(starts.read_text().split())
    answers = [str(m.content) for m in agent.messages if m.role == "tool"]
    return seconds, processes, answers


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", type=Path)
    arguments = parser.parse_args()
    logging.disable(logging.INFO)
    rows = {}
    with tempfile.TemporaryDirectory() as folder:
        samples: dict[str, tuple[list[float], set[int], list[str]]] = {
            name: ([], set(), []) for name in ("kept", "per_operation")
        }
        for repeat in range(REPEATS):
            for name, (times, processes, answers) in samples.items():
                starts = Path(folder) / f"starts-{name}-{repeat}"
                starts.touch()
                seconds, started, said = one_turn(starts, per_operation=name != "kept")
                times.append(seconds)
                processes.add(started)
                answers[:] = said
        for name, (times, processes, answers) in samples.items():
            rows[name] = {
                "calls": sum(ROUNDS),
                "rounds": len(ROUNDS),
                "processes_started": sorted(processes),
                "wall_seconds_median": round(statistics.median(times), 3),
                "answers": answers,
            }
    print(json.dumps(rows))
    if arguments.json is not None:
        arguments.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
