"""A stateful MCP server (the SDK's), served over stdio: a counter kept in its process.

``python tests/mcp/counter.py [STARTS]`` notes its pid in the file STARTS (if given),
prints a banner on stderr, then serves ``bump`` (the count
after adding one), ``pid`` and ``die`` (exits in the middle of the call).
"""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

SAFE = ToolAnnotations(destructive_hint=False, open_world_hint=False)


def counter() -> MCPServer:
    """A server whose ``bump`` counts the calls its process got."""
    server = MCPServer("counter")
    count = 0

    @server.tool(annotations=SAFE)
    def bump() -> int:
        """Add one to the count; the count."""
        nonlocal count
        count += 1
        return count

    @server.tool(annotations=SAFE)
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @server.tool(annotations=SAFE)
    def die() -> int:
        """Exit in the middle of the call."""
        os._exit(3)

    return server


if __name__ == "__main__":
    if len(sys.argv) > 1:  # a file to note each start in (the benchmark counts processes)
        with open(sys.argv[1], "a") as starts:
            starts.write(f"{os.getpid()}\n")
    print("counter server: starting (a banner on stderr)", file=sys.stderr, flush=True)
    sys.exit(counter().run("stdio"))
