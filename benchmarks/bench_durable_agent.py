"""What durability costs an Agent: a turn and a resume, with no store, memory, and SQLite.

Turn: one ``submit`` (the first one ``start(text)``, starting the run) whose model asks for a
round of three no-op tool calls, then answers (14 events: transitions and conversation records,
each saved before it is delivered).
Resume: ``Agent(run_id=..., store=...)`` + ``start()`` of a completed run of 50 messages.
All candidates run in the same process, interleaved, medians of several repetitions; SQLite
in a temporary directory with ``synchronous=FULL`` (fsync per save) and ``NORMAL``.

Run: ``.venv/bin/python benchmarks/bench_durable_agent.py``.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentfsm import Agent, Event, ScriptedModel, tool
from agentfsm.llm.base import FinishReason, ModelResponse
from agentfsm.states import Message, ToolCall
from agentfsm.stores import MemoryStore, RunStore, SQLiteStore

REPEATS = 5
TURNS = 10  # per repetition and candidate: the run grows to 51 messages
RESUMES = 100


@tool
def noop(n: int) -> int:
    """Do nothing."""
    return n


def reply(messages: list[Message], tools: object) -> ModelResponse:
    if messages[-1].role == "user":
        calls = tuple(
            ToolCall(id=f"c{i}", name="noop", arguments=f'{{"n": {i}}}') for i in range(3)
        )
        return ModelResponse(tool_calls=calls, finish_reason=FinishReason.TOOL_CALLS)
    return ModelResponse(content="done")


def agent(store: RunStore | None, run_id: str) -> Agent:
    return Agent(ScriptedModel(fallback=reply), [noop], store=store, run_id=run_id)  # type: ignore[arg-type]


def time_turns(store: RunStore | None, repetition: int) -> tuple[float, float]:
    """µs per turn and per event."""
    events = 0

    def count(item: object) -> None:
        nonlocal events
        events += isinstance(item, Event)

    the_agent = agent(store, f"turns-{repetition}-{time.perf_counter_ns()}")
    the_agent.add_listener(count)
    events = 0
    start = time.perf_counter()
    the_agent.start("turn 0")  # the first turn starts the run (one save), as a run does
    for n in range(1, TURNS):
        the_agent.submit(f"turn {n}")
    elapsed = time.perf_counter() - start
    the_agent.close()
    return elapsed / TURNS * 1e6, elapsed / events * 1e6


def time_resumes(store: RunStore, repetition: int) -> float:
    run_id = f"resume-{repetition}-{time.perf_counter_ns()}"
    first = Agent(
        ScriptedModel(fallback=lambda m, t: ModelResponse(content="ok " * 20)),
        store=store,
        run_id=run_id,
    )
    first.start("message 0 " * 8)
    for n in range(1, 25):  # 50 messages
        first.submit(f"message {n} " * 8)
    first.close()
    start = time.perf_counter()
    for _ in range(RESUMES):
        again = Agent(ScriptedModel(), store=store, run_id=run_id)
        again.start()  # claims the run: one save
        again.close()
    return (time.perf_counter() - start) / RESUMES * 1e6


def interleaved(
    candidates: dict[str, RunStore | None], timer: Callable[[RunStore | None, int], object]
) -> dict[str, list[object]]:
    samples: dict[str, list[object]] = {name: [] for name in candidates}
    for repetition in range(REPEATS):
        for name, store in candidates.items():
            samples[name].append(timer(store, repetition))
    return samples


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        stores: dict[str, RunStore | None] = {
            "no store": None,
            "MemoryStore": MemoryStore(),
            "SQLite NORMAL": SQLiteStore(Path(directory) / "normal.db", synchronous="NORMAL"),
            "SQLite FULL": SQLiteStore(Path(directory) / "full.db"),
        }
        turns = interleaved(stores, time_turns)
        resumable = {k: v for k, v in stores.items() if v is not None}
        resumes = interleaved(resumable, time_resumes)  # type: ignore[arg-type]
        for store in resumable.values():
            store.close()  # type: ignore[union-attr]
    base_turn = statistics.median(t for t, _ in turns["no store"])  # type: ignore[misc]
    print(f"a turn of one 3-call tool round (median of {REPEATS}):")
    for name, values in turns.items():
        per_turn = statistics.median(t for t, _ in values)  # type: ignore[misc]
        per_event = statistics.median(e for _, e in values)  # type: ignore[misc]
        print(
            f"  {name:<14} {per_turn:9.0f} µs/turn {per_event:8.1f} µs/event"
            f"   {per_turn / base_turn:6.1f}x no store"
        )
    memory = statistics.median(resumes["MemoryStore"])  # type: ignore[type-var]
    print(
        "resume a run of 50 messages: Agent(run_id=..., store=...) + start() "
        f"(median of {REPEATS}):"
    )
    for name, values in resumes.items():
        micros = statistics.median(values)  # type: ignore[type-var]
        print(f"  {name:<14} {micros:9.0f} µs   {micros / memory:6.1f}x MemoryStore")


if __name__ == "__main__":
    main()
