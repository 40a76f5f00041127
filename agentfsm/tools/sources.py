"""Tool sources: tools an `Agent` lists when a turn starts (MCP servers), and tools that ask.

A `ToolSource` is listed by the Agent when each turn starts, and again between two rounds
after it announced a change; the listing (plain JSON, as the source described its tools) is
recorded in the run's log, and the tools are made from the recorded listing, so a restored
or replayed run uses exactly what was listed, without contacting the source.

A tool body may also answer that it needs the user: it returns an `InputRequest` instead of
a value. In an Agent's round the round stops at that call and the run waits in
``input_required`` with the question; the user's answer retries the same call, whose
`ToolContext.resume` then carries the request and the answer. `agentfsm.tools.mcp` is the
source the library ships (``pip install 'agentfsm[mcp]'``); this module needs no extra.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from agentfsm.states.json import JSONObject
from agentfsm.tools.registry import AnyTool

__all__ = ["InputRequest", "ToolSource"]


@dataclass(frozen=True, slots=True)
class InputRequest:
    """What a tool body returns when it cannot finish without the user's answer.

    Example:
        >>> InputRequest("Which branch?", {"token": "t-1"}).question
        'Which branch?'
    """

    question: str
    """The question for the user, as the tool asks it."""
    request: JSONObject
    """What the tool needs to be retried with besides the answer (JSON, persisted with the
    run): on the retry, ``ToolContext.resume`` is ``{"request": request, "answer": text}``."""


@runtime_checkable
class ToolSource(Protocol):
    """Where some of an Agent's tools come from, listed when each turn starts (an MCP server).

    The Agent records each listing in the run's log and builds the tools from it with
    `tools_of`; nothing but `listing` contacts the source.
    """

    @property
    def prefix(self) -> str:
        """Names the source in the log (``tools_listed``'s ``server``); unique per Agent."""
        ...

    async def listing(self) -> tuple[JSONObject, ...]:
        """The source's tools now, as JSON (each with at least a ``name``).

        Raises:
            AgentFSMError: The source could not be listed.
        """
        ...

    def tools_of(self, listing: Sequence[JSONObject]) -> tuple[AnyTool, ...]:
        """The tools of a listing `listing` returned (perhaps in another process).

        Raises:
            AgentFSMError: The listing cannot be offered to a model.
        """
        ...

    def take_changed(self) -> bool:
        """Whether the source announced a change of its tools since this was last asked."""
        ...
