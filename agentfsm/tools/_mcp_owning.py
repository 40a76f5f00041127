"""What an `MCPServer`'s owners do with its one kept session: scopes, closing, giving up.

`agentfsm.tools.mcp_sessions` keeps the session; this mixin is the owner's side of it: an
Agent's `release` at shutdown, a ``with`` / ``async with`` scope that several runs share,
`close`, and `abandon` of a call a run gave up while its server asked the user.
"""

from __future__ import annotations

from typing_extensions import Self

from agentfsm.tools._mcp_elicit import Elicitations
from agentfsm.tools.mcp_sessions import Session, on_host, on_host_sync

__all__ = ["SessionOwner"]


class SessionOwner:
    """The session-owning half of `agentfsm.tools.mcp.MCPServer` (which sets these slots)."""

    __slots__ = ("_asking", "_scopes", "_session")

    _asking: Elicitations
    _scopes: int
    _session: Session

    @property
    def sessions_opened(self) -> int:
        """How many sessions were opened so far (for a stdio server: processes started)."""
        return self._session.opened

    @property
    def is_open(self) -> bool:
        """Whether a session is kept open now."""
        return self._session.is_open

    async def release(self) -> None:
        """An owner is done with the session: close it, unless a ``with`` scope holds it.

        An `Agent` given the server (``mcp_servers=``) calls it when its run shuts down; a
        server used inside ``with server:`` / ``async with server:`` stays open until the
        scope ends, for the other runs that share it.
        """
        if not self._scopes:
            await self.aclose()

    async def aclose(self) -> None:
        """Close the kept session, if any (the next operation would open a new one)."""
        await on_host(self._session.drop())

    def close(self) -> None:
        """`aclose`, for synchronous code."""
        on_host_sync(self._session.drop())

    def abandon(self, key: str) -> bool:
        """A run gave up its call ``key`` (its idempotency key) waiting for the user here.

        The server waiting mid-call is answered ``cancel`` and the call cancelled (an Agent
        does this when it cancels or expires such a run). False if no such call waits here.
        """
        return on_host_sync(self._asking.abandon(key))

    async def __aenter__(self) -> Self:
        self._scopes += 1
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._scopes -= 1
        if not self._scopes:
            await self.aclose()

    def __enter__(self) -> Self:
        self._scopes += 1
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._scopes -= 1
        if not self._scopes:
            self.close()
