"""Tools from MCP servers: listed once, then run behind the same door as the application's own.

An `MCPServer` names one server (a stdio command, a Streamable HTTP URL, or an in-process
server object of the official ``mcp`` SDK) under a prefix the application chooses.
`load_tools` lists the servers' tools and makes each an agentfsm `Tool` named
``<prefix>__<tool>``, whose explicit JSON Schema is the server's ``inputSchema``: the
`ToolSystem` checks enablement, policy and arguments exactly as for any tool before the
server is contacted, and turns whatever the server answers into a `ToolResult`.

Each server keeps one session (`agentfsm.tools.mcp_sessions`), opened at its first
operation and shared by every listing and call after it, by every run that uses the
`MCPServer`, from any event loop; a session that died is opened anew by the next operation
(the one in flight gets an `MCPConnectionError`), and a call that times out closes it (a
stdio server stopped). `MCPServer.close` (or the end of ``async with server:`` / ``with
server:``) closes it; so does interpreter exit. A stdio server's stderr goes to the
``agentfsm.tools.mcp`` logger. A server that asks the user (a form, a URL), by an
input-required result or in the middle of a call, makes the run wait for the answer
(`agentfsm.tools._mcp_elicit`).

Needs the ``mcp`` extra: ``pip install 'agentfsm[mcp]'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import math
import re
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Coroutine,
    Mapping,
    Sequence,
)
from types import MappingProxyType
from typing import Any, cast

try:
    import anyio
    import mcp
    from mcp import types as mcp_types
    from mcp.client.stdio import stdio_client
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS
except ImportError as missing:  # pragma: no cover - the dev extra installs it
    raise ImportError(
        "agentfsm.tools.mcp needs the MCP SDK: install it with pip install 'agentfsm[mcp]'"
    ) from missing
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]  # no stubs
from pydantic import TypeAdapter

from agentfsm import _checks
from agentfsm.errors import (
    InvalidToolNameError,
    MCPConnectionError,
    MCPServerError,
    ToolDefinitionError,
    ToolTimeoutError,
)
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.tools._mcp_elicit import Elicitations, Pending
from agentfsm.tools._mcp_options import (
    Target,
    default_policy,
    output_validator,
    patterns,
    policy_of,
    protocol_of,
    target_of,
)
from agentfsm.tools._mcp_owning import SessionOwner
from agentfsm.tools._mcp_results import Answer, answered, failure, output
from agentfsm.tools._mcp_tasks import call_as_task, mark_uncallable, needs_task, offerable
from agentfsm.tools.content import ToolContent
from agentfsm.tools.context import ToolContext
from agentfsm.tools.mcp_sessions import Session, on_host
from agentfsm.tools.policy import ToolPolicy
from agentfsm.tools.registry import AnyTool
from agentfsm.tools.sources import InputRequest
from agentfsm.tools.spec import NAME_PATTERN, Tool

__all__ = ["SEPARATOR", "MCPServer", "default_policy", "load_tools", "load_tools_sync"]

SEPARATOR = "__"
"""Between a server's prefix and its tool's name: ``files__read_file``. The model APIs allow
only ``[a-zA-Z0-9_-]`` in a tool name, so the protocol's ``server.tool`` cannot be used."""

_PREFIX = re.compile(r"^[a-zA-Z0-9-]+(?:_[a-zA-Z0-9-]+)*$")
_GLOB = re.compile(r"[*?\[]")
"""A character that makes a name of ``allow`` / ``deny`` a glob pattern."""
_MAX_PAGES = 100
_CLOSING = 10.0
"""Seconds a call may take after its deadline to close its transport (the SDK's stdio client
gives a server 2 s to exit before it kills it)."""
_RESULT: TypeAdapter[Answer] = TypeAdapter(Answer)


