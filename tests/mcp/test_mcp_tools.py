"""MCP tools behind the ToolSystem's door, against real SDK servers connected in-process.

The permission matrix (trust, annotations and the application's policies), names and clashes,
argument validation before any call, and how each kind of answer becomes a `ToolResult`.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import MCPError, types

from agentfsm.errors import MCPConnectionError, MCPServerError
from agentfsm.states.content import ContentPart
from agentfsm.states.messages import ToolCall
from agentfsm.tools import Decision, ToolContext, ToolPolicy, ToolStatus, ToolSystem
from agentfsm.tools._mcp_forms import form_content
from agentfsm.tools.mcp import SEPARATOR, MCPServer, default_policy, load_tools_sync
from agentfsm.tools.sources import InputRequest
from tests.mcp.servers import POINT, declared, raw, structured, toolbox

CONTEXT = ToolContext(run_id="run-1", turn=1, iteration=1)
A = types.ToolAnnotations


def call(name: str, call_id: str = "c1", **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=json.dumps(arguments))


def policies(server: MCPServer) -> dict[str, tuple[str, bool]]:
    return {t.name: (t.policy.value, t.idempotent) for t in load_tools_sync(server)}


# --- the annotations table ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        (None, ("require_approval", False)),  # destructive and open-world by default
        (A(read_only_hint=True), ("allow", True)),
        (A(read_only_hint=True, destructive_hint=True), ("allow", True)),
        (A(destructive_hint=True), ("require_approval", False)),
        (A(destructive_hint=False), ("require_approval", False)),  # open world by default
        (A(destructive_hint=False, open_world_hint=True), ("require_approval", False)),
        (A(destructive_hint=False, open_world_hint=False), ("allow", False)),
        (A(destructive_hint=False, open_world_hint=False, idempotent_hint=True), ("allow", True)),
        (A(idempotent_hint=True), ("require_approval", True)),
    ],
)
def test_a_trusted_servers_annotations_set_the_policy(
    annotations: types.ToolAnnotations | None, expected: tuple[str, bool]
) -> None:
    policy, idempotent = default_policy(annotations, trusted=True)
    assert (policy.value, idempotent) == expected


hints = st.one_of(st.none(), st.booleans())


@given(read_only=hints, destructive=hints, idempotent=hints, open_world=hints)
def test_an_untrusted_servers_annotations_are_ignored(
    read_only: bool | None,
    destructive: bool | None,
    idempotent: bool | None,
    open_world: bool | None,
) -> None:
    annotations = A(
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=open_world,
    )
    assert default_policy(annotations, trusted=False) == (ToolPolicy.REQUIRE_APPROVAL, False)
    trusted, _ = default_policy(annotations, trusted=True)
    # Trusted, a tool runs freely only if it says it is read-only, or neither destructive nor
    # open-world in so many words.
    free = read_only is True or (destructive is False and open_world is False)
    assert (trusted is ToolPolicy.ALLOW) == free


def test_the_listing_of_a_trusted_server_follows_the_table() -> None:
    listed = policies(MCPServer("tb", toolbox(), trusted=True))

    assert listed["tb__add"] == ("allow", True)
    assert listed["tb__write"] == ("require_approval", False)
    assert listed["tb__reset"] == ("allow", True)
    assert listed["tb__fetch"] == ("require_approval", False)


def test_every_tool_of_an_untrusted_server_needs_approval_unless_the_application_says() -> None:
    listed = policies(MCPServer("tb", toolbox(), policies={"add": "allow", "pid": "deny"}))

    assert listed.pop("tb__add") == ("allow", False)
    assert listed.pop("tb__pid") == ("deny", False)
    assert set(listed.values()) == {("require_approval", False)}


def test_the_applications_policy_wins_over_a_trusted_servers_annotations() -> None:
    listed = policies(MCPServer("tb", toolbox(), trusted=True, policies={"add": "deny"}))
    assert listed["tb__add"] == ("deny", True)


# --- names and clashes -------------------------------------------------------------------


def test_names_are_prefix_separator_tool_and_keep_the_servers_description() -> None:
    tools = load_tools_sync(MCPServer("tb", toolbox()))

    assert SEPARATOR == "__"
    assert [t.name for t in tools][:3] == ["tb__add", "tb__write", "tb__reset"]
    assert tools[0].description == "Add two integers."
    assert tools[0].parameters["required"] == ["a", "b"]


def test_a_clash_with_the_applications_tools_is_refused_when_the_list_is_read() -> None:
    with pytest.raises(MCPServerError, match=r"'tb__add' clashes with a tool of the application"):
        load_tools_sync(MCPServer("tb", toolbox()), taken=("tb__add",))


def test_two_servers_under_one_prefix_clash() -> None:
    with pytest.raises(MCPServerError, match=r"clashes with a tool of MCP server 'tb'"):
        load_tools_sync(MCPServer("tb", toolbox()), MCPServer("tb", toolbox()))


@pytest.mark.parametrize("name", ["read.file", "a" * 70, "files/read"])
def test_a_tool_name_models_refuse_is_refused_with_the_allowed_pattern(name: str) -> None:
    with pytest.raises(MCPServerError, match=r"cannot be offered as .*\[a-zA-Z0-9_-\]") as info:
        load_tools_sync(MCPServer("raw", raw([declared(name)])))
    assert info.value.server == "raw"


URL = "http://127.0.0.1:1/mcp"


@pytest.mark.parametrize(
    ("arguments", "error", "problem"),
    [
        ({"prefix": "a.b", "target": URL}, ValueError, "prefix must be"),
        ({"prefix": "a__b", "target": URL}, ValueError, "prefix must be"),
        ({"prefix": "a", "target": []}, ValueError, "target must be"),
        ({"prefix": "a", "target": 42}, ValueError, "target must be"),
        ({"prefix": "a", "target": ""}, ValueError, "target '' is not a Streamable HTTP URL"),
        (
            {"prefix": "a", "target": "python server.py"},
            ValueError,
            r"a command line is a list of strings",
        ),
        ({"prefix": "a", "target": URL, "timeout": 0}, ValueError, "timeout must be"),
        ({"prefix": "a", "target": URL, "timeout": True}, ValueError, "timeout must be"),
        (
            {"prefix": "a", "target": URL, "protocol": "2025-11-25"},
            ValueError,
            r"protocol must be one of \['auto', 'legacy', '2026-07-28'",
        ),
        (
            {"prefix": "a", "target": URL, "policies": {"x": "maybe"}},
            ValueError,
            r"policies\['x'\]",
        ),
        (
            {"prefix": "a", "target": URL, "policies": ["x"]},
            TypeError,
            "policies must be a mapping",
        ),
        (
            {"prefix": "a", "target": URL, "policies": {1: "allow"}},
            TypeError,
            "tool name of policies",
        ),
        (
            {"prefix": "a", "target": URL, "trusted": "yes"},
            TypeError,
            "trusted must be True or False",
        ),
    ],
)
def test_a_server_declared_wrongly_is_refused_with_what_is_allowed(
    arguments: dict[str, Any], error: type[Exception], problem: str
) -> None:
    with pytest.raises(error, match=problem):
        MCPServer(**arguments)


def test_loading_refuses_what_is_no_server_before_contacting_any() -> None:
    with pytest.raises(
        TypeError, match=r"^servers\[1\] must be an MCPServer, not 'files' \(str\)"
    ):
        load_tools_sync(MCPServer("tb", toolbox()), "files")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^taken must be a collection of names"):
        load_tools_sync(MCPServer("tb", toolbox()), taken="tb__add")


def test_policies_for_tools_the_server_does_not_list_are_refused() -> None:
    with pytest.raises(MCPServerError, match=r"policies name tools it does not list: \['nope'\]"):
        load_tools_sync(MCPServer("tb", toolbox(), policies={"nope": "allow"}))


def test_an_invalid_input_or_output_schema_is_refused_when_the_list_is_read() -> None:
    bad_input = declared(input_schema={"type": "object", "properties": {"n": {"type": "no"}}})
    with pytest.raises(
        MCPServerError, match=r"cannot be offered as 'raw__point' \(.*/properties/n/type"
    ):
        load_tools_sync(MCPServer("raw", raw([bad_input])))
    bad_output = declared(output_schema={"type": "nonsense"})
    with pytest.raises(MCPServerError, match="has an outputSchema that is not valid"):
        load_tools_sync(MCPServer("raw", raw([bad_output])))


def test_a_server_that_cannot_be_reached_fails_the_listing_clearly() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = MCPServer("gone", f"http://127.0.0.1:{port}/mcp", timeout=5)
    with pytest.raises(MCPConnectionError, match=r"MCP server 'gone': listing its tools failed"):
        load_tools_sync(server)


# --- the same door as our own tools ------------------------------------------------------


def round_of(server: MCPServer, *calls: ToolCall, **options: Any) -> list[Any]:
    system = ToolSystem(load_tools_sync(server))
    return list(system.run_round_sync(calls, CONTEXT, **options).results)


def test_arguments_are_validated_before_the_server_is_contacted() -> None:
    received: list[str] = []
    server = MCPServer(
        "raw", raw([declared("count")], calls=received), policies={"count": "allow"}
    )

    bad, good = round_of(
        server, call("raw__count", "c1", n="three"), call("raw__count", "c2", n=3)
    )

    assert bad.status is ToolStatus.INVALID_ARGUMENTS
    assert "'three' is not of type 'integer'" in bad.error.message
    assert (bad.attempts, good.status, received) == (0, ToolStatus.SUCCESS, ["count"])


def test_a_call_needing_approval_runs_only_once_approved() -> None:
    notes: dict[str, str] = {}
    server = MCPServer("tb", toolbox(notes))
    write = call("tb__write", path="a.txt", text="hi")

    (refused,) = round_of(server, write)
    assert (refused.status, notes) == (ToolStatus.DENIED, {})
    assert "requires approval" in refused.error.message

    (ran,) = round_of(server, write, decisions={"c1": Decision.approve()})
    assert (ran.status, ran.output, notes) == (
        ToolStatus.SUCCESS,
        {"result": "wrote 2 characters to a.txt"},
        {"a.txt": "hi"},
    )


def test_a_tool_not_enabled_for_the_run_is_never_called() -> None:
    received: list[str] = []
    server = MCPServer(
        "raw", raw([declared("count")], calls=received), policies={"count": "allow"}
    )

    (result,) = round_of(server, call("raw__count", n=1), enabled=())

    assert (result.status, received) == (ToolStatus.DISABLED, [])


def test_an_is_error_result_reaches_the_model_as_a_tool_error() -> None:
    (result,) = round_of(MCPServer("tb", toolbox(), trusted=True), call("tb__fail"))

    assert result.status is ToolStatus.ERROR
    assert result.error.type == "MCPToolError"
    assert result.content() == "[error] MCPToolError: tool 'tb__fail' reported an error: disk full"


def test_structured_content_that_matches_the_output_schema_is_the_output() -> None:
    server = MCPServer(
        "raw", raw([declared(output_schema=POINT)], structured({"x": 1, "y": 2}, "(1, 2)"))
    )
    (result,) = round_of(server, call("raw__point", n=1), decisions={"c1": Decision.approve()})
    assert (result.status, result.output) == (ToolStatus.SUCCESS, {"x": 1, "y": 2})


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (structured({"x": 1, "y": "two"}), r"at '/y': 'two' is not of type 'integer'"),
        (structured({"x": 1}), r"at '/': 'y' is a required property"),
        (types.CallToolResult(content=[]), "declares an outputSchema but returned no"),
    ],
)
def test_structured_content_off_the_output_schema_is_an_error_result(
    answer: types.CallToolResult, problem: str
) -> None:
    server = MCPServer(
        "raw", raw([declared(output_schema=POINT)], answer), policies={"point": "allow"}
    )

    (result,) = round_of(server, call("raw__point", n=1))

    assert (result.status, result.error.type) == (ToolStatus.ERROR, "MCPServerError")
    assert result.error.message.startswith("MCP server 'raw': its tool 'raw__point' ")
    assert re.search(problem, result.error.message)


def test_unstructured_content_is_text_and_media_is_a_part_of_the_tool_message() -> None:
    text = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="a"),
            types.TextContent(type="text", text="b"),
        ]
    )
    image = types.CallToolResult(
        content=[types.ImageContent(type="image", data="AAAA", mime_type="image/png")]
    )
    rounds = []
    for answer in (text, image):
        server = MCPServer("raw", raw([declared()], answer), policies={"point": "allow"})
        system = ToolSystem(load_tools_sync(server))
        rounds.append(system.run_round_sync([call("raw__point", n=1)], CONTEXT))

    assert [r.results[0].output for r in rounds] == ["a\nb", ""]
    assert [r.messages[0].content for r in rounds] == ["a\nb", ""]  # no base64 as text
    assert rounds[0].messages[0].parts == ()
    assert rounds[1].messages[0].parts == (ContentPart.media("image", "image/png", "AAAA"),)


def test_a_protocol_error_becomes_an_error_result() -> None:
    broken = raw([declared()], MCPError(-32602, "no such thing"))
    server = MCPServer("raw", broken, policies={"point": "allow"})

    (result,) = round_of(server, call("raw__point", n=1))

    assert (result.status, result.error.type) == (ToolStatus.ERROR, "MCPServerError")
    assert "calling its tool 'point' failed with a protocol error" in result.error.message
    assert "no such thing" in result.error.message


def test_import_agentfsm_does_not_import_the_mcp_sdk() -> None:
    code = (
        "import sys, agentfsm, agentfsm.tools\n"
        "print(any(m.split('.')[0] == 'mcp' for m in sys.modules))"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "False"


def test_every_page_of_a_listing_is_read() -> None:
    tools = [declared(f"t{n}") for n in range(5)]
    listed = load_tools_sync(MCPServer("raw", raw(tools, page_size=2)))
    assert [t.name for t in listed] == [f"raw__t{n}" for n in range(5)]


def test_a_listing_that_outlives_the_timeout_fails_clearly() -> None:
    server = MCPServer("slow", raw([declared()], list_delay=30), timeout=0.2)
    with pytest.raises(MCPConnectionError, match=r"took longer than its timeout of 0.2s"):
        load_tools_sync(server)


def test_a_server_asking_only_with_a_request_state_is_an_error_result() -> None:
    asking = types.InputRequiredResult(request_state="opaque")
    server = MCPServer("raw", raw([declared()], asking), policies={"point": "allow"})

    (result,) = round_of(server, call("raw__point", n=1))

    assert (result.status, result.error.type) == (ToolStatus.ERROR, "MCPServerError")
    assert "only a request state, no question" in result.error.message


def test_a_question_in_a_round_that_cannot_ask_is_an_error_result_naming_it() -> None:
    notes: dict[str, str] = {}
    server = MCPServer("tb", toolbox(notes), policies={"book": "allow"})

    (result,) = round_of(server, call("tb__book", flight="LH1"))

    assert (result.status, result.error.type) == (ToolStatus.ERROR, "InputRequired")
    assert "'Which seat do you want?'" in result.error.message
    assert notes == {}  # the body did not run: the server is waiting for the answer


@pytest.mark.parametrize(
    ("answer", "booked"), [("12C", "12C"), ('{"seat": "3A"}', "3A")], ids=["text", "json"]
)
def test_the_retry_carries_the_answer_and_the_request_state(answer: str, booked: str) -> None:
    notes: dict[str, str] = {}
    system = ToolSystem(
        load_tools_sync(MCPServer("tb", toolbox(notes), policies={"book": "allow"}))
    )
    asked: list[tuple[str, InputRequest]] = []

    book = [call("tb__book", flight="LH1")]

    stopped = asyncio.run(
        system.run_round(book, CONTEXT, on_input=lambda c, r: asked.append((c.id, r)))
    )
    ((call_id, request),) = asked
    resume = {"request": json.loads(json.dumps(request.request)), "answer": answer}
    retried = asyncio.run(system.run_round(book, CONTEXT, resumes={"c1": resume}))

    assert (call_id, request.question) == ("c1", "Which seat do you want?")
    assert stopped.results == ()  # the round stopped at the call that asked
    assert retried.results[0].output == {"result": f"booked LH1, seat {booked}"}
    assert notes == {"LH1": booked}


def test_an_answer_that_does_not_fit_a_form_of_several_fields_asks_again() -> None:
    request = {
        "key": "k",
        "message": "Seat and meal?",
        "schema": {"properties": {"a": {}, "b": {}}},
        "request_state": "s",
    }
    asked: list[InputRequest] = []
    server = MCPServer("tb", toolbox(), policies={"book": "allow"})
    system = ToolSystem(load_tools_sync(server))

    stopped = asyncio.run(
        system.run_round(
            [call("tb__book", flight="LH1")],
            CONTEXT,
            resumes={"c1": {"request": request, "answer": "just text"}},
            on_input=lambda c, r: asked.append(r),
        )
    )

    # nothing was sent: the same question, with what was wrong, and the same request
    assert stopped.results == ()
    ((again),) = asked
    assert "answer with a JSON object of them" in again.question
    assert again.question.endswith("Seat and meal?")
    assert again.request == request


def test_a_listing_that_never_ends_is_refused() -> None:
    endless = raw([declared(f"t{n}") for n in range(101)], page_size=1)
    with pytest.raises(MCPServerError, match="did not end after 100 pages"):
        load_tools_sync(MCPServer("raw", endless))


@pytest.mark.parametrize(
    ("kind", "answer", "content"),
    [
        ("integer", " 3 ", {"f": 3}),
        ("number", "2.5", {"f": 2.5}),
        ("boolean", "Yes", {"f": True}),
        ("boolean", "no", {"f": False}),
        ("integer", "three", {"f": "three"}),  # left to the server to refuse
        ("string", '{"f": "x", "g": 1}', {"f": "x", "g": 1}),  # a JSON object is the content
    ],
)
def test_an_answer_fills_a_form_of_one_field_in_its_type(
    kind: str, answer: str, content: dict[str, object]
) -> None:
    schema = {"properties": {"f": {"type": kind}}}

    assert form_content("p", "t", schema, answer) == content
