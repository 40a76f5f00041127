"""Input schemas of the draft their server declares: draft-07, as the npm servers write them.

A draft-07 tuple (``items`` as an array) is a valid schema, not a reason to refuse the
server, and draft-07 ``dependencies`` are enforced before the server is contacted; with the
``fast`` extra, jsonschema-rs judges them (no warning at every listing).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from agentfsm.states.messages import ToolCall
from agentfsm.tools import Decision, ToolContext, ToolStatus, ToolSystem
from agentfsm.tools.mcp import MCPServer, load_tools_sync
from tests.mcp.servers import declared, raw

CONTEXT = ToolContext(run_id="run-1", turn=1, iteration=1)
DRAFT_07 = "http://json-schema.org/draft-07/schema#"
MOVE = {
    "$schema": DRAFT_07,
    "type": "object",
    "properties": {
        "point": {
            "type": "array",
            "items": [{"type": "number"}, {"type": "number"}],
            "additionalItems": False,
        },
        "source": {"type": "string"},
        "destination": {"type": "string"},
    },
    "required": ["point"],
    "dependencies": {"source": ["destination"]},
    "additionalProperties": False,
}


def _call(call_id: str, **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name="files__move", arguments=json.dumps(arguments))


def test_a_draft_07_server_is_usable_and_its_dependencies_are_enforced(
    caplog: pytest.LogCaptureFixture,
) -> None:
    received: list[str] = []
    server = MCPServer(
        "files", raw([declared("move", input_schema=MOVE)], calls=received), trusted=True
    )
    with caplog.at_level(logging.WARNING, logger="agentfsm.tools"):
        tools = load_tools_sync(server)
    (move,) = tools
    assert move.arguments.validator.engine == "jsonschema-rs"
    assert caplog.records == []  # nothing said about its $schema

    system = ToolSystem(tools)
    calls = [
        _call("ok", point=[1, 2], source="a", destination="b"),
        _call("no-destination", point=[1, 2], source="a"),
        _call("three-numbers", point=[1, 2, 3]),
    ]
    decisions = {"ok": Decision.approve()}
    outcome = system.run_round_sync(calls, CONTEXT, decisions=decisions)

    assert [r.status for r in outcome.results] == [
        ToolStatus.SUCCESS,
        ToolStatus.INVALID_ARGUMENTS,
        ToolStatus.INVALID_ARGUMENTS,
    ]
    assert received == ["move"]  # the server never got arguments its schema forbids
    messages = [r.error.message for r in outcome.results[1:] if r.error is not None]
    assert "'destination' is a dependency of 'source'" in messages[0]
    assert "Additional items are not allowed" in messages[1]
