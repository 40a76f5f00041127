"""`ToolRegistry`: the tools an application declares, by name, and what a run is offered."""

from __future__ import annotations

import operator
import threading
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import TypeVar, cast

from agentfsm import _checks as checks
from agentfsm.errors import DuplicateToolError, UnknownToolError
from agentfsm.states.json import JSONObject
from agentfsm.tools.checks import tool_item, tool_items
from agentfsm.tools.spec import Tool

AnyTool = Tool[..., object]
"""A tool of any signature."""

K = TypeVar("K")

Offered = tuple[JSONObject, ...]
"""The schemas of the tools offered to a model, in the ``tools=[...]`` form."""


class _Table:
    """Tools by name, and the schemas offered of them: what registries built alike share.

    Never changed once built (but for ``offered``, a cache whose content the tools decide):
    a registry that registers a tool moves to another table.
    """

    __slots__ = ("__weakref__", "items", "kinds", "offered", "tools", "values")

    def __init__(self, items: tuple[object, ...], tools: dict[str, AnyTool]) -> None:
        self.items = items
        """What the table was built from, in order (kept alive: `_TABLES` keys on their ids)."""
        self.tools = tools
        self.values = tuple(tools.values())
        self.offered: dict[frozenset[str] | None, tuple[tuple[AnyTool, ...], Offered, Named]] = {}
        """The offered tools, their schemas, and the (name, description) each schema was
        built for, by the names enabled (None for all)."""
        self.kinds: dict[type, tuple[AnyTool, ...]] = {}
        """The tools that are instances of a class, by class (found once per table)."""

    def refresh(self) -> None:
        """Forget the schemas offered of a tool whose name or description changed since.

        (What `Tool.offered` rebuilds a schema for, compared for all the tools at once.)
        """
        offered = self.offered
        for tools, _schemas, named in tuple(offered.values()):  # (copied: threads add)
            if tuple(map(_NAMED, tools)) != named:
                break
        else:
            return  # (every time but after a change: nothing to forget, nothing copied)
        for key, (tools, _schemas, named) in tuple(offered.items()):
            if tuple(map(_NAMED, tools)) != named:
                offered.pop(key, None)  # (another thread may have just forgotten it)


Named = tuple[tuple[str, str], ...]
"""The (name, description) of each offered tool, when its schema was built."""
_NAMED = operator.attrgetter("name", "description")


_TABLES: weakref.WeakValueDictionary[tuple[int, ...], _Table] = weakref.WeakValueDictionary()
"""Every table alive, by the ids of what it was built from: Agents built from the same list
of tools (one per run) share one table instead of each declaring and holding its own."""

_EMPTY = _Table((), {})
"""The table of a registry with no tool."""

KEPT_TABLES = 8
"""How many of the most recently built tables of `Tool` objects are kept alive anyway."""

_kept: dict[tuple[int, ...], _Table] = {}
"""The `KEPT_TABLES` newest tables made of `Tool` objects only (nothing declared from a
plain function), by the same key as `_TABLES`, oldest first: an application that builds an
Agent per run, each from its one list of tools, would otherwise lose the table with each
run and declare, check and offer its tools again for the next. They keep only the Tool
objects themselves alive (which such an application holds anyway), and the ids in a key
cannot be reused while its table lives."""
_kept_lock = threading.Lock()


def _declared(item: AnyTool | Callable[..., object], tools: dict[str, AnyTool]) -> AnyTool:
    tool_item("item", item)
    declared = item if isinstance(item, Tool) else Tool(item)
    if declared.name in tools:
        raise DuplicateToolError(declared.name, tuple(tools))
    return declared


def _table(items: tuple[AnyTool | Callable[..., object], ...], base: _Table = _EMPTY) -> _Table:
    """The table of ``base``'s items and then ``items``: a live one, or a new one.

    Raises:
        DuplicateToolError: Two tools share a name (no table is made).
    """
    everything = base.items + items
    key = tuple(map(id, everything))
    found = _kept.get(key) or _TABLES.get(key)
    if found is not None:
        found.refresh()  # (a new registry offers a changed tool as it is now)
        return found
    tools = dict(base.tools)
    for item in items:
        declared = _declared(item, tools)
        tools[declared.name] = declared
    table = _Table(everything, tools)
    _TABLES[key] = table
    if all(isinstance(item, Tool) for item in everything):
        _keep(key, table)
    return table


def _keep(key: tuple[int, ...], table: _Table) -> None:
    """Keep ``table`` alive among the `KEPT_TABLES` newest (any thread)."""
    with _kept_lock:
        _kept[key] = table
        while len(_kept) > KEPT_TABLES:
            del _kept[next(iter(_kept))]


