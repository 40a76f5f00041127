"""Who is told of the run: hook handlers, listeners, and `stream` (the turn as it happens)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, TypeVar, cast, overload

from agentfsm._checks import flag
from agentfsm.agent import checks
from agentfsm.agent.deltas import StreamItem, StreamListener
from agentfsm.agent.settings import SettingsControl
from agentfsm.agent.vocabulary import AgentListener
from agentfsm.llm.settings import SettingsLike
from agentfsm.tools.hooks import HookHandler, HookKind

if TYPE_CHECKING:
    from agentfsm.agent.core import Agent


class Listening(SettingsControl):
    """The Agent's hooks, listeners and stream (mixed into `Agent`)."""

    __slots__ = ()

    def on(self, kind: HookKind | str) -> Callable[[HookHandler], HookHandler]:
        """A decorator registering a hook handler: ``@agent.on("before_llm")``."""
        return self.hooks.on(kind)

    @overload
    def add_listener(self, listener: AgentListener) -> None: ...

    @overload
    def add_listener(self, listener: StreamListener, *, deltas: bool) -> None: ...

    def add_listener(self, listener: AgentListener, *, deltas: bool = False) -> None:
        """Tell ``listener`` of every transition and trace entry from now on.

        With ``deltas=True``, also of each `Delta` (a piece of the model's answer, from a
        model that streams), in order with the rest; what it raises on one is a listener's
        exception like any other.
        """
        checks.listener(listener)
        flag("deltas", deltas)
        self._listeners = (*self._listeners, listener)
        if deltas:
            added = cast("StreamListener", listener)  # per overload
            self._delta_listeners = (*self._delta_listeners, added)

    def remove_listener(self, listener: AgentListener) -> None:
        """Stop telling ``listener``.

        Raises:
            ValueError: ``listener`` was never added (or was already removed).
        """
        checks.added_listener(listener, self._listeners)
        self._listeners = _without(self._listeners, listener)
        if listener in self._delta_listeners:
            self._delta_listeners = _without(self._delta_listeners, listener)

    async def stream(
        self,
        text: str,
        *,
        deltas: bool = True,
        settings: SettingsLike | None = None,
        deps: object = None,
    ) -> AsyncIterator[StreamItem]:
        """Submit ``text`` and yield every transition and trace entry of the turn as it happens.

        With ``deltas`` (the default), the pieces of the model's answers too, as `Delta`
        items in order with the rest (from a model that streams). The turn runs as a task;
        the iterator ends when `asubmit` returns, and re-raises what it raised. ``settings``
        is the turn's override of the model settings and ``deps`` its dependencies, as for
        `asubmit`.
        """
        checks.user_text("text", text)
        flag("deltas", deltas)
        self._override(settings)  # (refused before the turn's task is made)
        queue: asyncio.Queue[StreamItem] = asyncio.Queue()
        self.add_listener(queue.put_nowait, deltas=deltas)
        try:
            if settings is None and deps is None:  # (a subclass's asubmit may take neither)
                turn = asyncio.ensure_future(cast("Agent", self).asubmit(text))
            else:
                turn = asyncio.ensure_future(
                    cast("Agent", self).asubmit(text, settings=settings, deps=deps)
                )
            while not (turn.done() and queue.empty()):
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait({getter, turn}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    yield getter.result()
                else:
                    getter.cancel()
            turn.result()
        finally:
            self.remove_listener(queue.put_nowait)


L = TypeVar("L")


def _without(listeners: tuple[L, ...], listener: object) -> tuple[L, ...]:
    """``listeners`` without the first occurrence of ``listener`` (which it holds)."""
    at = listeners.index(listener)
    return listeners[:at] + listeners[at + 1 :]
