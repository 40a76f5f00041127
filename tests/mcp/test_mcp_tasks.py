"""MCP tools that run as tasks (protocol 2025-11-25), against a real SDK server serving tasks.

Over Streamable HTTP on 127.0.0.1 (the server object lives in the test process, so a test
sees every method it was sent) and over stdio (a subprocess that logs them to a file). The
SDK's in-process connection always speaks 2026-07-28, where tasks are not in the protocol
(its listings carry no ``execution``): task mode is reached over a transport only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import mcp
import pytest
from mcp import types

from agentfsm import Agent, ScriptedModel
from agentfsm.stores import MemoryStore
from agentfsm.tools import ToolStatus, ToolSystem
from agentfsm.tools._mcp_tasks import mark_uncallable, offerable
from agentfsm.tools.mcp import MCPServer, load_tools_sync
from agentfsm.verify import check_log
from tests.mcp.tasking import TOOLS, tasking
from tests.mcp.test_mcp_transports import CONTEXT, call, serving

TASKING = str(Path(__file__).with_name("tasking.py"))
ALLOW = {"research": "allow", "doomed": "allow", "echo": "allow", "clarify": "allow"}


@contextlib.contextmanager
def task_server(**options: object) -> Iterator[tuple[str, list[str]]]:
    """The tasking server over Streamable HTTP, and the methods it was sent."""
    seen: list[str] = []
    with serving(tasking(seen, **options)) as url:  # type: ignore[arg-type]
        yield url, seen


def until(condition: Callable[[], bool], seconds: float = 5.0) -> bool:
    """Whether ``condition`` holds within ``seconds`` (checked every 10 ms)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_task_tool_is_called_as_a_task_and_its_result_is_the_calls_result() -> None:
    with task_server(poll_ms=50) as (url, seen):
        server = MCPServer("lab", url, policies=ALLOW, timeout=10)
        system = ToolSystem(load_tools_sync(server))

        found, echoed = system.run_round_sync(
            [
                call("c1", "lab__research", topic="owls", seconds=0.25),
                call("c2", "lab__echo", topic="plainly"),
            ],
            CONTEXT,
        ).results
        server.close()

    assert (found.status, found.output) == (ToolStatus.SUCCESS, "findings on owls")
    assert (echoed.status, echoed.output) == (ToolStatus.SUCCESS, "plainly")  # optional: plain
    assert seen.count("tools/call") == 2
    assert seen.count("tasks/result") == 1
    # polled at the server's pollInterval (50 ms over 250 ms), neither hammered nor once
    assert 2 <= seen.count("tasks/get") <= 10
    assert not any(method.startswith("tasks/cancel") for method in seen)


def test_a_task_that_fails_is_the_tools_error() -> None:
    with task_server() as (url, seen):
        server = MCPServer("lab", url, policies=ALLOW, timeout=10)
        system = ToolSystem(load_tools_sync(server))

        (failed,) = system.run_round_sync(
            [call("c1", "lab__doomed", topic="Alexandria")], CONTEXT
        ).results
        server.close()

    assert (failed.status, failed.error.type) == (ToolStatus.ERROR, "MCPToolError")
    assert "the archive about Alexandria is gone" in failed.error.message
    assert "tasks/result" in seen


def test_a_task_past_the_timeout_is_cancelled_at_the_server() -> None:
    with task_server() as (url, seen):
        server = MCPServer("lab", url, policies=ALLOW, timeout=0.5)
        system = ToolSystem(load_tools_sync(server))

        (late,) = system.run_round_sync(
            [call("c1", "lab__research", topic="everything", seconds=60)], CONTEXT
        ).results
        cancelled = until(lambda: "tasks/cancel 1" in seen)
        server.close()

    assert (late.status, late.error.type) == (ToolStatus.TIMEOUT, "ToolTimeoutError")
    assert late.duration < 5
    assert cancelled, seen


def test_a_server_without_the_tasks_capability_does_not_get_its_task_tools_offered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with task_server(capable=False) as (url, seen), caplog.at_level(logging.WARNING):
        server = MCPServer("lab", url, policies=ALLOW, timeout=10)
        tools = load_tools_sync(server)
        recorded = asyncio.run(server.listing())
        server.close()

    assert [tool.name for tool in tools] == ["lab__echo"]
    # what a run records: every tool, the task tools marked (a restored run leaves them out)
    assert [entry["name"] for entry in recorded] == ["research", "doomed", "echo", "clarify"]
    assert [t.name for t in server.tools_of(recorded)] == ["lab__echo"]
    warned = [r.getMessage() for r in caplog.records if r.name == "agentfsm.tools.mcp"]
    for name in ("'research'", "'doomed'", "'clarify'"):
        said = [line for line in warned if name in line]
        assert len(said) == 1, warned  # two listings, one warning each
        assert "does not declare task-augmented tools/call" in said[0]
    assert "tools/call" not in seen


