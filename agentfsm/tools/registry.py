"""`ToolRegistry`: the tools an application declares, by name, and what a run is offered."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator

from agentfsm import _checks as checks
from agentfsm.errors import DuplicateToolError, UnknownToolError
from agentfsm.states.json import JSONObject
from agentfsm.tools.checks import tool_item, tool_items
from agentfsm.tools.spec import Tool

AnyTool = Tool[..., object]
"""A tool of any signature."""


class ToolRegistry:
    """Tools by name: register, look up, and list the schemas a run's model is offered.

    Args:
        tools: Tools (or plain functions, declared with the default options) to register.

    Raises:
        DuplicateToolError: Two tools share a name.
    """

    __slots__ = ("_offered", "_tools")

    def __init__(self, tools: Iterable[AnyTool | Callable[..., object]] = ()) -> None:
        tool_items("tools", tools)
        self._tools: dict[str, AnyTool] = {}
        self._offered: dict[tuple[int, frozenset[str] | None], tuple[JSONObject, ...]] = {}
        for item in tools:
            self.register(item)

    def register(self, item: AnyTool | Callable[..., object]) -> AnyTool:
        """Add a tool (a plain function is declared with `Tool`'s defaults) and return it.

        Raises:
            DuplicateToolError: A tool of that name is already registered.
        """
        tool_item("item", item)
        declared = item if isinstance(item, Tool) else Tool(item)
        if declared.name in self._tools:
            raise DuplicateToolError(declared.name, self.names)
        self._tools[declared.name] = declared
        return declared

    def get(self, name: str) -> AnyTool:
        """The tool called ``name``.

        Raises:
            UnknownToolError: None is registered; the error lists those that are.
        """
        checks.text("name", name)
        found = self._tools.get(name)
        if found is None:
            raise UnknownToolError(name, self.names)
        return found

    def find(self, name: str) -> AnyTool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(self._tools)

    def enabled(self, enabled: Collection[str] | None = None) -> tuple[AnyTool, ...]:
        """The tools a run may use: all of them, or those named in ``enabled``.

        Args:
            enabled: The names enabled for the run, or None for every registered tool.

        Raises:
            UnknownToolError: ``enabled`` names a tool that is not registered.
        """
        checks.names("enabled", enabled, optional=True)
        if enabled is None:
            return tuple(self._tools.values())
        unknown = sorted(name for name in enabled if name not in self._tools)
        if unknown:
            raise UnknownToolError(unknown[0], self.names)
        return tuple(found for name, found in self._tools.items() if name in enabled)

    def openai_tools(self, enabled: Collection[str] | None = None) -> list[JSONObject]:
        """The ``tools=[...]`` argument of a chat completion for a run.

        Only enabled tools are listed: a disabled tool is never offered to the model. The
        schemas are built once per set of tools (every model call asks for them) and shared:
        treat them as read-only.

        Args:
            enabled: The names enabled for the run, or None for every registered tool.

        Raises:
            UnknownToolError: ``enabled`` names a tool that is not registered.
        """
        if enabled is not None:  # (None, every tool, needs no check: the usual case)
            checks.names("enabled", enabled, optional=True)
        key = (len(self._tools), None if enabled is None else frozenset(enabled))
        offered = self._offered.get(key)
        if offered is None:  # tools are only ever added, so the count names the set
            offered = tuple(found.offered() for found in self.enabled(enabled))
            self._offered[key] = offered
        return list(offered)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[AnyTool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"ToolRegistry({list(self._tools)!r})"
