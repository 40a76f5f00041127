"""Tool lists: a listing is recorded only when it differs; allow/deny choose what is offered."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentfsm import Agent, ScriptedModel
from agentfsm.errors import MCPServerError
from agentfsm.stores import SQLiteStore
from agentfsm.tools.mcp import MCPServer, load_tools_sync
from tests.mcp.servers import toolbox
from tests.mcp.test_mcp_runs import assert_replays, listed


def test_a_server_announcing_a_change_every_call_is_recorded_only_when_it_differs(
    tmp_path: Path,
) -> None:
    # ``learn`` announces a change of the tool list at every call; only its first changes it.
    model = ScriptedModel()
    for _ in range(4):
        model = model.tool_call("tb__learn")
    model = model.text("Learned.").text("Again.")
    store = SQLiteStore(tmp_path / "runs.db")
    agent = Agent(model, store=store, mcp_servers=[MCPServer("tb", toolbox(), trusted=True)])
    agent.start()

    assert agent.submit("learn, four times").reply == "Learned."
    assert agent.submit("and again").reply == "Again."  # a new turn lists the same tools

    events = assert_replays(store, agent.run_id)
    recorded = listed(events)
    assert len(recorded) == 2  # the first listing, and the one with ``shout``
    assert "shout" not in recorded[0][1]
    assert "shout" in recorded[1][1]
    assert "tb__shout" in agent.tools.registry.names
    agent.shutdown()


def names(server: MCPServer) -> list[str]:
    return sorted(tool.name for tool in load_tools_sync(server))


EVERY = ("add", "book", "die", "fail", "fetch", "learn", "pid", "reset", "sleep", "write")


@pytest.mark.parametrize(
    ("allow", "deny", "offered"),
    [
        (None, (), [*EVERY]),
        (["add", "pid"], (), ["add", "pid"]),
        (None, ["die", "sleep"], [n for n in EVERY if n not in ("die", "sleep")]),
        (["*e*"], ["sleep", "r*"], ["die", "fetch", "learn", "write"]),
        (["f*"], ["f*"], []),
    ],
    ids=["all", "allow-names", "deny-names", "globs", "deny-wins"],
)
def test_allow_and_deny_choose_the_tools_offered(
    allow: list[str] | None, deny: list[str], offered: list[str]
) -> None:
    server = MCPServer("tb", toolbox(), allow=allow, deny=deny)
    assert names(server) == [f"tb__{name}" for name in offered]


def test_a_denied_tool_is_not_offered_to_the_agents_model() -> None:
    server = MCPServer("tb", toolbox(), trusted=True, deny=["die", "write"])
    agent = Agent(ScriptedModel().text("ok"), mcp_servers=[server])
    agent.start()
    agent.submit("hello")
    offered = agent.tools.registry.names
    assert "tb__add" in offered
    assert not {"tb__die", "tb__write"} & set(offered)
    agent.shutdown()


def test_a_name_the_server_does_not_list_is_refused_naming_it() -> None:
    with pytest.raises(MCPServerError, match=r"allow names tools it does not list: \['ad'\]"):
        load_tools_sync(MCPServer("tb", toolbox(), allow=["ad"]))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"allow": "add"}, "allow must be a list of tool names or glob patterns"),
        ({"deny": [3]}, "deny must be a list of tool names or glob patterns"),
        ({"allow": [""]}, "allow must be a list of tool names or glob patterns"),
    ],
    ids=["allow-a-string", "deny-not-strings", "empty-pattern"],
)
def test_bad_allow_or_deny_is_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        MCPServer("tb", toolbox(), **options)  # type: ignore[arg-type]