class ToolRegistry:
    """Tools by name: register, look up, and list the schemas a run's model is offered.

    Registries built from the same tools (the same objects, in the same order) share what
    they hold, so that a registry per run costs a few bytes: a plain function is declared
    once while any of them lives. What the last `KEPT_TABLES` lists of `Tool` objects made is
    kept even when no registry holds it (an application building an Agent per run, from one
    list of tools, declares and offers them once). Registering a tool changes only the
    registry it is registered in.

    Args:
        tools: Tools (or plain functions, declared with the default options) to register.

    Raises:
        DuplicateToolError: Two tools share a name.
    """

    __slots__ = ("_table",)

    def __init__(self, tools: Iterable[AnyTool | Callable[..., object]] = ()) -> None:
        tool_items("tools", tools)
        self._table = _table(tuple(tools))

    @classmethod
    def _of(cls, tools: Iterable[AnyTool | Callable[..., object]]) -> ToolRegistry:
        """``ToolRegistry(tools)`` for ``tools`` checked already (`tool_items`): the Agent's.

        Raises:
            DuplicateToolError: Two tools share a name.
        """
        registry = cls.__new__(cls)
        registry._table = _table(tuple(tools))
        return registry

    def register(self, item: AnyTool | Callable[..., object]) -> AnyTool:
        """Add a tool (a plain function is declared with `Tool`'s defaults) and return it.

        Raises:
            DuplicateToolError: A tool of that name is already registered.
        """
        tool_item("item", item)
        table = _table((item,), self._table)
        self._table = table
        return table.values[-1]

    def _replace(self, tool: AnyTool) -> None:
        """Put ``tool`` in the place of the tool of its name, in this registry only.

        (The fault injector's: a table is shared, so this one gets a table of its own.)
        """
        tools = {**self._table.tools, tool.name: tool}
        self._table = _Table(tuple(tools.values()), tools)

    def get(self, name: str) -> AnyTool:
        """The tool called ``name``.

        Raises:
            UnknownToolError: None is registered; the error lists those that are.
        """
        checks.text("name", name)
        found = self._table.tools.get(name)
        if found is None:
            raise UnknownToolError(name, self.names)
        return found

    def find(self, name: str) -> AnyTool | None:
        """The tool called ``name``, or None."""
        return self._table.tools.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(self._table.tools)

    def enabled(self, enabled: Collection[str] | None = None) -> tuple[AnyTool, ...]:
        """The tools a run may use: all of them, or those named in ``enabled``.

        Args:
            enabled: The names enabled for the run, or None for every registered tool.

        Raises:
            UnknownToolError: ``enabled`` names a tool that is not registered.
        """
        checks.names("enabled", enabled, optional=True)
        if enabled is None:
            return self._table.values
        unknown = sorted(name for name in enabled if name not in self._table.tools)
        if unknown:
            raise UnknownToolError(unknown[0], self.names)
        return tuple(found for name, found in self._table.tools.items() if name in enabled)

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
        return list(self.offered_tools(enabled))

    def offered_tools(self, enabled: Collection[str] | None = None) -> tuple[JSONObject, ...]:
        """`openai_tools` as a tuple, shared: by every call and every registry alike.

        Raises:
            UnknownToolError: ``enabled`` names a tool that is not registered.
        """
        if enabled is not None:  # (None, every tool, needs no check: the usual case)
            checks.names("enabled", enabled, optional=True)
        key = None if enabled is None else frozenset(enabled)
        cache = self._table.offered
        cached = cache.get(key)
        if cached is not None:
            return cached[1]
        tools = self.enabled(enabled)
        offered = tuple(found.offered() for found in tools)
        cache[key] = (tools, offered, tuple(map(_NAMED, tools)))
        return offered

    def _of_kind(self, kind: type[K]) -> tuple[K, ...]:
        """The registered tools that are ``kind`` instances, in order (found once per table)."""
        table = self._table
        found = table.kinds.get(kind)
        if found is None:
            found = tuple(item for item in table.values if isinstance(item, kind))
            table.kinds[kind] = found
        return cast("tuple[K, ...]", found)

    def __contains__(self, name: object) -> bool:
        return name in self._table.tools

    def __iter__(self) -> Iterator[AnyTool]:
        return iter(self._table.values)

    def __len__(self) -> int:
        return len(self._table.tools)

    def __repr__(self) -> str:
        return f"ToolRegistry({list(self._table.tools)!r})"
