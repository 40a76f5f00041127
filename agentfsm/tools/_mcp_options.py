"""The options of an `MCPServer`: its target, protocol, policies, allow/deny, output schemas.

Private to `agentfsm.tools.mcp` (needs the ``mcp`` extra).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import mcp
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]  # no stubs
from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]  # no stubs
from mcp import types as mcp_types
from mcp.server import Server
from mcp.server.mcpserver import MCPServer as SDKServer
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agentfsm.errors import MCPServerError
from agentfsm.states.json import JSONObject
from agentfsm.tools.policy import ToolPolicy
from agentfsm.tools.schema import compile_validator, validator_class

Target = str | Sequence[str] | mcp.StdioServerParameters | Server[Any] | SDKServer[Any]
"""Where a server is: a Streamable HTTP URL, a command line (``["python", "server.py"]``) or
`mcp.StdioServerParameters` for a stdio subprocess, or an in-process SDK server object."""


def target_of(target: Target) -> str | mcp.StdioServerParameters | Server[Any] | SDKServer[Any]:
    if isinstance(target, str) and not target.lower().startswith(("http://", "https://")):
        raise ValueError(
            f"target {target!r} is not a Streamable HTTP URL (http:// or https://); a command "
            "line is a list of strings (['python', 'server.py'])"
        )
    if isinstance(target, (str, mcp.StdioServerParameters, Server, SDKServer)):
        return target
    argv = list(target) if isinstance(target, Sequence) else []
    if not argv or not all(isinstance(part, str) for part in argv):
        raise ValueError(
            "target must be a Streamable HTTP URL, a command line (a non-empty list of "
            "strings), mcp.StdioServerParameters, or an in-process mcp server object, "
            f"not {target!r}"
        )
    return mcp.StdioServerParameters(command=argv[0], args=argv[1:])


def default_policy(
    annotations: mcp_types.ToolAnnotations | None, trusted: bool
) -> tuple[ToolPolicy, bool]:
    """The policy and idempotency an MCP tool gets from its annotations, before overrides.

    The protocol says annotations are untrusted unless the server is: for an untrusted
    server they are ignored and every tool requires approval.

    Args:
        annotations: The tool's annotations as the server listed them (None for none).
        trusted: Whether the application trusts the server.

    Returns:
        ``(policy, idempotent)``.
    """
    if not trusted:
        return ToolPolicy.REQUIRE_APPROVAL, False
    hints = annotations if annotations is not None else mcp_types.ToolAnnotations()
    if hints.read_only_hint:
        return ToolPolicy.ALLOW, True
    idempotent = bool(hints.idempotent_hint)
    # Both hints default to true in the protocol: only an explicit false lets a tool run freely.
    if hints.destructive_hint is not False or hints.open_world_hint is not False:
        return ToolPolicy.REQUIRE_APPROVAL, idempotent
    return ToolPolicy.ALLOW, idempotent


def protocol_of(protocol: object) -> str:
    """An `MCPServer`'s ``protocol``, checked (the SDK client's ``mode``)."""
    allowed = ("auto", "legacy", *MODERN_PROTOCOL_VERSIONS)
    if protocol not in allowed:
        raise ValueError(
            f"protocol must be one of {list(allowed)!r}, not {protocol!r} (a revision before "
            "2026, such as 2025-11-25, is reached with 'legacy': the initialize handshake)"
        )
    return str(protocol)


def patterns(option: str, value: object) -> tuple[str, ...]:
    if (
        isinstance(value, (str, bytes))
        or not isinstance(value, Sequence)
        or not all(isinstance(p, str) and p for p in value)
    ):
        raise TypeError(
            f"{option} must be a list of tool names or glob patterns (non-empty strings, "
            f"such as ['read_*', 'list_directory']), not {value!r}"
        )
    return tuple(value)


def policy_of(name: str, value: ToolPolicy | str) -> ToolPolicy:
    try:
        return ToolPolicy(value)
    except ValueError:
        allowed = [policy.value for policy in ToolPolicy]
        raise ValueError(f"policies[{name!r}] must be one of {allowed!r}, not {value!r}") from None


def output_validator(prefix: str, remote: mcp_types.Tool) -> Draft202012Validator | None:
    schema = remote.output_schema
    if schema is None:
        return None
    try:
        validator_class(cast(JSONObject, schema)).check_schema(schema)
    except ValueError as exc:  # a $schema that names no draft agentfsm knows
        raise MCPServerError(
            prefix, f"its tool {remote.name!r} has an outputSchema whose {exc}"
        ) from None
    except SchemaError as exc:
        raise MCPServerError(
            prefix,
            f"its tool {remote.name!r} has an outputSchema that is not valid: {exc.message}",
        ) from None
    return compile_validator(cast(JSONObject, schema))
