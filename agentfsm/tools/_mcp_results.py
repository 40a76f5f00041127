"""What an MCP server's answer to a call becomes: a value, an error, or a question for the user.

Private to `agentfsm.tools.mcp` (needs the ``mcp`` extra).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

import mcp
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]  # no stubs
from mcp import types as mcp_types

from agentfsm.errors import MCPConnectionError, MCPServerError, MCPToolError
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.tools._mcp_content import model_text, shaped
from agentfsm.tools._mcp_forms import elicit_result, question_of
from agentfsm.tools.content import ToolContent
from agentfsm.tools.schema import schema_error
from agentfsm.tools.sources import InputRequest

Answer = mcp_types.CallToolResult | mcp_types.InputRequiredResult
"""What a server answers a ``tools/call`` with (2026-07-28: or that it needs input)."""


def output(
    prefix: str, offered: str, result: Answer, validator: Draft202012Validator | None
) -> JSONValue | ToolContent | InputRequest:
    """The tool's value (checked against its outputSchema), or the question it asks.

    A value with media, or with content for the user only, is a `ToolContent`
    (`agentfsm.tools._mcp_content`).

    Raises:
        MCPToolError: The server answered with ``isError``.
        MCPServerError: The answer breaks the tool's outputSchema, or asks for input
            agentfsm cannot give (sampling, roots, a URL to visit).
    """
    if isinstance(result, mcp_types.InputRequiredResult):
        return input_request(prefix, offered, result)
    if result.is_error:
        raise MCPToolError(offered, model_text(result.content) or "no detail given")
    structured = cast(JSONValue, result.structured_content)
    if validator is not None:
        if structured is None:
            raise MCPServerError(
                prefix,
                f"its tool {offered!r} declares an outputSchema but returned no structuredContent",
            )
        problem = schema_error(validator, cast(JSONObject, structured))
        if problem is not None:
            pointer, message = problem
            raise MCPServerError(
                prefix,
                f"its tool {offered!r} returned structuredContent that does not match its "
                f"outputSchema at {pointer or '/'!r}: {message}",
            )
    return shaped(structured, result.content)


def input_request(
    prefix: str, offered: str, result: mcp_types.InputRequiredResult
) -> InputRequest:
    """The question of an input-required result: its first elicitation (a form or a URL).

    The other requests of the result are asked again by the server on the retry, one
    question at a time. The request state is kept verbatim, as the protocol asks.

    Raises:
        MCPServerError: The result asks for nothing agentfsm can put to the user.
    """
    for key, asked in (result.input_requests or {}).items():
        if isinstance(asked, mcp_types.ElicitRequest):
            params = asked.params
            request: JSONObject = {"key": key, "request_state": result.request_state}
            request["message"] = params.message
            if isinstance(params, mcp_types.ElicitRequestURLParams):
                request.update(mode="url", url=params.url)
            else:
                request["schema"] = cast(JSONObject, _dump(params.requested_schema))
            return InputRequest(question_of(request), request)
    methods = sorted({asked.method for asked in (result.input_requests or {}).values()})
    raise MCPServerError(
        prefix,
        f"its tool {offered!r} needs input agentfsm cannot ask the user for "
        f"({', '.join(methods) or 'only a request state, no question'}); agentfsm answers "
        "elicitations (forms and URLs) only",
    )


def _dump(value: object) -> JSONValue:
    if hasattr(value, "model_dump"):
        return cast(JSONValue, value.model_dump(mode="json", by_alias=True, exclude_none=True))
    return cast(JSONValue, value)


def retry_params(
    prefix: str, remote: str, arguments: Mapping[str, object], resume: JSONObject | None
) -> mcp_types.CallToolRequestParams:
    """The ``tools/call`` params: the first call's, or a retry's with the user's answer.

    Raises:
        ValueError: The answer does not fit the server's form (`elicit_result`).
    """
    params = mcp_types.CallToolRequestParams(name=remote, arguments=dict(arguments))
    if resume is None:
        return params
    request = cast(JSONObject, resume.get("request") or {})
    answer = str(resume.get("answer", ""))
    key = str(request.get("key", ""))
    params.input_responses = {key: elicit_result(prefix, remote, request, answer)}
    state = request.get("request_state")
    params.request_state = state if isinstance(state, str) else None
    return params


def text(content: Sequence[mcp_types.ContentBlock]) -> str:
    """The text blocks of a result's content, one per line."""
    return "\n".join(block.text for block in content if isinstance(block, mcp_types.TextContent))


def answered(exc: BaseException) -> bool:
    """Whether the server answered (an error of its own): its session is still good."""
    return isinstance(exc, MCPServerError) or (
        isinstance(exc, mcp.MCPError)
        and exc.code not in (mcp_types.CONNECTION_CLOSED, mcp_types.REQUEST_TIMEOUT)
    )


def failure(prefix: str, doing: str, exc: BaseException) -> MCPServerError:
    """The agentfsm error for an exception raised while ``doing`` something with a server."""
    inner = getattr(exc, "exceptions", None)  # anyio's task groups wrap what went wrong
    while isinstance(inner, tuple) and len(inner) == 1 and isinstance(inner[0], BaseException):
        exc = inner[0]
        inner = getattr(exc, "exceptions", None)
    if isinstance(exc, MCPServerError):
        return exc
    detail = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, mcp.MCPError) and exc.code not in (
        mcp_types.CONNECTION_CLOSED,
        mcp_types.REQUEST_TIMEOUT,
    ):
        return MCPServerError(prefix, f"{doing} failed with a protocol error ({detail})")
    return MCPConnectionError(
        prefix, f"{doing} failed: the server is unreachable or went away ({detail})"
    )
