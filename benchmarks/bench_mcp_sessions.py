"""A 9-call turn against a stdio MCP server: processes started, and wall time.

One Agent turn of 4 rounds (3 + 2 + 2 + 2 calls of the stateful counter server of
tests/mcp/counter.py, over stdio, on a scripted model), after the listing the turn starts
with. The server notes each process start in a file: the row says how many processes the
turn started, its wall time (median of ``REPEATS`` turns, each with a new `MCPServer`, closed
after), and the counts the tools returned (a server that keeps its state counts 1..9).

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


def one_turn(starts: Path) -> tuple[float, int, list[str]]:
    """Seconds for one turn, the processes it started, and the tools' answers."""
    model = ScriptedModel()
    for calls in ROUNDS:
        model = model.tool_calls(*[("c__bump", {})] * calls)
    model = model.text("Done.")
    server = MCPServer("c", [sys.executable, str(COUNTER), str(starts)], trusted=True)
    agent = Agent(model, mcp_servers=[server])
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
    times, processes, answers = [], set(), []
    with tempfile.TemporaryDirectory() as folder:
        for repeat in range(REPEATS):
            starts = Path(folder) / f"starts-{repeat}"
            starts.touch()
            seconds, started, answers = one_turn(starts)
            times.append(seconds)
            processes.add(started)
    row = {
        "calls": sum(ROUNDS),
        "rounds": len(ROUNDS),
        "processes_started": sorted(processes),
        "wall_seconds_median": round(statistics.median(times), 3),
        "answers": answers,
    }
    print(json.dumps(row))
    if arguments.json is not None:
        arguments.json.write_text(json.dumps(row, indent=2) + "\n")


if __name__ == "__main__":
    main()
