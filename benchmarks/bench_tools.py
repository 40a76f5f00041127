"""µs of ToolSystem overhead per tool call, against a hand-written loop doing the same work.

The work per call: a no-op tool with a 5-property schema and valid arguments. The
hand-written loop does only what any careful loop must: ``json.loads`` the arguments,
validate them with a ``Draft202012Validator`` built once and reused, and call the function.
The ToolSystem does that and everything I9 and I7 ask for besides (enablement, policy,
limits, conversion to the body's types, a `ToolResult`, a tool message). Both run in the
same process, interleaved, medians of several repetitions; the ratio is what matters.

Run: ``.venv/bin/python benchmarks/bench_tools.py``.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jsonschema import Draft202012Validator
from pydantic import Field

from agentfsm.states.messages import ToolCall
from agentfsm.tools import Tool, ToolContext, ToolSystem

REPEATS = 15
CALLS = 200  # per repetition and candidate
ROUND = 8  # calls per round, as a model might ask for at once
ARGUMENTS = '{"city": "Paris", "days": 3, "metric": true, "scale": 1.5, "lang": "fr"}'


def forecast(
    city: str,
    days: Annotated[int, Field(ge=1, le=14)],
    metric: bool = True,
    scale: float = 1.0,
    lang: str = "en",
) -> str:
    """A no-op tool with five parameters."""
    return "ok"


TOOL = Tool(forecast)
SCHEMA = TOOL.parameters
CONTEXT = ToolContext(run_id="bench")
CALL_LIST = [ToolCall(id=f"call-{i}", name="forecast", arguments=ARGUMENTS) for i in range(CALLS)]


def hand_written() -> float:
    validator = Draft202012Validator(SCHEMA)
    start = time.perf_counter()
    for call in CALL_LIST:
        arguments = json.loads(call.arguments)
        error = next(validator.iter_errors(arguments), None)
        if error is None:
            forecast(**arguments)
    return time.perf_counter() - start


def tool_system_awaited() -> float:
    system = ToolSystem([TOOL])

    async def rounds() -> float:
        start = time.perf_counter()
        for first in range(0, CALLS, ROUND):
            await system.run_round(CALL_LIST[first : first + ROUND], CONTEXT)
        return time.perf_counter() - start

    return asyncio.run(rounds())


def tool_system_sync_facade() -> float:
    system = ToolSystem([TOOL])
    start = time.perf_counter()
    for first in range(0, CALLS, ROUND):
        system.run_round_sync(CALL_LIST[first : first + ROUND], CONTEXT)
    return time.perf_counter() - start


CANDIDATES: dict[str, Callable[[], float]] = {
    "hand-written loop (json.loads + reused validator + call)": hand_written,
    f"ToolSystem.run_round, awaited ({ROUND} calls/round)": tool_system_awaited,
    f"ToolSystem.run_round_sync ({ROUND} calls/round, asyncio.run each)": (
        tool_system_sync_facade
    ),
}


def main() -> None:
    outcome = ToolSystem([TOOL]).run_round_sync(CALL_LIST[:1], CONTEXT).results[0]
    assert outcome.ok, outcome  # the benchmark times the success path only
    runs: dict[str, list[float]] = {name: [] for name in CANDIDATES}
    for _ in range(REPEATS):
        for name, run in CANDIDATES.items():
            runs[name].append(run() / CALLS * 1e6)
    baseline = runs[next(iter(CANDIDATES))]
    print(f"Python {sys.version.split()[0]}; {CALLS} calls, medians of {REPEATS} repetitions")
    print(f"{'candidate':<66} {'µs/call':>8} {'ratio':>6}")
    for name, micros in runs.items():
        ratio = statistics.median(m / b for m, b in zip(micros, baseline, strict=True))
        print(f"{name:<66} {statistics.median(micros):>8.1f} {ratio:>6.2f}")


if __name__ == "__main__":
    main()
