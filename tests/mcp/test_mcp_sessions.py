"""One kept session per server: state survives between calls, a dead server is reopened.

Against a stateful server (the SDK's, over stdio): its count must survive between calls,
rounds, turns and event loops; its stderr goes to the logger, not the terminal.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from pathlib import Path

import pytest

from agentfsm import Agent, ScriptedModel
from agentfsm.states.messages import ToolCall
from agentfsm.tools import ToolContext, ToolStatus, ToolSystem
from agentfsm.tools.mcp import MCPServer, load_tools, load_tools_sync
from tests.mcp.servers import toolbox

COUNTER = [sys.executable, str(Path(__file__).with_name("counter.py"))]
CONTEXT = ToolContext(run_id="run-1", turn=1, iteration=1)


def bump(call_id: str) -> ToolCall:
    return ToolCall(id=call_id, name="c__bump", arguments="{}")


def counts(outcome: object) -> list[object]:
    return [r.output["result"] for r in outcome.results]  # type: ignore[attr-defined]


def test_a_stdio_servers_state_survives_between_calls_and_event_loops(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.INFO, logger="agentfsm.tools.mcp"),
        MCPServer("c", COUNTER, trusted=True) as server,
    ):
        system = ToolSystem(load_tools_sync(server))  # a listing, in its own event loop
        first = system.run_round_sync([bump("1"), bump("2")], CONTEXT)  # another loop
        second = system.run_round_sync([bump("3")], CONTEXT)  # and another

        assert counts(first) + counts(second) == [1, 2, 3]
        assert server.sessions_opened == 1  # one process for the listing and three calls
    assert "starting (a banner on stderr)" not in capfd.readouterr().err
    banners = [r for r in caplog.records if "a banner on stderr" in r.getMessage()]
    assert len(banners) == 1
    assert banners[0].getMessage().startswith("MCP server 'c' (stderr): ")


def test_a_server_that_dies_fails_the_call_in_flight_and_the_next_call_reconnects() -> None:
    with MCPServer("c", COUNTER, trusted=True) as server:
        system = ToolSystem(load_tools_sync(server))
        calls = [
            bump("1"),
            ToolCall(id="pid-1", name="c__pid", arguments="{}"),
            ToolCall(id="die", name="c__die", arguments="{}"),
            bump("2"),
            ToolCall(id="pid-2", name="c__pid", arguments="{}"),
        ]
        outcome = system.run_round_sync(calls, CONTEXT)

        one, pid_1, died, two, pid_2 = outcome.results
        assert died.status is ToolStatus.ERROR
        assert died.error is not None
        assert died.error.type == "MCPConnectionError"
        assert "unreachable or went away" in died.error.message
        assert (one.output, two.output) == ({"result": 1}, {"result": 1})  # a new process
        assert pid_1.output != pid_2.output
        assert server.sessions_opened == 2


def test_an_async_scope_keeps_the_session_and_closes_it_at_its_end() -> None:
    async def scope() -> tuple[list[object], bool, bool]:
        async with MCPServer("c", COUNTER, trusted=True) as server:
            system = ToolSystem(await load_tools(server))
            first = await system.run_round([bump("1")], CONTEXT)
            second = await system.run_round([bump("2")], CONTEXT)
            inside = server.is_open
        return counts(first) + counts(second), inside, server.is_open

    assert asyncio.run(scope()) == ([1, 2], True, False)


def test_an_agent_owns_the_session_unless_a_scope_holds_it() -> None:
    model = ScriptedModel()
    for _ in range(3):
        model = model.tool_call("c__bump")
    model = model.text("Three.").tool_call("c__bump").text("Four.")
    owned = MCPServer("c", COUNTER, trusted=True)
    agent = Agent(model, mcp_servers=[owned])
    agent.start()
    assert agent.submit("bump thrice").reply == "Three."
    assert agent.submit("once more").reply == "Four."  # a new turn lists again
    assert [m.content for m in agent.messages if m.role == "tool"] == [
        json.dumps({"result": n}) for n in (1, 2, 3, 4)
    ]
    assert (owned.sessions_opened, owned.is_open) == (1, True)
    agent.shutdown()
    assert not owned.is_open  # its owner is gone: the process is stopped

    with MCPServer("c", COUNTER, trusted=True) as shared:
        for reply in ("One.", "Two."):
            model = ScriptedModel().tool_call("c__bump").text(reply)
            agent = Agent(model, mcp_servers=[shared])
            agent.start()
            agent.submit("bump")
            agent.shutdown()
            assert shared.is_open  # the scope holds it for the next Agent
        assert shared.sessions_opened == 1
        assert agent.messages[-2].content == '{"result": 2}'  # shared: its count went on
    assert not shared.is_open


def test_a_forked_child_opens_sessions_of_its_own() -> None:
    server = MCPServer("tb", toolbox(), trusted=True)
    assert len(load_tools_sync(server)) > 0  # the parent's session is open
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        signal.alarm(10)  # a child that waits on its parent's thread dies, not hangs
        code = 0 if server.take_changed() is False and load_tools_sync(server) else 1
        os._exit(code)
    _, status = os.waitpid(child, 0)
    server.close()
    assert os.waitstatus_to_exitcode(status) == 0
