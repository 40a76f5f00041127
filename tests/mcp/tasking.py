"""An MCP server (the SDK's low-level one) whose tools must run as tasks (protocol 2025-11-25).

The SDK 2.3 serves tasks as types only, so this server does the rest itself: it speaks only
the handshake era (it refuses ``server/discover``), declares the ``tasks`` capability in its
``initialize`` answer, answers a task-augmented ``tools/call`` with a ``CreateTaskResult``
(a middleware: the SDK would check it as a plain ``CallToolResult``), and serves
``tasks/get``, ``tasks/result`` and ``tasks/cancel``. A task's progress is a matter of the
clock: it is ``working`` until its ``seconds`` have passed, then ``completed`` (or
``failed``), unless it was cancelled.

``python tests/mcp/tasking.py LOG`` serves it on stdin/stdout and appends each method it
receives (``tasks/cancel 1``: with the task id) to the file LOG, one a line, so a test can
see what a server in another process was asked.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio
from mcp import types
from mcp.server import Server
from mcp.shared.exceptions import MCPError

REQUIRED = types.ToolExecution(task_support="required")
TOPIC = {
    "type": "object",
    "properties": {"topic": {"type": "string"}, "seconds": {"type": "number"}},
    "required": ["topic"],
}
TOOLS = [
    types.Tool(
        name="research",
        description="Research a topic (a long job: it runs as a task).",
        input_schema=TOPIC,
        execution=REQUIRED,
    ),
    types.Tool(
        name="doomed",
        description="A job that fails.",
        input_schema=TOPIC,
        execution=REQUIRED,
    ),
    types.Tool(
        name="echo",
        description="Answer at once (a plain call).",
        input_schema=TOPIC,
        execution=types.ToolExecution(task_support="optional"),
    ),
    types.Tool(
        name="clarify",
        description="Research a topic that needs the user's clarification (asked as a task).",
        input_schema=TOPIC,
        execution=REQUIRED,
    ),
]
TERMINAL = ("completed", "failed", "cancelled")


@dataclass
class Job:
    """One task: what it answers once its time has come."""

    id: str
    tool: str
    topic: str
    due: float
    created: str
    cancelled: bool = False
    clarified: str | None = None

    @property
    def status(self) -> str:
        if self.cancelled:
            return "cancelled"
        if self.tool == "clarify" and self.clarified is None:
            return "input_required"
        if time.monotonic() < self.due:
            return "working"
        return "failed" if self.tool == "doomed" else "completed"

    def wire(self, poll_ms: int) -> dict[str, Any]:
        message = {"working": f"reading about {self.topic}"}.get(self.status)
        task: dict[str, Any] = {
            "taskId": self.id,
            "status": self.status,
            "createdAt": self.created,
            "lastUpdatedAt": self.created,
            "ttl": 60_000,
            "pollInterval": poll_ms,
        }
        if message is not None:
            task["statusMessage"] = message
        return task

    def answer(self) -> dict[str, Any]:
        if self.tool == "doomed":
            text, error = f"the archive about {self.topic} is gone", True
        elif self.tool == "clarify":
            text, error = f"findings on {self.topic} ({self.clarified})", False
        else:
            text, error = f"findings on {self.topic}", False
        return {"content": [{"type": "text", "text": text}], "isError": error}


class Desk:
    """The tasks of one server, and the handlers that serve them."""

    def __init__(self, seen: list[str], capable: bool, poll_ms: int) -> None:
        self.seen = seen
        self.capable = capable
        self.poll_ms = poll_ms
        self.jobs: dict[str, Job] = {}

    def job(self, params: Any) -> Job:
        found = self.jobs.get(params.task_id)
        if found is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"no task {params.task_id!r}")
        return found

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name != "echo":  # what a server does with a plain call to a task tool
            raise MCPError(code=types.METHOD_NOT_FOUND, message="this tool needs a task")
        topic = str((params.arguments or {}).get("topic"))
        return types.CallToolResult(content=[types.TextContent(type="text", text=topic)])

    async def refuse(self, ctx: Any, params: Any) -> None:
        raise MCPError(code=types.METHOD_NOT_FOUND, message="a 2025-11-25 server")

    async def get(self, ctx: Any, params: types.GetTaskRequestParams) -> dict[str, Any]:
        return self.job(params).wire(self.poll_ms)

    async def result(self, ctx: Any, params: types.GetTaskPayloadRequestParams) -> dict[str, Any]:
        found = self.job(params)
        if found.status == "input_required":  # asked while tasks/result waits (the spec's way)
            asked = await ctx.session.elicit_form(
                f"Which {found.topic} do you mean?",
                {
                    "type": "object",
                    "properties": {"sense": {"type": "string"}},
                    "required": ["sense"],
                },
                related_request_id=ctx.request_id,
            )
            found.clarified = str((asked.content or {}).get("sense", asked.action))
        while found.status not in TERMINAL:
            await anyio.sleep(0.01)
        if found.status == "cancelled":
            raise MCPError(code=types.INVALID_REQUEST, message="the task was cancelled")
        return found.answer()

    async def cancel(self, ctx: Any, params: types.CancelTaskRequestParams) -> dict[str, Any]:
        found = self.job(params)
        self.seen.append(f"tasks/cancel {found.id}")
        found.cancelled = True
        return found.wire(self.poll_ms)

    def create(self, params: dict[str, Any]) -> dict[str, Any]:
        arguments = params.get("arguments") or {}
        created = Job(
            id=str(len(self.jobs) + 1),
            tool=params["name"],
            topic=str(arguments.get("topic")),
            due=time.monotonic() + float(arguments.get("seconds", 0.05)),
            created=datetime.now(UTC).isoformat(),
        )
        self.jobs[created.id] = created
        return {"task": created.wire(self.poll_ms)}

    async def middleware(self, ctx: Any, call_next: Any) -> Any:
        """Note each method; create the task of a task-augmented call; declare tasks."""
        if ctx.method != "tasks/cancel":
            self.seen.append(ctx.method)
        params = ctx.params or {}
        if ctx.method == "tools/call" and "task" in params and params.get("name") != "echo":
            return self.create(params)
        answer = await call_next(ctx)
        if ctx.method == "initialize" and self.capable:
            answer["capabilities"]["tasks"] = {"cancel": {}, "requests": {"tools": {"call": {}}}}
        return answer


def tasking(
    seen: list[str] | None = None, *, capable: bool = True, poll_ms: int = 10
) -> Server[Any]:
    """The server: ``research``, ``doomed`` and ``clarify`` need a task, ``echo`` may have one.

    A ``clarify`` task is ``input_required`` until the user answers the question its
    ``tasks/result`` asks (an ``elicitation/create`` of the server while that request waits).

    Every method it receives is appended to ``seen`` (``tasks/cancel`` with the task's id).
    Without ``capable`` it does not declare the ``tasks`` capability.
    """
    desk = Desk([] if seen is None else seen, capable, poll_ms)
    server = Server("tasking", on_list_tools=desk.list_tools, on_call_tool=desk.call_tool)
    server.add_request_handler("server/discover", types.RequestParams, desk.refuse)
    server.add_request_handler("tasks/get", types.GetTaskRequestParams, desk.get)
    server.add_request_handler("tasks/result", types.GetTaskPayloadRequestParams, desk.result)
    server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, desk.cancel)
    server.middleware.append(desk.middleware)
    return server


async def _serve(server: Server[Any]) -> None:  # pragma: no cover - runs in a subprocess
    from mcp.server.runner import serve_loop
    from mcp.server.stdio import stdio_server

    # The handshake era only (Server.run would serve 2026-07-28 to a client that asks).
    async with stdio_server() as (read, write), server.lifespan(server) as state:
        await serve_loop(server, read, write, lifespan_state=state)


if __name__ == "__main__":

    class Log(list[str]):
        """The methods received, each also appended to the file named on the command line."""

        def append(self, method: str) -> None:
            with open(sys.argv[1], "a") as log:
                log.write(method + "\n")

    sys.exit(anyio.run(lambda: _serve(tasking(Log()))))
