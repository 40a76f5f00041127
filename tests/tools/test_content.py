"""A body that returns a `ToolContent`: its media on the tool message, its user content aside."""

from __future__ import annotations

import asyncio
import math

import pytest

from agentfsm import Agent, ScriptedModel
from agentfsm.states.content import ContentPart
from agentfsm.states.messages import ToolCall
from agentfsm.stores import MemoryStore, replay
from agentfsm.tools import ToolContext, ToolStatus, ToolSystem, tool
from agentfsm.tools.content import ToolContent

PNG = ContentPart.media("image", "image/png", "iVBORw0KGgo=")
NOTE = ContentPart.of_text("for Ada only")
CONTEXT = ToolContext(run_id="run-1", turn=1, iteration=1)


@tool
def chart(region: str) -> ToolContent:
    """A chart of a region's sales."""
    return ToolContent({"region": region, "up": 12}, parts=(PNG,), for_user=(NOTE,))


@tool
def broken() -> ToolContent:
    """Returns a value that is no JSON."""
    return ToolContent(math.nan, parts=(PNG,))


def test_a_round_gives_the_media_to_the_tool_message_and_the_user_content_to_on_show() -> None:
    shown: list[tuple[str, tuple[ContentPart, ...]]] = []
    system = ToolSystem([chart])
    call = ToolCall(id="c1", name="chart", arguments='{"region": "north"}')

    round_ = system.run_round_sync([call], CONTEXT)  # no on_show: the user content is dropped
    told = asyncio.run(
        system.run_round([call], CONTEXT, on_show=lambda c, parts: shown.append((c.id, parts)))
    )

    for done in (round_, told):
        (result,), (message,) = done.results, done.messages
        assert (result.status, result.output) == (
            ToolStatus.SUCCESS,
            {"region": "north", "up": 12},
        )
        assert (message.content, message.parts) == ('{"region": "north", "up": 12}', (PNG,))
        assert "for Ada only" not in message.model_dump_json()
    assert shown == [("c1", (NOTE,))]


def test_a_tool_content_whose_value_is_no_json_is_an_error_result() -> None:
    (result,) = (
        ToolSystem([broken]).run_round_sync([ToolCall(id="c1", name="broken")], CONTEXT).results
    )
    assert (result.status, result.error.type if result.error else None) == (
        ToolStatus.ERROR,
        "ToolOutputError",
    )


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"parts": (NOTE,)}, r"ToolContent.parts must hold media ContentParts"),
        ({"parts": ("an image",)}, r"ToolContent.parts must hold media"),
        ({"for_user": ({"type": "text"},)}, r"ToolContent.for_user must hold ContentParts"),
    ],
    ids=["text-as-media", "not-a-part", "user-dict"],
)
def test_tool_content_refuses_what_is_not_its_kind_of_part(
    fields: dict[str, object], problem: str
) -> None:
    with pytest.raises(TypeError, match=problem):
        ToolContent("x", **fields)  # type: ignore[arg-type]


def test_an_agent_records_the_user_content_and_replays_the_parts() -> None:
    store = MemoryStore()
    model = ScriptedModel().tool_call("chart", region="north").text("North is up 12%.")
    agent = Agent(model, [chart], store=store, run_id="r")
    agent.start()
    agent.submit("How is the north?")
    log = list(store.events("r"))
    snapshot = store.load("r")
    agent.shutdown()

    kinds = [event.event for event in log]
    assert kinds.index("user_content") == kinds.index("tool_result") - 1
    (shown,) = [e.data for e in log if e.event == "user_content"]
    assert shown == {
        "call_id": shown["call_id"],
        "name": "chart",
        "content": [{"type": "text", "text": "for Ada only"}],
    }
    assert snapshot is not None
    replay(log, expected=snapshot)
    (message,) = [m for m in snapshot.messages if m.role == "tool"]
    assert message.parts == (PNG,)
    assert all("for Ada only" not in m.model_dump_json() for m in snapshot.messages)
