"""Errors of MCP servers and their tools."""

from __future__ import annotations

from agentfsm.errors._base import AgentFSMError


class MCPServerError(AgentFSMError):
    """An MCP server could not be used: its tool list, a protocol error, or a bad result.

    Raised when a server's tools are listed (a name clash, a name or schema agentfsm cannot
    offer, a server that does not answer). Inside a tool round it becomes the call's error
    `ToolResult`, so the model reads it and the run goes on.

    Attributes:
        server: The prefix the application gave the server.
        problem: What went wrong, and what is allowed.
    """

    def __init__(self, server: str, problem: str) -> None:
        self.server = server
        self.problem = problem
        super().__init__(f"MCP server {server!r}: {problem}")


class MCPConnectionError(MCPServerError):
    """An MCP server could not be reached, or went away during a request.

    The one MCP failure an idempotent tool's call is retried after.
    """


class MCPSessionLostError(MCPServerError):
    """The session whose server asked the user in the middle of a call is gone.

    The answer came after the process restarted (or the session died, or the question
    waited too long and the server was told ``cancel``): the call cannot go on, and what
    the server did before it asked is unknown. An idempotent tool's call is issued again
    instead; any other ends with this error result, and is not run again.

    Attributes:
        tool_name: The server's name of the tool whose call asked.
        question: The server's message.
    """

    def __init__(self, server: str, tool_name: str, question: str) -> None:
        self.tool_name = tool_name
        self.question = question
        super().__init__(
            server,
            f"the session in which its tool {tool_name!r} asked {question!r} was lost (the "
            "process restarted, the session ended, or the question waited too long): the "
            "call's outcome is unknown (the server may have acted before it asked), and it "
            "was not issued again, since the tool is not idempotent",
        )


class MCPToolError(AgentFSMError):
    """An MCP tool answered a call with an error result (``isError``); the model reads it.

    Attributes:
        tool_name: The tool's name as offered to the model (with its server's prefix).
        detail: The text the server gave with the error.
    """

    def __init__(self, tool_name: str, detail: str) -> None:
        self.tool_name = tool_name
        self.detail = detail
        super().__init__(f"tool {tool_name!r} reported an error: {detail}")
