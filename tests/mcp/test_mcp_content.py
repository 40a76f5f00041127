"""MCP media and user-only content, from a real MCP server to each model API's wire.

The ``chart`` tool of `tests.mcp.media` answers with text, a PNG, a WAV clip, a note for the
user only and one for the model only. Through each real SDK (``openai`` Chat Completions and
Responses, ``anthropic``) against the loopback server, the image reaches the wire as the
API's own part, no text part holds base64, the audio is a placeholder, and the user's note
never reaches the model: it is a ``user_content`` record, told to listeners and stored. A
second Agent restored from the SQLite file sends the same content.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import types

from agentfsm import Agent, OpenAIModel, ToolCall
from agentfsm.llm import AnthropicModel, OpenAIResponsesModel
from agentfsm.llm.base import Model
from agentfsm.states.content import ContentPart
from agentfsm.states.events import Event
from agentfsm.states.messages import Message
from agentfsm.stores import SQLiteStore, replay
from agentfsm.testing import LoopbackOpenAIServer, Reply
from agentfsm.tools import ToolContext, ToolResult, ToolSystem
from agentfsm.tools.mcp import MCPServer, load_tools_sync
from tests.mcp.media import ASSISTANT_TEXT, AUDIO, IMAGE, MODEL_TEXT, USER_TEXT, media_server
from tests.mcp.servers import declared, raw

SCRIPT = str(Path(__file__).with_name("media.py"))
CHART = ToolCall(id="c1", name="media__chart", arguments="{}")
DATA_URL = f"data:image/png;base64,{IMAGE}"
APIS = ["chat", "responses", "anthropic"]


def model_for(api: str, server: LoopbackOpenAIServer) -> Model:
    if api == "chat":
        return OpenAIModel("gpt-test", base_url=server.url, api_key="test", timeout=10)
    if api == "responses":
        return OpenAIResponsesModel("gpt-test", base_url=server.url, api_key="test", timeout=10)
    return AnthropicModel(
        "claude-test", base_url=server.url.removesuffix("/v1"), api_key="test", timeout=10
    )


def texts(value: Any) -> Iterator[str]:
    """Every text the model reads in a request body: text parts and plain-string contents."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("text", "content", "output", "input") and isinstance(item, str):
                yield item
            else:
                yield from texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from texts(item)


def image_parts(api: str, body: dict[str, Any]) -> list[Any]:
    """The image parts of the request, in the API's own form."""
    if api == "chat":
        return [
            part["image_url"]["url"]
            for message in body["messages"]
            if isinstance(message["content"], list)
            for part in message["content"]
            if part["type"] == "image_url"
        ]
    if api == "responses":
        return [
            part["image_url"]
            for item in body["input"]
            if item.get("type") == "function_call_output" and isinstance(item["output"], list)
            for part in item["output"]
            if part["type"] == "input_image"
        ]
    return [
        f"data:{block['source']['media_type']};base64,{block['source']['data']}"
        for turn in body["messages"]
        if isinstance(turn["content"], list)
        for result in turn["content"]
        if result["type"] == "tool_result" and isinstance(result["content"], list)
        for block in result["content"]
        if block["type"] == "image"
    ]


def assert_the_model_got_its_share_only(api: str, body: dict[str, Any]) -> None:
    shown = list(texts(body))
    assert image_parts(api, body) == [DATA_URL]
    assert not any(IMAGE in text or AUDIO in text for text in shown)  # no base64 as text
    assert AUDIO not in str(body)  # audio: a placeholder for each of these APIs
    assert USER_TEXT not in str(body)  # the user's own note never reaches the model
    joined = "\n".join(shown)
    assert MODEL_TEXT in joined
    assert ASSISTANT_TEXT in joined
    assert "[audio audio/wav, 444 bytes: not shown to this model]" in joined


@pytest.mark.parametrize("api", APIS)
def test_each_api_gets_the_image_as_its_own_part_and_the_user_gets_the_note(api: str) -> None:
    told: list[Event] = []
    with LoopbackOpenAIServer([Reply(tool_calls=(CHART,)), Reply("Sales rose.")]) as server:
        agent = Agent(
            model_for(api, server),
            mcp_servers=[MCPServer("media", media_server(), trusted=True)],
            listeners=[lambda event: told.append(event) if isinstance(event, Event) else None],
        )
        agent.start()
        done = agent.submit("How did sales go?")
        agent.shutdown()
        body = server.requests[1].json

    assert (done.state, done.reply) == ("completed", "Sales rose.")
    assert_the_model_got_its_share_only(api, body)
    shown = [event for event in told if event.event == "user_content"]
    assert [event.data for event in shown] == [
        {
            "call_id": "c1",
            "name": "media__chart",
            "content": [{"type": "text", "text": USER_TEXT}],
        }
    ]
    (tool_message,) = [m for m in agent.messages if m.role == "tool"]
    assert USER_TEXT not in str(tool_message.model_dump())
    assert [part.type for part in tool_message.parts] == ["image", "audio"]


