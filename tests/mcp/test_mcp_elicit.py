"""A server that asks the user in the middle of a call (2025-11-25 sessions).

The question becomes the run's own ``input_required`` wait while the call stays pending in
this process; the answer (accept, decline, cancel) reaches the server, which answers with
what it got. Over the three transports (in-process, a stdio subprocess, Streamable HTTP on
127.0.0.1), and across a restart (a new Agent and a new session, from a SQLite file).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import types

from agentfsm import Agent, ScriptedModel
from agentfsm.states.messages import ToolCall
from agentfsm.stores import SQLiteStore
from agentfsm.tools import InputRequest, ToolContext, ToolSystem
from agentfsm.tools._mcp_forms import elicit_result
from agentfsm.tools._mcp_options import Target
from agentfsm.tools._mcp_results import retry_params
from agentfsm.tools.mcp import MCPServer, load_tools_sync
from agentfsm.verify import check_log
from tests.mcp.asking import desk
from tests.mcp.servers import declared, raw
from tests.mcp.test_mcp_transports import serving

SCRIPT = str(Path(__file__).with_name("asking.py"))
ALLOW = {"order": "allow"}


def ordering() -> ScriptedModel:
    """A model that orders pens once, then says ok."""
    return ScriptedModel().tool_call("d__order", item="pens").text("ok")


@contextlib.contextmanager
def target_of(transport: str) -> Iterator[Target]:
    if transport == "in-process":
        yield desk()
    elif transport == "stdio":
        yield [sys.executable, SCRIPT]
    else:
        with serving(desk()) as url:
            yield url


def tool_texts(agent: Agent) -> list[str]:
    return [str(m.content) for m in agent.messages if m.role == "tool"]


@pytest.mark.parametrize("transport", ["in-process", "stdio", "http"])
def test_a_question_asked_mid_call_is_the_runs_wait_and_each_answer_reaches_the_server(
    transport: str,
) -> None:
    model = ScriptedModel()
    for _ in range(4):
        model = model.tool_call("d__order", item="pens").text("ok")
    model = model.tool_call("d__sign_in").text("ok")
    with target_of(transport) as target:
        server = MCPServer(
            "d", target, trusted=True, policies=ALLOW, protocol="legacy", timeout=20
        )
        agent = Agent(model, mcp_servers=[server])
        agent.start()
        answers = [("3", "accept: 3 pens")]
        answers += [('{"action": "decline"}', "decline"), ('{"action": "cancel"}', "cancel")]
        answers += [('{"count": 5}', "accept: 5 pens")]
        for answer, got in answers:
            waiting = agent.submit("order pens")
            assert (waiting.state, waiting.question) == ("input_required", "How many pens?")
            done = agent.provide_input(answer)
            assert done.state == "completed", done
            assert tool_texts(agent)[-1] == f'{{"result": "{got}"}}'

        waiting = agent.submit("sign in")
        assert waiting.state == "input_required"
        assert "https://desk.test/login" in str(waiting.question)
        agent.provide_input("done")
        assert tool_texts(agent)[-1] == '{"result": "url accept"}'
        assert server.sessions_opened == 1  # every question was answered on the same session
        agent.shutdown()


def test_an_answer_that_does_not_fit_the_form_is_refused_and_the_run_still_waits() -> None:
    calls: list[str] = []
    server = MCPServer("d", desk(calls), trusted=True, policies=ALLOW, protocol="legacy")
    agent = Agent(ordering(), mcp_servers=[server])
    agent.start()
    agent.submit("order pens")
    request = agent.input_request
    assert request is not None
    assert (request["elicit"], request["message"]) == ("form", "How many pens?")
    assert request["schema"]["properties"]["count"]["type"] == "integer"  # type: ignore[index,call-overload]

    refused = agent.provide_input("lots")

    assert refused.state == "input_required"
    question = str(refused.question)
    assert "at '/count', 'lots' is not of type 'integer'" in question
    assert question.endswith("How many pens?")
    for answer, problem in [("{}", "'count' is a required property"), ("a b", "'a b'")]:
        refused = agent.provide_input(answer)
        assert refused.state == "input_required"
        assert problem in str(refused.question)
    done = agent.provide_input("2")

    assert done.state == "completed"
    assert agent.input_request is None
    assert tool_texts(agent)[-1] == '{"result": "accept: 2 pens"}'
    assert calls == ["order"]  # one call, answered in the end
    agent.shutdown()


@pytest.mark.parametrize(
    ("tool", "calls_after", "result"),
    [
        pytest.param(
            "order", ["order"], "MCPSessionLostError", id="not-idempotent-outcome-unknown"
        ),
        pytest.param("quote", ["quote", "quote"], '{"result": "accept: 3 pens"}', id="idempotent"),
    ],
)
def test_an_answer_after_a_restart_reissues_an_idempotent_call_or_says_the_outcome_is_unknown(
    tmp_path: Path, tool: str, calls_after: list[str], result: str
) -> None:
    calls: list[str] = []
    path = tmp_path / "runs.db"
    servers: list[MCPServer] = []

    def agent_of(model: ScriptedModel) -> Agent:
        server = MCPServer("d", desk(calls), trusted=True, policies=ALLOW, protocol="legacy")
        servers.append(server)
        return Agent(model, store=SQLiteStore(path), mcp_servers=[server], run_id="r")

    first = agent_of(ScriptedModel().tool_call(f"d__{tool}", item="pens"))
    first.start()
    assert first.submit("pens").question == "How many pens?"
    servers[0].close()  # the process stops: its session (and the pending call) are gone

    second = agent_of(ScriptedModel().text("ok"))
    second.start()
    done = second.provide_input("3")

    assert (done.state, done.reply) == ("completed", "ok")
    assert calls == calls_after
    assert result in tool_texts(second)[-1]
    if tool == "order":
        assert "outcome is unknown" in tool_texts(second)[-1]
    assert check_log(list(SQLiteStore(path).events("r"))).ok
    second.shutdown()


def test_a_question_nobody_answers_in_time_is_cancelled_at_the_server() -> None:
    calls: list[str] = []
    server = MCPServer("d", desk(calls), trusted=True, policies=ALLOW, protocol="legacy")
    server._asking.wait = 0.05  # (a private knob: the default is an hour)
    agent = Agent(ordering(), mcp_servers=[server])
    agent.start()
    agent.submit("order pens")
    for _ in range(200):  # the server is told "cancel" after 0.05 s
        if not server._asking.waiting:
            break
        threading.Event().wait(0.01)

    late = agent.provide_input("3")

    assert late.state == "completed"
    assert "MCPSessionLostError" in tool_texts(agent)[-1]
    assert calls == ["order"]
    agent.shutdown()


def test_a_run_cancelled_while_the_server_asks_answers_the_server_cancel() -> None:
    answers: list[str] = []
    server = MCPServer("d", desk(answers=answers), trusted=True, policies=ALLOW, protocol="legacy")
    agent = Agent(ordering(), mcp_servers=[server])
    agent.start()
    agent.submit("order pens")
    assert server._asking.waiting == 1

    ended = agent.cancel()  # (an expiry closes the turn the same way)

    assert (ended.state, ended.reason) == ("failed", "cancelled")
    for _ in range(200):  # (the server's handler runs on the sessions' loop)
        if answers:
            break
        threading.Event().wait(0.01)
    assert answers == ["cancel"]  # told at once, not after the hour
    assert server._asking.waiting == 0
    assert server.abandon("nothing:here") is False
    agent.shutdown()


@pytest.mark.parametrize(
    ("request_", "text", "expected"),
    [
        pytest.param({"elicit": "url"}, "done", ("accept", None), id="url-accept"),
        pytest.param({"elicit": "url"}, '{"action": "decline"}', ("decline", None), id="url-no"),
        pytest.param(
            {"elicit": "form", "schema": {"properties": {"n": {"type": "integer"}}}},
            '{"action": "cancel"}',
            ("cancel", None),
            id="form-cancel",
        ),
        pytest.param(
            {"elicit": "form", "schema": {"properties": {"action": {"type": "string"}}}},
            '{"action": "decline"}',
            ("accept", {"action": "decline"}),
            id="a-field-named-action-is-content",
        ),
        pytest.param(
            {"elicit": "form", "schema": {"properties": {"ok": {"type": "boolean"}}}},
            "yes",
            ("accept", {"ok": True}),
            id="one-field-alone",
        ),
        pytest.param(
            {"elicit": "form", "schema": {"properties": {"n": {"type": "objekt"}}}},
            "3",
            ("accept", {"n": "3"}),
            id="a-schema-agentfsm-cannot-read-is-left-to-the-server",
        ),
    ],
)
def test_the_users_answer_becomes_the_servers_elicitation_result(
    request_: dict[str, object], text: str, expected: tuple[str, object]
) -> None:
    got = elicit_result("d", "t", request_, text)  # type: ignore[arg-type]
    assert (got.action, got.content) == expected


def test_an_input_required_result_may_ask_for_a_url_and_the_retry_answers_it() -> None:
    url = types.ElicitRequestURLParams(
        message="Sign in", url="https://desk.test/login", elicitation_id="e-1"
    )
    answer = types.InputRequiredResult(
        input_requests={"k": types.ElicitRequest(params=url)}, request_state="s"
    )
    server = MCPServer("raw", raw([declared("sign_in")], answer), policies={"sign_in": "allow"})
    system = ToolSystem(load_tools_sync(server))
    asked: list[InputRequest] = []
    context = ToolContext(run_id="r", turn=1, iteration=1)

    asyncio.run(
        system.run_round(
            [ToolCall(id="c1", name="raw__sign_in", arguments="{}")],
            context,
            on_input=lambda c, r: asked.append(r),
        )
    )
    ((question),) = asked
    resume = {"request": question.request, "answer": '{"action": "decline"}'}
    params = retry_params("raw", "sign_in", {}, resume)  # type: ignore[arg-type]

    assert question.question.startswith("Sign in\nhttps://desk.test/login")
    assert params.input_responses == {"k": types.ElicitResult(action="decline")}
    assert params.request_state == "s"


def test_the_time_the_user_takes_does_not_count_against_the_calls_timeout() -> None:
    server = MCPServer("d", desk(), trusted=True, policies=ALLOW, protocol="legacy", timeout=0.2)
    agent = Agent(ordering(), mcp_servers=[server])
    agent.start()
    agent.submit("order pens")
    threading.Event().wait(0.4)  # twice the call's timeout

    done = agent.provide_input("3")

    assert tool_texts(agent)[-1] == '{"result": "accept: 3 pens"}'
    assert done.state == "completed"
    agent.shutdown()


def test_a_session_that_ends_while_the_user_thinks_loses_the_question() -> None:
    target = [sys.executable, SCRIPT]
    server = MCPServer("d", target, trusted=True, policies=ALLOW, protocol="legacy")
    agent = Agent(ordering(), mcp_servers=[server])
    agent.start()
    agent.submit("order pens")
    server.close()  # the stdio server is stopped while the question waits

    done = agent.provide_input("3")

    assert done.state == "completed"
    assert "MCPSessionLostError" in tool_texts(agent)[-1]
    assert "outcome is unknown" in tool_texts(agent)[-1]
    assert server.sessions_opened == 1  # the lost call was not issued again
    agent.shutdown()


def test_a_server_that_stops_waiting_for_the_user_gives_its_own_answer() -> None:
    calls: list[str] = []
    server = MCPServer(
        "d", desk(calls), trusted=True, policies={"hurry": "allow"}, protocol="legacy"
    )
    model = ScriptedModel().tool_call("d__hurry").text("ok")
    agent = Agent(model, mcp_servers=[server])
    agent.start()
    assert agent.submit("hurry").question == "How many pens?"
    threading.Event().wait(0.3)  # the server waits 0.1 s

    agent.provide_input("3")

    assert tool_texts(agent)[-1] == '{"result": "gave up waiting"}'
    assert calls == ["hurry"]
    agent.shutdown()


def test_an_answer_to_a_question_the_server_gave_up_on_is_not_given_to_its_next_one() -> None:
    allow = {"insist": "allow"}
    server = MCPServer("d", desk(), trusted=True, policies=allow, protocol="legacy")
    model = ScriptedModel().tool_call("d__insist").text("ok")
    agent = Agent(model, mcp_servers=[server])
    agent.start()
    assert agent.submit("insist").question == "How many pens?"
    threading.Event().wait(0.3)  # the server gives up after 0.1 s and asks about pencils

    stale = agent.provide_input("3")
    done = agent.provide_input("4")

    assert stale.question == "How many pencils?"
    assert done.state == "completed"
    assert tool_texts(agent)[-1] == '{"result": "accept: 4 pencils"}'
    agent.shutdown()
