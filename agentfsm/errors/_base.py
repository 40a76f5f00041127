"""The root error and the helpers the messages share."""

from __future__ import annotations


class AgentFSMError(Exception):
    """The root of every error agentfsm raises."""


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(repr(name) for name in names) or "none"


def _plain(value: str) -> str:
    """A str enum member as its plain value; anything else as it is."""
    return str.__str__(value) if isinstance(value, str) else value


def _call(tool_name: str, call_id: str | None) -> str:
    if call_id is None:
        return f"tool {tool_name!r}"
    return f"call {call_id!r} to tool {tool_name!r}"
