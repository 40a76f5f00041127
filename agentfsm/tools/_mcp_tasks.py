"""Tools that run as MCP tasks (protocol 2025-11-25): create, poll, fetch the result, cancel.

A tool listed with ``execution.taskSupport: "required"`` cannot be called plainly (the server
answers ``-32601``). On a session whose server declares task-augmented ``tools/call``
(``capabilities.tasks.requests.tools.call``) such a call is sent with a ``task`` param; the
server answers at once with a task, which is polled with ``tasks/get`` at the server's
``pollInterval`` until it leaves ``working``; ``tasks/result`` then gives the call's result,
the very ``CallToolResult`` a plain call would have. A call that ends before its task did
(the run cancelled, the timeout reached, the session lost) sends ``tasks/cancel``. A tool
that needs a task on a session that cannot run one (no such capability; or the 2026-07-28
revision, where tasks are an extension agentfsm does not speak) is not offered at all, with
a warning on the ``agentfsm.tools.mcp`` logger (the listing keeps it, marked: its
name still counts for ``policies`` / ``allow`` / ``deny``, and a restored run, which builds
its tools from the recorded listing, leaves it out too). ``optional`` tools are called plainly.

agentfsm declares no ``tasks`` capability of its own: that capability is about the client
*receiving* task-augmented requests (sampling, elicitation), which it does not.

Private to `agentfsm.tools.mcp` (needs the ``mcp`` extra).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import anyio
import mcp
from mcp import types as mcp_types
from mcp.client.session import ClientSession
from mcp.shared.dispatcher import CallOptions
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agentfsm.errors import MCPServerError

logger = logging.getLogger("agentfsm.tools.mcp")

_DONE = frozenset({"completed", "failed", "cancelled"})
_POLL = 1.0
"""Seconds between two ``tasks/get`` when the server suggests no ``pollInterval``."""
_MIN_POLL = 0.005
_CANCELLING = 5.0
"""Seconds a ``tasks/cancel`` may take when a call ends before its task."""


def needs_task(remote: mcp_types.Tool) -> bool:
    """Whether the tool can only be called as a task (``taskSupport: "required"``)."""
    return remote.execution is not None and remote.execution.task_support == "required"


def _no_tasks(client: mcp.Client) -> str | None:
    """Why the session cannot call a tool as a task, or None if it can."""
    if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return (
            f"the session speaks protocol {client.protocol_version}, where tasks are an "
            "extension agentfsm does not speak"
        )
    tasks = client.server_capabilities.tasks
    requests = None if tasks is None else tasks.requests
    if requests is None or requests.tools is None or requests.tools.call is None:
        return "the server does not declare task-augmented tools/call (capabilities.tasks)"
    return None


NOT_OFFERED = "agentfsm/not-offered"
"""The ``_meta`` key that marks, in a listing (and so in a run's record of it), a tool the
session could not call, with the reason: the tool is listed but not offered."""


def mark_uncallable(
    prefix: str,
    client: mcp.Client,
    listed: Sequence[mcp_types.Tool],
    warned: set[tuple[str, str]],
) -> list[mcp_types.Tool]:
    """The listing, each tool that needs a task the session cannot run marked not offered.

    Each such tool is logged as a warning, with its name and why, once per server object
    (``warned``, its (name, why) pairs so far): an Agent lists its servers at every turn.
    """
    why = _no_tasks(client) if any(needs_task(remote) for remote in listed) else None
    if why is None:
        return list(listed)
    marked: list[mcp_types.Tool] = []
    for remote in listed:
        if needs_task(remote):
            if (remote.name, why) not in warned:
                warned.add((remote.name, why))
                logger.warning(
                    "MCP server %r: its tool %r is not offered: it runs only as a task "
                    "(execution.taskSupport 'required'), and %s",
                    prefix,
                    remote.name,
                    why,
                )
            remote = remote.model_copy(update={"meta": {**(remote.meta or {}), NOT_OFFERED: why}})
        marked.append(remote)
    return marked


def offerable(remote: mcp_types.Tool) -> bool:
    """Whether the listing did not mark the tool as one the session cannot call."""
    return NOT_OFFERED not in (remote.meta or {})


async def call_as_task(
    prefix: str, client: mcp.Client, params: mcp_types.CallToolRequestParams, timeout: float
) -> mcp_types.CallToolResult:
    """Call a tool as a task and wait for its result (the caller keeps the deadline).

    Raises:
        MCPServerError: The server cancelled the task itself, or answered off the protocol.
        mcp.MCPError: The server answered a request with an error.
    """
    session = client.session
    request = mcp_types.CallToolRequest(
        params=params.model_copy(update={"task": mcp_types.TaskMetadata()})
    )
    created = mcp_types.CreateTaskResult.model_validate(
        await _send_unchecked(session, request, timeout), by_name=False
    )
    task: mcp_types.Task = created.task
    try:
        while task.status == "working":
            await anyio.sleep(_interval(task))
            task = await session.send_request(
                mcp_types.GetTaskRequest(
                    params=mcp_types.GetTaskRequestParams(task_id=task.task_id)
                ),
                mcp_types.GetTaskResult,
                request_read_timeout_seconds=timeout,
            )
        if task.status == "cancelled":
            raise MCPServerError(
                prefix,
                f"its task {task.task_id!r} for the tool {params.name!r} was cancelled by "
                f"the server ({task.status_message or 'no reason given'})",
            )
        # completed or failed: the call's own result (or error); input_required: its
        # questions come as requests of the server while tasks/result waits.
        return await session.send_request(
            mcp_types.GetTaskPayloadRequest(
                params=mcp_types.GetTaskPayloadRequestParams(task_id=task.task_id)
            ),
            mcp_types.CallToolResult,
            request_read_timeout_seconds=timeout,
        )
    except BaseException:
        if task.status not in _DONE:
            await _cancel(client, task.task_id)
        raise


def _interval(task: mcp_types.Task) -> float:
    return _POLL if task.poll_interval is None else max(_MIN_POLL, task.poll_interval / 1000)


async def _cancel(client: mcp.Client, task_id: str) -> None:
    """Ask the server to cancel a task this call no longer waits for (shielded, bounded)."""
    tasks = client.server_capabilities.tasks
    if tasks is None or tasks.cancel is None:
        logger.info("MCP task %r is left running: its server cannot cancel tasks", task_id)
        return
    with anyio.CancelScope(shield=True), anyio.move_on_after(_CANCELLING):
        try:
            await client.session.send_request(
                mcp_types.CancelTaskRequest(
                    params=mcp_types.CancelTaskRequestParams(task_id=task_id)
                ),
                mcp_types.CancelTaskResult,
                request_read_timeout_seconds=_CANCELLING,
            )
        except Exception as exc:
            logger.info("MCP task %r could not be cancelled: %r", task_id, exc)


async def _send_unchecked(
    session: ClientSession, request: mcp_types.CallToolRequest, timeout: float
) -> dict[str, Any]:
    """Send a task-augmented ``tools/call`` and return its raw answer.

    The SDK's ``send_request`` checks every ``tools/call`` answer as a ``CallToolResult``
    (the SDK 2.3 knows tasks as types only), which a ``CreateTaskResult`` is not: the request
    goes out below it, stamped the same way, and the answer is checked by the caller.
    """
    data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    options: CallOptions = {"timeout": timeout}
    session._stamp(data, options)
    return await session._dispatcher.send_raw_request(data["method"], data.get("params"), options)
