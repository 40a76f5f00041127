"""MCP servers for the tests, written with the official SDK; also runnable over stdio.

``python tests/mcp/servers.py`` serves `toolbox` on stdin/stdout; the tests start it as a
subprocess, serve it over Streamable HTTP on 127.0.0.1, or connect to it in-process.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Annotated, Any

import anyio
from mcp import types
from mcp.server import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.server.request_state import RequestStateSecurity
from pydantic import BaseModel

READ_ONLY = types.ToolAnnotations(read_only_hint=True)
SAFE = types.ToolAnnotations(destructive_hint=False, open_world_hint=False, idempotent_hint=True)
OPEN_WORLD = types.ToolAnnotations(destructive_hint=False)  # openWorldHint defaults to true


KEY = b"agentfsm tests: the toolbox's request-state key"
"""Shared by every toolbox process, so a question asked by one is answered to the next."""


class Seat(BaseModel):
    """The form the ``book`` tool asks the user to fill."""

    seat: str


def ask_seat() -> Elicit[Seat]:
    """The question ``book`` cannot do without."""
    return Elicit("Which seat do you want?", Seat)


def toolbox(written: dict[str, str] | None = None) -> MCPServer:
    """A server whose tools cover the annotations table and the ways a call can end.

    ``write`` stores its notes in ``written``, so an in-process test can see what ran;
    ``book`` asks the user a question (an input-required result) before it answers;
    ``learn`` adds a tool, ``shout``, and announces that the tool list changed.
    """
    server = MCPServer("toolbox", request_state_security=RequestStateSecurity(keys=[KEY]))
    written = {} if written is None else written

    @server.tool(annotations=READ_ONLY)
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def write(path: str, text: str) -> str:
        """Write a note (no annotations: destructive by the protocol's default)."""
        written[path] = text
        return f"wrote {len(text)} characters to {path}"

    @server.tool(annotations=SAFE)
    def reset() -> str:
        """Forget every note."""
        written.clear()
        return "reset"

    @server.tool(annotations=OPEN_WORLD)
    def fetch(url: str) -> str:
        """Pretend to fetch a page."""
        return f"<html>{url}</html>"

    @server.tool(annotations=READ_ONLY)
    def fail() -> types.CallToolResult:
        """Always answer with an error result."""
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="disk full")], is_error=True
        )

    @server.tool(annotations=READ_ONLY)
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @server.tool(annotations=READ_ONLY)
    def sleep(seconds: float) -> str:
        """Sleep (blocking the server), then answer."""
        time.sleep(seconds)
        return "awake"

    @server.tool(annotations=READ_ONLY)
    def die() -> str:
        """Kill the server's process in the middle of the call."""
        os._exit(3)

    _asking_and_growing(server, written)
    return server


def _asking_and_growing(server: MCPServer, written: dict[str, str]) -> None:
    """``book``, which asks the user, and ``learn``, which changes the tool list."""

    @server.tool()
    def book(flight: str, seat: Annotated[Seat, Resolve(ask_seat)]) -> str:
        """Book a seat on a flight (asks the user which seat)."""
        written[flight] = seat.seat
        return f"booked {flight}, seat {seat.seat}"

    @server.tool(annotations=READ_ONLY)
    async def learn(ctx: Context) -> str:
        """Learn a new tool, shout, and announce it."""
        if "shout" not in {t.name for t in await server.list_tools()}:

            @server.tool(annotations=READ_ONLY)
            def shout(text: str) -> str:
                """Shout the text."""
                return text.upper()

        await ctx.notify_tools_changed()
        return "learned shout"


POINT = {
    "type": "object",
    "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
    "required": ["x", "y"],
}


def raw(
    tools: list[types.Tool],
    answer: types.CallToolResult | types.InputRequiredResult | Exception | None = None,
    calls: list[str] | None = None,
    *,
    page_size: int | None = None,
    list_delay: float = 0.0,
) -> Server[Any]:
    """A low-level server listing ``tools``; every call answers ``answer`` (or raises it).

    The name of every call it receives is appended to ``calls``. The listing comes in pages
    of ``page_size`` tools (all at once by default), after ``list_delay`` seconds.
    """

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        await anyio.sleep(list_delay)
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = len(tools) if page_size is None else start + page_size
        more = str(end) if end < len(tools) else None
        return types.ListToolsResult(tools=tools[start:end], next_cursor=more)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
        if calls is not None:
            calls.append(params.name)
        if isinstance(answer, Exception):
            raise answer
        return answer if answer is not None else types.CallToolResult(content=[])

    return Server("raw", on_list_tools=list_tools, on_call_tool=call_tool)


def declared(
    name: str = "point", output_schema: Any = None, input_schema: Any = None
) -> types.Tool:
    """A tool as a server lists it, with the given schemas."""
    return types.Tool(
        name=name,
        input_schema=input_schema or {"type": "object", "properties": {"n": {"type": "integer"}}},
        output_schema=output_schema,
    )


def structured(value: Any, text: str = "") -> types.CallToolResult:
    """A call result with ``value`` as its structuredContent."""
    content = [types.TextContent(type="text", text=text)] if text else []
    return types.CallToolResult(content=content, structured_content=value)


if __name__ == "__main__":
    sys.exit(toolbox().run("stdio"))
