"""What a run waiting on its model gives the cyclic garbage collector to walk.

Every object a live run holds that the collector tracks is walked by each full collection
while the run waits, and their count sets how many full collections there are; at 10,000
concurrent runs those collections, not the Agent's own steps, are most of what a run costs
beyond what it costs alone (`bench_concurrency`'s ``gc s`` and ``full gc``: 7 full
collections for the Agent against the hand-written loop's 2, each 0.1 to 0.3 s near the
peak). This pins how many such objects a waiting run holds, by kind, so that a change adding
one is a deliberate choice. Counts only: nothing here is timed, and the collector is left as
it is.
"""

from __future__ import annotations

import asyncio
import gc
import json
import types
from collections import Counter
from collections.abc import Sequence

from agentfsm import Agent, Message, ModelResponse, Tool, ToolCall
from agentfsm.llm.base import FinishReason, RetryListener
from agentfsm.states.json import JSONObject

SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"query": {"type": "string"}},
    "required": ["query"],
    "additionalProperties": False,
}


def _noop(query: str) -> str:
    return "ok"


TOOLS = [Tool(_noop, name=name, parameters=SCHEMA) for name in ("search", "fetch", "note")]


def _round(iteration: int) -> ModelResponse:
    return ModelResponse(
        tool_calls=tuple(
            ToolCall(id=f"call_{iteration}_{k}", name=name, arguments=json.dumps({"query": "x"}))
            for k, name in enumerate(("search", "fetch", "note"))
        ),
        finish_reason=FinishReason.TOOL_CALLS,
    )


SCRIPT = (_round(0), _round(1), ModelResponse(content="done"))
"""Two rounds of three calls, then the answer: the concurrency benchmark's run."""


class GatedModel:
    """Answers from `SCRIPT`; its third call waits until the gate opens."""

    name = "gated"

    def __init__(self, gate: asyncio.Event) -> None:
        self._gate = gate
        self._calls = 0

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[JSONObject],
        *,
        on_retry: RetryListener | None = None,
    ) -> ModelResponse:
        self._calls += 1
        if self._calls == len(SCRIPT):
            await self._gate.wait()
        return SCRIPT[self._calls - 1]


_NOT_THE_RUNS = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)
"""Where the walk stops: classes, modules and functions belong to no run."""


def _held(root: object) -> dict[int, object]:
    """The collector-tracked objects reachable from ``root`` (``root`` included), by id."""
    seen: dict[int, object] = {}
    todo = [root]
    while todo:
        found = todo.pop()
        if id(found) in seen or isinstance(found, _NOT_THE_RUNS) or not gc.is_tracked(found):
            continue
        seen[id(found)] = found
        todo.extend(gc.get_referents(found))
    return seen


def _own_tracked(agents: list[Agent]) -> list[Counter[str]]:
    """For each Agent, the tracked objects only it holds (shared ones left out), by type."""
    held = [_held(agent) for agent in agents]
    counts: Counter[int] = Counter(key for found in held for key in found)
    return [
        Counter(type(obj).__name__ for key, obj in found.items() if counts[key] == 1)
        for found in held
    ]


async def _waiting_runs(
    count: int,
) -> tuple[list[Agent], asyncio.Event, list[asyncio.Task[object]]]:
    gate = asyncio.Event()
    agents = [
        Agent(GatedModel(gate), TOOLS, max_iterations=3, ask_user=False) for _ in range(count)
    ]
    for agent in agents:
        await agent.astart()
    tasks = [asyncio.ensure_future(agent.asubmit("go")) for agent in agents]
    for _ in range(100):  # (a few loop passes: every call before the third is immediate)
        if all(agent.iteration == len(SCRIPT) for agent in agents):
            return agents, gate, tasks
        await asyncio.sleep(0)
    raise AssertionError("the runs did not all reach their third model call")


BUDGET = 22
"""Tracked objects a waiting run (its Agent and what only it holds) may hold: its 9 messages
and its user-input entry, the Agent and its parts (RunData, two machines, emitter and its
weak reference, ToolSystem, ToolRegistry, Hooks, the trace list, the listeners tuple), and
its model. Its model calls and tool executions are kept packed (`agentfsm.fsm.trace.kept`):
tuples of strings and numbers, which the collector stops tracking. Lower it when a change
frees one; raise it only deliberately (6 to 12 more per run added a full collection to the
10,000-run row, 0.25 to 0.3 s)."""


def test_a_run_waiting_on_its_third_model_call_holds_a_known_set_of_tracked_objects() -> None:
    async def scenario() -> tuple[list[Counter[str]], list[Agent]]:
        agents, gate, tasks = await _waiting_runs(3)
        gc.collect()  # (dicts and tuples of atomic values untracked, as a collection leaves them)
        owned = _own_tracked(agents)
        gate.set()
        for task in tasks:
            await task
        return owned, agents

    owned, agents = asyncio.run(scenario())

    assert owned[0] == owned[1] == owned[2]  # every run alike
    kinds = owned[0]
    # The records the collector walks: 9 messages (the user's, 2 assistant, 6 tool) and the
    # user-input entry. The 6 tool executions (each an entry, its result and their two
    # ``__dict__`` objects, tracked for their status member) and the 2 model calls are kept
    # packed, and none of them is tracked.
    assert kinds["Message"] == 9
    assert kinds["UserInputTrace"] == 1
    assert kinds["ToolResult"] == kinds["ToolExecutionTrace"] == kinds["LLMCallTrace"] == 0
    assert sum(kinds.values()) <= BUDGET, kinds
    # ... and the run still has them all: the finished run's trace, entry by entry.
    trace = agents[0].trace
    assert [entry.kind for entry in trace] == [
        "user_input",
        *(["llm_call", *["tool_execution"] * 3] * 2),
        "llm_call",
    ]
    assert [entry.result.call_id for entry in trace if entry.kind == "tool_execution"] == [
        f"call_{i}_{k}" for i in range(2) for k in range(3)
    ]