def test_an_agent_calls_a_task_tool_end_to_end() -> None:
    with task_server() as (url, seen):
        model = (
            ScriptedModel()
            .tool_call("lab__research", topic="owls", seconds=0.05)
            .text("Owls: researched.")
        )
        server = MCPServer("lab", url, policies=ALLOW, timeout=10)
        store = MemoryStore()
        agent = Agent(model, store=store, mcp_servers=[server], run_id="r")
        agent.start()
        done = agent.submit("Research owls")
        agent.shutdown()

    assert (done.state, done.reply) == ("completed", "Owls: researched.")
    assert "findings on owls" in next(m.content for m in agent.messages if m.role == "tool")
    assert check_log(list(store.events("r"))).ok
    assert "tasks/result" in seen


def test_a_task_that_needs_the_users_answer_asks_it_as_the_runs_own_question() -> None:
    # The task goes input_required; its tasks/result asks (elicitation/create) while it
    # waits, which becomes the run's input_required wait, as a plain call's question does.
    with task_server() as (url, seen):
        model = ScriptedModel().tool_call("lab__clarify", topic="python").text("Researched.")
        server = MCPServer("lab", url, policies=ALLOW, timeout=10)
        store = MemoryStore()
        agent = Agent(model, store=store, mcp_servers=[server], run_id="r")
        agent.start()
        asked = agent.submit("Research python")
        assert (asked.state, asked.question) == ("input_required", "Which python do you mean?")
        assert agent.input_request is not None
        assert agent.input_request["schema"]["required"] == ["sense"]
        again = agent.provide_input('{"sense": 3}')  # not a string: not sent, asked again
        assert again.state == "input_required"
        done = agent.provide_input("the language")
        agent.shutdown()

    assert (done.state, done.reply) == ("completed", "Researched.")
    tool = next(m.content for m in agent.messages if m.role == "tool")
    assert "findings on python (the language)" in tool
    assert check_log(list(store.events("r"))).ok
    assert seen.count("tasks/result") == 1


def test_cancelling_the_run_while_its_task_runs_cancels_the_task() -> None:
    with task_server() as (url, seen):
        model = ScriptedModel().tool_call("lab__research", topic="owls", seconds=60).text("-")
        server = MCPServer("lab", url, policies=ALLOW, timeout=30)
        agent = Agent(model, mcp_servers=[server])

        async def scenario() -> None:
            await agent.astart()
            turn = asyncio.ensure_future(agent.asubmit("Research owls"))
            for _ in range(500):  # until the task runs (5 s at most)
                if "tasks/get" in seen or turn.done():
                    break
                await asyncio.sleep(0.01)
            assert "tasks/get" in seen, seen
            turn.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await turn

        started = time.monotonic()
        asyncio.run(scenario())
        cancelled = until(lambda: "tasks/cancel 1" in seen)
        server.close()

    assert cancelled, seen
    assert time.monotonic() - started < 10
    assert agent.state == "failed"


def test_over_stdio_a_task_answers_and_one_past_its_timeout_is_cancelled(
    tmp_path: Path,
) -> None:
    log = tmp_path / "methods.log"
    target = [sys.executable, TASKING, str(log)]
    server = MCPServer("lab", target, policies=ALLOW, timeout=20)
    system = ToolSystem(load_tools_sync(server))  # the process started, with time to spare
    server.timeout = 1.5  # then each call's deadline

    found, late = system.run_round_sync(
        [
            call("c1", "lab__research", topic="owls", seconds=0.05),
            call("c2", "lab__research", topic="everything", seconds=60),
        ],
        CONTEXT,
    ).results
    server.close()

    methods = log.read_text().splitlines()
    assert (found.status, found.output) == (ToolStatus.SUCCESS, "findings on owls")
    assert late.status is ToolStatus.TIMEOUT
    cancels = [m for m in methods if m.startswith("tasks/cancel")]
    assert cancels in (["tasks/cancel 1"], ["tasks/cancel 2"]), methods  # the late one's
    assert methods.count("tasks/result") == 1


def test_a_session_on_2026_07_28_cannot_run_tasks_and_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The SDK's sessions of that revision list no `execution`; a server that still would
    # (its own wire code) gets its task tools marked too. A fake client: only what is read.
    modern = cast(mcp.Client, SimpleNamespace(protocol_version="2026-07-28"))
    listed = [types.Tool.model_validate(tool.model_dump()) for tool in TOOLS]

    with caplog.at_level(logging.WARNING):
        marked = mark_uncallable("lab", modern, listed, set())

    assert [t.name for t in marked if offerable(t)] == ["echo"]
    assert "tasks are an extension" in caplog.text
    assert marked[2] == listed[2]  # an optional tool is left as it was listed