class MCPServer(SessionOwner):
    """One MCP server whose tools an application offers to its model.

    Args:
        prefix: Put before each of the server's tool names, with `SEPARATOR`: letters,
            digits and ``-``, single ``_`` between them (``files``, ``git-hub``).
        target: Where the server is (see `Target`).
        trusted: Whether its tools' annotations may set their policy (see `default_policy`);
            an untrusted server's tools all need approval unless ``policies`` says otherwise.
        policies: The application's own policy for some of the server's tools, by the
            server's tool name (``{"read_file": "allow"}``); it wins over the annotations.
        timeout: Seconds any one operation (listing, or a call: connection included) may
            take; a call that takes longer ends with status ``timeout``.
        allow: Offer only the server's tools whose names match one of these names or glob
            patterns (``["read_*", "list_directory"]``); None offers every tool.
        deny: Never offer the tools whose names match one of these (it wins over ``allow``).
        protocol: How the protocol revision is chosen: ``"auto"`` (the newest both speak),
            ``"legacy"`` (the ``initialize`` handshake: 2025-11-25 or earlier), or a
            2026 revision (``"2026-07-28"``) adopted without asking the server.

    Raises:
        ValueError: The prefix, a policy, the target, the timeout or the protocol is not
            allowed.
        TypeError: ``trusted`` is not a bool, ``policies`` not a mapping of str names, or
            ``allow`` / ``deny`` not a list of non-empty names or patterns.
    """

    __slots__ = (
        "_changed",
        "_warned",
        "allow",
        "deny",
        "policies",
        "prefix",
        "protocol",
        "target",
        "timeout",
        "trusted",
    )

    def __init__(
        self,
        prefix: str,
        target: Target,
        *,
        trusted: bool = False,
        policies: Mapping[str, ToolPolicy | str] | None = None,
        timeout: float = 30.0,
        allow: Sequence[str] | None = None,
        deny: Sequence[str] = (),
        protocol: str = "auto",
    ) -> None:
        if not isinstance(prefix, str) or not _PREFIX.match(prefix):
            raise ValueError(
                f"prefix must be letters, digits and '-', with single '_' between them "
                f"(so that {SEPARATOR!r} separates it from the tool's name), not {prefix!r}"
            )
        if isinstance(timeout, bool) or not (
            isinstance(timeout, (int, float)) and timeout > 0 and math.isfinite(timeout)
        ):
            raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
        _checks.flag("trusted", trusted)
        if policies is not None and not isinstance(policies, Mapping):
            _checks.refuse_type(
                "policies", policies, "a mapping of the server's tool names to policies, or None"
            )
        for name in policies or {}:
            _checks.text("each tool name of policies", name)
        self.prefix = prefix
        """What the server's tool names are prefixed with."""
        self.target = target_of(target)
        """Where the server is, as the SDK's `mcp.Client` takes it."""
        self.trusted = trusted
        """Whether the tools' annotations are believed."""
        self.policies: Mapping[str, ToolPolicy] = MappingProxyType(
            {name: policy_of(name, value) for name, value in (policies or {}).items()}
        )
        """The application's policies, by the server's tool name (read-only)."""
        self.timeout = float(timeout)
        """Seconds one operation may take."""
        self.allow = None if allow is None else patterns("allow", allow)
        """The names or glob patterns of the tools offered (None: every tool)."""
        self.deny = patterns("deny", deny)
        """The names or glob patterns of the tools never offered."""
        self.protocol = protocol_of(protocol)
        """How the protocol revision is chosen (``"auto"``, ``"legacy"`` or a 2026 one)."""
        self._changed = False
        self._scopes = 0
        self._warned: set[tuple[str, str]] = set()  # (a tool not offered: said once)
        self._asking = Elicitations(prefix)
        self._session = Session(
            prefix, self._client, isinstance(self.target, mcp.StdioServerParameters)
        )

    def _client(self, errlog: Any = None) -> mcp.Client:
        # No response cache: a listing must be the server's current one. A server may ask
        # the user (forms and URLs), mid-call or by input-required results: see _mcp_elicit.
        target = self.target
        return mcp.Client(
            stdio_client(target, errlog=errlog)
            if isinstance(target, mcp.StdioServerParameters)
            else target,
            read_timeout_seconds=self.timeout,
            cache=None,
            elicitation_callback=self._asking.ask,
            message_handler=self._on_message,
            mode=self.protocol,
        )

    async def _on_message(self, message: object) -> None:
        """A notification on a session of an earlier protocol revision (before 2026-07-28)."""
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._changed = True
        await anyio.lowlevel.checkpoint()

    def take_changed(self) -> bool:
        """Whether the server announced a change of its tools since this was last asked.

        Announcements are heard while a call runs (``notifications/tools/list_changed``, or
        on 2026-07-28 a ``subscriptions/listen`` stream opened beside the call).
        """
        changed, self._changed = self._changed, False
        return changed

    async def listing(self) -> tuple[JSONObject, ...]:
        """The server's tools now, as JSON (what an Agent records as ``tools_listed``).

        Raises:
            MCPConnectionError: The server could not be reached, or did not answer in time.
            MCPServerError: It answered with an error.
        """
        return tuple(
            cast(JSONObject, remote.model_dump(mode="json", by_alias=True, exclude_none=True))
            for remote in await self.list_tools()
        )

    def tools_of(self, listing: Sequence[JSONObject]) -> tuple[AnyTool, ...]:
        """The tools of a `listing` (perhaps recorded in another process); nothing is contacted.

        Raises:
            MCPServerError: The listing is not one of MCP tools, or `tools_from` refuses it.
        """
        try:
            listed = [mcp_types.Tool.model_validate(entry) for entry in listing]
        except ValueError as exc:
            raise MCPServerError(self.prefix, f"a recorded listing is not valid: {exc}") from None
        return self.tools_from(listed)

    async def list_tools(self) -> tuple[mcp_types.Tool, ...]:
        """The server's tools, every page, as the SDK describes them (some marked not offered).

        Raises:
            MCPConnectionError: The server could not be reached, or did not answer in time.
            MCPServerError: It answered with an error.
        """
        try:
            return await on_host(self._list_on_host())
        except TimeoutError:
            raise MCPConnectionError(
                self.prefix, f"listing its tools took longer than its timeout of {self.timeout}s"
            ) from None
        except Exception as exc:
            raise failure(self.prefix, "listing its tools", exc) from exc

    async def _list_on_host(self) -> tuple[mcp_types.Tool, ...]:
        listed: list[mcp_types.Tool] = []
        try:
            with anyio.fail_after(self.timeout):
                client = await self._session.client()
                cursor: str | None = None
                for _ in range(_MAX_PAGES):
                    page = await client.list_tools(cursor=cursor)
                    listed.extend(page.tools)
                    cursor = page.next_cursor
                    if cursor is None:
                        break
                else:
                    raise MCPServerError(
                        self.prefix, f"its tool list did not end after {_MAX_PAGES} pages"
                    )
                listed = mark_uncallable(self.prefix, client, listed, self._warned)
        except BaseException as exc:
            if not answered(exc):
                await self._session.drop()
            raise
        return tuple(listed)

    def tools_from(self, listed: Sequence[mcp_types.Tool]) -> tuple[AnyTool, ...]:
        """Make agentfsm tools of a listing (`list_tools`'s); nothing is contacted.

        Raises:
            MCPServerError: A tool's name or schema cannot be offered to a model, or
                ``policies`` names a tool the server does not list.
        """
        names = [remote.name for remote in listed]
        for option, named in (
            ("policies", set(self.policies)),
            ("allow", {p for p in self.allow or () if not _GLOB.search(p)}),
            ("deny", {p for p in self.deny if not _GLOB.search(p)}),
        ):
            unknown = sorted(named - set(names))
            if unknown:
                raise MCPServerError(
                    self.prefix,
                    f"{option} name{'' if option == 'policies' else 's'} tools it does not list: "
                    f"{unknown!r}; it lists "
                    f"{sorted(names)!r}",
                )
        offered = [remote for remote in listed if self.offers(remote.name) and offerable(remote)]
        return tuple(self._tool(remote) for remote in offered)

    def offers(self, name: str) -> bool:
        """Whether the server's tool ``name`` is offered: ``allow`` matches it, ``deny`` not."""
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in self.deny):
            return False
        return self.allow is None or any(
            fnmatch.fnmatchcase(name, pattern) for pattern in self.allow
        )

    async def tools(self) -> tuple[AnyTool, ...]:
        """List the server's tools and make agentfsm tools of them (`list_tools`, `tools_from`).

        Raises:
            MCPConnectionError: The server could not be reached, or did not answer in time.
            MCPServerError: It answered with an error, or a tool cannot be offered.
        """
        return self.tools_from(await self.list_tools())

    def _tool(self, remote: mcp_types.Tool) -> AnyTool:
        name = f"{self.prefix}{SEPARATOR}{remote.name}"
        policy, idempotent = default_policy(remote.annotations, self.trusted)
        policy = self.policies.get(remote.name, policy)
        validator = output_validator(self.prefix, remote)
        try:
            return Tool(
                self._body(remote.name, name, validator, idempotent, needs_task(remote)),
                name=name,
                description=remote.description or remote.title or "",
                parameters=cast(JSONObject, remote.input_schema),
                policy=policy,
                idempotent=idempotent,
                # A backstop only: the body keeps the deadline itself, then closes the transport.
                timeout=self.timeout + _CLOSING,
                retry_on=(MCPConnectionError,) if idempotent else (),
            )
        except ToolDefinitionError as exc:
            rule = (
                f"; tool names must match {NAME_PATTERN}"
                if isinstance(exc, InvalidToolNameError)
                else ""
            )
            raise MCPServerError(
                self.prefix,
                f"its tool {remote.name!r} cannot be offered as {name!r} ({exc}){rule}",
            ) from None

    def _body(
        self,
        remote: str,
        offered: str,
        validator: Draft202012Validator | None,
        idempotent: bool,
        task: bool,
    ) -> Callable[..., Awaitable[JSONValue | ToolContent | InputRequest]]:
        async def call(
            agentfsm_context__: ToolContext, **arguments: object
        ) -> JSONValue | ToolContent | InputRequest:
            context = agentfsm_context__
            step = self._asking.step(
                context,
                remote,
                arguments,
                idempotent,
                lambda params, pending: self._call_on_host(params, task, pending),
            )
            if isinstance(step, InputRequest):
                return step  # an answer that does not fit: the same question again
            result = await self._call(step, remote, offered, context.call_id)
            if isinstance(result, InputRequest):
                return result
            return output(self.prefix, offered, result, validator)

        call.__name__ = offered
        return call

    async def _call(
        self,
        step: Coroutine[Any, Any, Answer | InputRequest],
        remote: str,
        offered: str,
        call_id: str,
    ) -> Answer | InputRequest:
        try:
            return await on_host(step)
        except TimeoutError:
            raise ToolTimeoutError(offered, call_id, self.timeout) from None
        except Exception as exc:
            raise failure(self.prefix, f"calling its tool {remote!r}", exc) from exc

    async def _call_on_host(
        self, params: mcp_types.CallToolRequestParams, task: bool, pending: Pending | None = None
    ) -> Answer:
        request = mcp_types.CallToolRequest(params=params)
        try:
            # The deadline is kept here, by anyio (paused while the server waits for the
            # user); a call that misses it closes the session (a stdio server is stopped,
            # and killed if need be) before the call returns.
            with anyio.fail_after(self.timeout) as deadline:
                if pending is not None:
                    pending.scope = deadline
                client = await self._session.client()
                async with self._watching(client):
                    if task:  # it must run as an MCP task (protocol 2025-11-25)
                        return await call_as_task(self.prefix, client, params, self.timeout)
                    # The session's call_tool would check the output schema with a validator
                    # of its own (and answer input requests itself): the request is sent as
                    # it is, and its answer checked by `output`.
                    return await client.session.send_request(
                        request, _RESULT, request_read_timeout_seconds=math.inf
                    )
        except BaseException as exc:
            if not answered(exc):
                await self._session.drop()
            raise

    @contextlib.asynccontextmanager
    async def _watching(self, client: mcp.Client) -> AsyncIterator[None]:
        """On 2026-07-28, listen for a change of the tool list while a call runs."""
        tools = client.server_capabilities.tools
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or not (
            tools is not None and tools.list_changed
        ):
            yield
            return
        async with (
            anyio.create_task_group() as group,
            client.listen(tools_list_changed=True) as subscription,
        ):

            async def watch() -> None:
                async for _ in subscription:
                    self._changed = True

            group.start_soon(watch)
            try:
                yield
            finally:
                for _ in range(3):  # what the server sent before its answer is delivered
                    await anyio.lowlevel.checkpoint()
                group.cancel_scope.cancel()

    def __repr__(self) -> str:
        return f"MCPServer({self.prefix!r}, trusted={self.trusted!r})"


