"""What the simulated processes run: a model, tools with side effects, and the Agent.

`ConversationModel` answers from the stored conversation alone (a deterministic function of
the seed and the messages), so a process that takes a run up after a crash gets the answers
the dead one would have got. The tools write a `Ledger`, the outside world that survives
every crash: a non-idempotent call that ran twice is there for the checks to see. `World`
builds the Agent each process runs; subclass it to simulate your own agent and tools.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from agentfsm.agent.children import agent_tool
from agentfsm.agent.core import Agent
from agentfsm.errors import ModelCallError, ProcessCrashed
from agentfsm.llm.base import FinishReason, ModelResponse
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import Message, ToolCall
from agentfsm.stores.leases import LeasePolicy, Sleep
from agentfsm.testing.clock import FakeClock
from agentfsm.testing.sim.faults import FaultKind, Point, ProcessStore
from agentfsm.tools.context import ToolContext
from agentfsm.tools.registry import AnyTool
from agentfsm.tools.spec import Tool

LEASE_SECONDS = 15.0
"""How long a simulated Agent's lease lasts unless renewed (seconds of the clock)."""
MAX_DEPTH = 3
"""Levels of a run tree the default world builds: a root, its children, their children."""


@dataclass(slots=True)
class Ledger:
    """The world outside the runs: every tool body that began, by its call's key.

    It survives every crash (it stands for a bank, a booking system, an inbox).
    """

    began: dict[str, list[str]] = field(default_factory=dict)
    """Per call key (``<run>:<call>``), the processes whose body began it, in order."""
    repeated: list[str] = field(default_factory=list)
    """Keys of non-idempotent calls whose body began more than once: each a violation."""
    approved: set[str] = field(default_factory=set)
    """Keys of calls whose tool needs approval: the checks look for the approval (I9)."""

    def begin(
        self, key: str, process: str, *, idempotent: bool, needs_approval: bool = False
    ) -> None:
        """Note that the body of the call ``key`` began in ``process``.

        Args:
            key: The call's `ToolContext.idempotency_key` (``<run>:<call>``).
            process: The process's name.
            idempotent: Whether running the call twice is harmless.
            needs_approval: Whether its tool needs approval (so its run's log must hold it).
        """
        if needs_approval:
            self.approved.add(key)
        runs = self.began.setdefault(key, [])
        runs.append(process)
        if len(runs) > 1 and not idempotent:
            self.repeated.append(key)


@dataclass(slots=True)
class Process:
    """What a simulated process gives the Agents it runs (one life: a crash ends it)."""

    name: str
    """Its name in the trace: ``p1#2`` is process 1 in its second life."""
    store: ProcessStore
    """Its handle on the shared store (dead once it crashed)."""
    clock: FakeClock
    """The simulation's clock (all processes share it)."""
    ledger: Ledger
    """The outside world its tools write to."""
    point: Point
    """Wait at a point of the scheduler: ``await point(label, run_id)`` gives the fault."""
    salt: int
    """The seed's part in the model's answers."""
    sleep: Sleep | None = None
    """How an Agent waiting for a lease sleeps: it moves the simulation's clock (None: no
    leases)."""
    agents: int = 0
    """Agents made with a `lease` so far (each holds leases under its own owner id)."""

    @property
    def alive(self) -> bool:
        """Whether the process still runs (not crashed)."""
        return self.store.alive

    def check_alive(self) -> None:
        """Raise `ProcessCrashed` if the process is dead (no side effect after a crash)."""
        if not self.alive:
            raise ProcessCrashed(f"process {self.name} crashed")

    async def work(self, label: str, run_id: str) -> None:
        """Wait at a point before some work; a timeout struck there raises `TimeoutError`."""
        fault = await self.point(label, run_id)
        self.check_alive()
        if fault is FaultKind.TIMEOUT:
            raise TimeoutError(f"{label} timed out (simulated)")

    def lease(self) -> LeasePolicy | None:
        """The lease policy of a new Agent of this process (None: the store keeps none).

        Its owner id, ``<process>/a<n>``, and its waits (on the simulation's clock) are
        the seed's: the same seed, the same trace.
        """
        if self.sleep is None:
            return None
        self.agents += 1
        return LeasePolicy(
            duration=LEASE_SECONDS, owner=f"{self.name}/a{self.agents}", sleep=self.sleep
        )

    def model(self) -> ConversationModel:
        """A model for this process's Agents."""
        return ConversationModel(self)