@pytest.mark.parametrize("api", APIS)
def test_a_restored_agent_sends_the_same_parts(api: str, tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    steps = [Reply(tool_calls=(CHART,)), Reply("Sales rose."), Reply("Still rising.")]
    with LoopbackOpenAIServer(steps) as server:
        first = Agent(
            model_for(api, server),
            store=SQLiteStore(path),
            mcp_servers=[MCPServer("media", media_server(), trusted=True)],
            run_id="sales",
        )
        first.start()
        first.submit("How did sales go?")
        first.close()
        # Another "process": a new Agent and client, from the file alone.
        second = Agent(model_for(api, server), store=SQLiteStore(path), run_id="sales")
        second.start()
        second.submit("And now?")
        second.close()
        before, after = server.requests[1].json, server.requests[2].json

    assert_the_model_got_its_share_only(api, after)
    key = "input" if api == "responses" else "messages"
    assert after[key][: len(before[key])] == before[key]


def test_e2e_a_stdio_server_s_chart_through_the_public_api(tmp_path: Path) -> None:
    """Over stdio, Chat Completions, stored in SQLite: wire, event, log and replay agree."""
    path = tmp_path / "runs.db"
    told: list[Event] = []
    with LoopbackOpenAIServer([Reply(tool_calls=(CHART,)), Reply("Sales rose.")]) as server:
        stdio = MCPServer("media", [sys.executable, SCRIPT], trusted=True, timeout=20)
        agent = Agent(
            OpenAIModel("gpt-test", base_url=server.url, api_key="test", timeout=10),
            store=SQLiteStore(path),
            mcp_servers=[stdio],
            run_id="sales",
        )
        agent.add_listener(lambda event: told.append(event) if isinstance(event, Event) else None)
        agent.start()
        done = agent.submit("How did sales go?")
        agent.close()
        body = server.requests[1].json

    assert done.reply == "Sales rose."
    assert_the_model_got_its_share_only("chat", body)
    messages = body["messages"]
    tool_at = next(i for i, m in enumerate(messages) if m["role"] == "tool")
    assert messages[tool_at + 1]["role"] == "user"  # right after the round's tool message
    store = SQLiteStore(path)
    log = list(store.events("sales"))
    (shown,) = [event for event in log if event.event == "user_content"]
    assert shown.data["content"] == [{"type": "text", "text": USER_TEXT}]
    assert shown in told
    (result,) = [event for event in log if event.event == "tool_result"]
    assert [ContentPart.model_validate(p).data for p in result.data["message"]["parts"]] == [
        IMAGE,
        AUDIO,
    ]
    snapshot = store.load("sales")
    assert snapshot is not None
    replay(log, expected=snapshot)  # I10 with parts: raises if the two differ
    # What the media weigh on the record: their base64 and a few hundred bytes of JSON, in
    # the result's record and again in the snapshot's conversation.
    media = len(IMAGE) + len(AUDIO)
    assert media < len(json.dumps(result.data)) < media + 1_000
    (stored,) = [m for m in snapshot.messages if m.role == "tool"]
    assert media < len(stored.model_dump_json()) < media + 1_000


USER_ONLY = types.Annotations(audience=["user"])


def answer_of(result: types.CallToolResult) -> tuple[ToolResult, Message, list[Any]]:
    """One call of a raw server answering ``result``: its result, tool message, user content."""
    shown: list[Any] = []
    server = MCPServer("raw", raw([declared()], result), policies={"point": "allow"})
    system = ToolSystem(load_tools_sync(server))
    done = asyncio.run(
        system.run_round(
            [ToolCall(id="c1", name="raw__point")],
            ToolContext(run_id="r"),
            on_show=lambda call, parts: shown.extend(parts),
        )
    )
    return done.results[0], done.messages[0], shown


def test_resources_links_and_structured_content_keep_their_place() -> None:
    pdf = types.BlobResourceContents(
        uri="file:///r/q1.pdf", mime_type="application/pdf", blob="JVBERi0="
    )
    notes = types.TextResourceContents(uri="file:///r/notes.txt", text="see page 2")
    link = types.ResourceLink(uri="file:///r/all.csv", name="all.csv")
    result, message, shown = answer_of(
        types.CallToolResult(
            content=[
                types.EmbeddedResource(type="resource", resource=pdf),
                types.EmbeddedResource(type="resource", resource=notes),
                link,
                types.ImageContent(
                    type="image", data=IMAGE, mime_type="image/png", annotations=USER_ONLY
                ),
            ],
            structured_content={"pages": 2},
        )
    )

    assert result.output == {"pages": 2}  # the structured content wins over the text, as before
    assert message.parts == (
        ContentPart.media("file", "application/pdf", "JVBERi0=", uri="file:///r/q1.pdf"),
    )
    assert shown == [ContentPart.media("image", "image/png", IMAGE)]  # the user's, not the model's
    assert IMAGE not in message.model_dump_json()


def test_text_resources_and_links_are_text_when_nothing_else_is_media() -> None:
    notes = types.TextResourceContents(uri="file:///r/notes.txt", text="see page 2")
    link = types.ResourceLink(uri="file:///r/all.csv", name="all.csv")
    result, message, shown = answer_of(
        types.CallToolResult(
            content=[types.EmbeddedResource(type="resource", resource=notes), link]
        )
    )

    lines = str(result.output).splitlines()
    assert [json.loads(line)["type"] for line in lines] == ["resource", "resource_link"]
    assert (message.parts, shown) == ((), [])


def test_an_error_result_tells_the_model_its_text_not_the_user_s() -> None:
    result, message, _ = answer_of(
        types.CallToolResult(
            content=[
                types.TextContent(type="text", text="quota exceeded"),
                types.TextContent(type="text", text="Ada's plan: free", annotations=USER_ONLY),
            ],
            is_error=True,
        )
    )

    assert result.error is not None
    assert "quota exceeded" in result.error.message
    assert "Ada" not in str(message.content)
