"""The Agent under the testing kit's random model responses and application actions.

`AgentStateMachine` checks I1, I4-I9 and I11 (the agent keeps its run in a MemoryStore)
after every step; this machine adds spies in the tool bodies, so I9 is also checked against
what really ran (not only the trace).
"""

from __future__ import annotations

import json

from hypothesis import settings
from hypothesis.stateful import invariant

from agentfsm import Agent, RunStore, ScriptedModel, Tool
from agentfsm.fsm import Engine
from agentfsm.testing import AgentStateMachine

RAN: list[tuple[str, str]] = []


def weather(city: str) -> str:
    """Weather."""
    RAN.append(("weather", city))
    return "sunny"


def book(city: str, nights: int = 1) -> str:
    """Book."""
    RAN.append(("book", city))
    return "booked"


def wipe() -> str:
    """Never allowed."""
    RAN.append(("wipe", ""))
    return "wiped"


class _SpiedAgentMachine(AgentStateMachine):
    engine: Engine = "compiled"

    def make_agent(self, model: ScriptedModel, store: RunStore | None) -> Agent:
        RAN.clear()
        return Agent(
            model,
            [Tool(weather), Tool(book, policy="require_approval"), Tool(wipe, policy="deny")],
            max_iterations=2,
            action_timeout=60,
            input_timeout=600,
            clock=self.clock,
            engine=self.engine,
            store=store,
        )

    @invariant()
    def bodies_ran_only_when_permitted(self) -> None:  # I9, from the spies
        assert all(name != "wipe" for name, _ in RAN)
        ran = {
            entry.call_id: entry.arguments
            for entry in self._agent().trace
            if getattr(entry, "kind", None) == "tool_execution" and entry.result.attempts
        }
        assert len(ran) == len(RAN)
        for call_id, arguments in ran.items():
            assert isinstance(json.loads(arguments)["city"], str)
            if call_id in self.decisions:
                assert self.decisions[call_id].kind == "approve"


class CompiledAgentMachine(_SpiedAgentMachine):
    engine = "compiled"


class ReferenceAgentMachine(_SpiedAgentMachine):
    engine = "reference"


_SETTINGS = settings(max_examples=40, stateful_step_count=25, deadline=None)
CompiledAgentMachine.TestCase.settings = _SETTINGS
ReferenceAgentMachine.TestCase.settings = settings(_SETTINGS, max_examples=15)
TestCompiledAgent = CompiledAgentMachine.TestCase
TestReferenceAgent = ReferenceAgentMachine.TestCase