def _digest(salt: int, messages: Sequence[Message]) -> int:
    """A hash of the seed and the conversation's shape.

    A tool message counts only as an answer or an error, not by its words: so the seeds keep
    their traces when an error's message is reworded.
    """
    shape = [
        (
            m.role,
            _outcome(m.content or "") if m.role == "tool" else m.content,
            [c.id for c in m.tool_calls],
            m.tool_call_id,
        )
        for m in messages
    ]
    text = json.dumps([salt, shape], sort_keys=True, default=str)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def _outcome(content: str) -> str:
    return "error" if "error" in content.lower() else "answer"


def _offered(tools: Sequence[JSONObject]) -> dict[str, JSONObject]:
    """The offered tools' arguments: the default world's, or made from each one's schema."""
    offered: dict[str, JSONObject] = {}
    for spec in tools:
        function = spec.get("function")
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            name = str(function["name"])
            parameters = function.get("parameters")
            schema = parameters if isinstance(parameters, dict) else {}
            offered[name] = _ARGUMENTS.get(name) or _from_schema(schema)
    return dict(sorted(offered.items()))


_SAMPLES: dict[str, JSONValue] = {
    "string": "x",
    "integer": 1,
    "number": 1.5,
    "boolean": True,
    "array": [],
    "object": {},
}


def _from_schema(schema: JSONObject) -> JSONObject:
    """Arguments for a tool of yours: a sample value for each required property."""
    properties = schema.get("properties")
    required = schema.get("required")
    if not isinstance(properties, dict) or not isinstance(required, list):
        return {}
    arguments: JSONObject = {}
    for name in required:
        spec = properties.get(str(name))
        kind = spec.get("type") if isinstance(spec, dict) else None
        arguments[str(name)] = _SAMPLES.get(str(kind), "x")
    return arguments


_ARGUMENTS: dict[str, JSONObject] = {
    "book": {"item": "room"},
    "note": {"text": "seen"},
    "pay": {"amount": 5},
    "ask_user": {"question": "Which one?"},
    "delegate": {"task": "look into it"},
}


def respond(salt: int, messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
    """The answer to ``messages``: a function of ``salt`` and the conversation only.

    After a user message or a round, it asks for one or two tool calls of those offered (at
    most three rounds a turn), or answers in words. A tool of yours is called with a sample
    value for each required property of its schema.
    """
    digest = _digest(salt, messages)
    since_user = 0
    for message in reversed(messages):
        if message.role == "user":
            break
        since_user += bool(message.role == "assistant" and message.tool_calls)
    arguments = _offered(tools)
    offered = list(arguments)
    if since_user >= 3 or digest % 4 == 0 or not offered:
        return ModelResponse(content=f"answer {digest % 1000}")
    count = 1 + (digest >> 4) % 2
    names = [offered[(digest >> (8 + 5 * k)) % len(offered)] for k in range(count)]
    if "ask_user" in names:
        names = ["ask_user"]  # (a question stands alone: its answer is the round's)
    calls = tuple(
        ToolCall(id=f"c{len(messages)}x{k}", name=name, arguments=json.dumps(arguments[name]))
        for k, name in enumerate(names)
    )
    return ModelResponse(tool_calls=calls, finish_reason=FinishReason.TOOL_CALLS)


class ConversationModel:
    """A `Model` whose answer is a function of the seed and the conversation (`respond`).

    Each call waits at a ``model`` point, where the seed may strike a timeout (the call
    fails with a `ModelCallError`) or a crash of the process.
    """

    def __init__(self, process: Process) -> None:
        self.process = process
        """The process whose Agents it answers."""

    @property
    def name(self) -> str:
        """``sim``."""
        return "sim"

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[JSONObject],
        *,
        on_retry: object = None,
    ) -> ModelResponse:
        """Wait at a ``model`` point, then answer (`respond`)."""
        try:
            await self.process.work("model", "")  # (a model is not told its run)
        except TimeoutError:
            raise ModelCallError(
                "the model call timed out (simulated)", model="sim", reason="timeout"
            ) from None
        return respond(self.process.salt, messages, tools)