async def load_tools(*servers: MCPServer, taken: Collection[str] = ()) -> tuple[AnyTool, ...]:
    """List every server's tools and make agentfsm tools of them, refusing any name clash.

    Args:
        servers: The servers, listed one after the other.
        taken: Names already in use (the application's own tools: ``registry.names``).

    Returns:
        The tools, server by server in listing order, ready for an `Agent` or a `ToolRegistry`.

    Raises:
        MCPServerError: Two tools would share a name, or a server's listing failed or
            cannot be offered (`MCPServer.tools`).
        TypeError: A server that is not an `MCPServer`, or ``taken`` not a collection of
            names (checked before any server is contacted).
    """
    _loadable(servers, taken)
    seen = dict.fromkeys(taken, "the application")
    tools: list[AnyTool] = []
    for server in servers:
        for made in await server.tools():
            owner = seen.get(made.name)
            if owner is not None:
                raise MCPServerError(
                    server.prefix,
                    f"its tool {made.name!r} clashes with a tool of {owner} of the same name; "
                    "give the server another prefix",
                )
            seen[made.name] = f"MCP server {server.prefix!r}"
            tools.append(made)
    return tuple(tools)


def _loadable(servers: tuple[object, ...], taken: object) -> None:
    for index, server in enumerate(servers):
        if not isinstance(server, MCPServer):
            _checks.refuse_type(f"servers[{index}]", server, "an MCPServer")
    _checks.names("taken", taken)


def load_tools_sync(*servers: MCPServer, taken: Collection[str] = ()) -> tuple[AnyTool, ...]:
    """`load_tools`, for synchronous code (runs it in a new event loop).

    Raises:
        MCPServerError: As `load_tools`.
        TypeError: As `load_tools`.
        RuntimeError: Called inside a running event loop (await `load_tools` there).
    """
    _loadable(servers, taken)
    return asyncio.run(load_tools(*servers, taken=taken))
