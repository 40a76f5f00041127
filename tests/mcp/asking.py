"""An MCP server that asks the user in the middle of its calls (2025-11-25 sessions).

Written with the official SDK; ``python tests/mcp/asking.py`` serves it on stdin/stdout. The
tests connect with ``protocol="legacy"`` (the ``initialize`` handshake), so that the server
asks with ``elicitation/create`` requests, as every server before 2026-07-28 does.
"""

from __future__ import annotations

import sys

import anyio
from mcp import types
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

IDEMPOTENT = types.ToolAnnotations(
    destructive_hint=False, open_world_hint=False, idempotent_hint=True
)


class Quantity(BaseModel):
    """The form ``order`` asks the user to fill."""

    count: int


def desk(calls: list[str] | None = None, answers: list[str] | None = None) -> MCPServer:
    """A server whose tools ask the user mid-call and answer with what they got.

    ``order`` (not idempotent) asks for a form; ``quote`` (idempotent) asks the same form;
    ``sign_in`` asks the user to visit a URL; ``hurry`` stops waiting for the answer after a
    tenth of a second, and ``insist`` then asks another question. Each call's name is
    appended to ``calls``, and the action of each answer to ``order``'s question to
    ``answers``.
    """
    server = MCPServer("desk")
    calls = [] if calls is None else calls

    async def ask(what: str, ctx: Context) -> str:
        answer = await ctx.elicit(f"How many {what}?", Quantity)
        if answers is not None:
            answers.append(answer.action)
        if answer.action == "accept":
            return f"accept: {answer.data.count} {what}"
        return answer.action

    @server.tool()
    async def order(item: str, ctx: Context) -> str:
        """Order some items (asks how many)."""
        calls.append("order")
        return await ask(item, ctx)

    @server.tool(annotations=IDEMPOTENT)
    async def quote(item: str, ctx: Context) -> str:
        """Quote a price for some items (asks how many)."""
        calls.append("quote")
        return await ask(item, ctx)

    @server.tool()
    async def hurry(ctx: Context) -> str:
        """Ask how many, but wait for the answer a tenth of a second only."""
        calls.append("hurry")
        with anyio.move_on_after(0.1):
            return await ask("pens", ctx)
        return "gave up waiting"

    @server.tool()
    async def insist(ctx: Context) -> str:
        """Ask how many pens for a tenth of a second, then how many pencils (no limit)."""
        calls.append("insist")
        with anyio.move_on_after(0.1):
            return await ask("pens", ctx)
        return await ask("pencils", ctx)

    @server.tool(annotations=IDEMPOTENT)
    async def sign_in(ctx: Context) -> str:
        """Sign in (asks the user to visit a page)."""
        calls.append("sign_in")
        answer = await ctx.elicit_url("Sign in to the desk", "https://desk.test/login", "e-1")
        return f"url {answer.action}"

    return server


if __name__ == "__main__":
    sys.exit(desk().run("stdio"))