def ledger_tool(
    process: Process,
    name: str,
    *,
    idempotent: bool,
    policy: str = "allow",
    declared_idempotent: bool | None = None,
    declared_policy: str | None = None,
) -> AnyTool:
    """A tool whose body notes itself in the ledger, between two points of the scheduler.

    A crash at the first point is before the body; at the second, after its side effect and
    before its result is stored (its outcome unknown): the case I11 is about.

    Args:
        process: The process whose Agents run it.
        name: ``book``, ``note`` or ``pay``.
        idempotent: Whether running a call twice is harmless (what the ledger judges by).
        policy: The tool's policy.
        declared_idempotent: What the tool tells the Agent, if not ``idempotent`` (a tool
            that lies, for testing that the ledger catches a body run twice).
        declared_policy: The policy the Agent is told, if not ``policy`` (a tool that lies,
            for testing that the checks catch a body run without its approval).
    """

    async def body(ctx: ToolContext, **arguments: object) -> str:
        await process.work(f"tool:{name}", ctx.run_id)
        process.ledger.begin(
            ctx.idempotency_key,
            process.name,
            idempotent=idempotent,
            needs_approval=policy == "require_approval",
        )
        await process.work(f"tool:{name}:done", ctx.run_id)
        return f"{name} done ({ctx.call_id})"

    schemas: dict[str, JSONObject] = {
        "book": {"item": {"type": "string"}},
        "note": {"text": {"type": "string"}},
        "pay": {"amount": {"type": "integer"}},
    }
    parameters: JSONObject = {
        "type": "object",
        "properties": schemas[name],
        "required": list(schemas[name]),
        "additionalProperties": False,
    }
    return Tool(
        body,
        name=name,
        description=f"The simulation's {name!r} tool.",
        parameters=parameters,
        policy=policy if declared_policy is None else declared_policy,  # type: ignore[arg-type]
        idempotent=idempotent if declared_idempotent is None else declared_idempotent,
    )


class World:
    """Builds the Agent each simulated process runs: subclass it for your own agent.

    The default world's agent has a non-idempotent tool (``book``), an idempotent one
    (``note``), one that needs approval (``pay``), ``ask_user``, and below depth
    `MAX_DEPTH` a sub-agent (``delegate``) of the same kind, one level deeper.
    """

    max_iterations = 4
    """Each Agent's ``max_iterations``."""
    max_depth = MAX_DEPTH
    """Levels of a run tree: 1 for no sub-agents."""
    action_timeout = 120.0
    """Each Agent's ``action_timeout`` and ``input_timeout`` (seconds of the clock)."""

    def make_agent(self, process: Process, run_id: str) -> Agent:
        """The Agent of the run ``run_id`` in ``process`` (restored if it is stored).

        Build it with ``process.store``, ``process.clock``, ``process.model()`` and
        ``lease=process.lease()`` (leases judged and waited for on the simulation's clock); give
        side-effecting tools a body that waits at ``process.work`` and notes itself in
        ``process.ledger`` (as `ledger_tool` does), so the checks can count its runs.
        """
        return self.agent_at(process, 1, run_id)

    def tools(self, process: Process, depth: int) -> list[AnyTool]:
        """The tools of an Agent at ``depth`` (1 for a root run)."""
        tools = [
            ledger_tool(process, "book", idempotent=False),
            ledger_tool(process, "note", idempotent=True),
            ledger_tool(process, "pay", idempotent=False, policy="require_approval"),
        ]
        if depth < self.max_depth:
            tools.append(
                agent_tool(
                    lambda: self.agent_at(process, depth + 1, None),
                    name="delegate",
                    description="A sub-agent of the same kind, one level deeper.",
                )
            )
        return tools

    def agent_at(self, process: Process, depth: int, run_id: str | None) -> Agent:
        """An Agent at ``depth``: a root run's (with ``run_id``) or a child's (None)."""
        return Agent(
            process.model(),
            self.tools(process, depth),
            store=process.store if run_id is not None else None,
            run_id=run_id,
            clock=process.clock,
            lease=process.lease(),
            max_iterations=self.max_iterations,
            action_timeout=self.action_timeout,
            input_timeout=self.action_timeout,
        )
