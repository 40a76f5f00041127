"""`Agent.restore`: the door that takes up a stored run, and fails if there is none.

``Agent(..., run_id=X, store=s)`` is the run X if ``s`` holds it, else a new run under that
id: right for "start or continue", wrong for "continue", where a mistyped id would silently
start a new conversation. `Restoring.restore` and `Restoring.arestore` take up the stored
run or raise `RunNotFoundError`, having created and written nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, cast

from agentfsm.errors import RunNotFoundError

if TYPE_CHECKING:
    from agentfsm.agent.core import Agent
    from agentfsm.llm.base import Model
    from agentfsm.stores.base import RunStore

A = TypeVar("A", bound="Restoring")


class Restoring:
    """The classmethods that restore a stored run (mixed into `Agent`)."""

    __slots__ = ()

    @classmethod
    def restore(
        cls: type[A],
        model: Model | str,
        tools: object = (),
        *,
        run_id: str,
        store: RunStore,
        **options: object,
    ) -> A:
        """The stored run ``run_id``, taken up where it was (``start()`` is called).

        ``model``, ``tools`` and ``options`` are the `Agent` constructor's: the process that
        restores the run gives its model, tools, hooks, listeners and dependencies (none of
        them is stored). A busy run goes on from its last stored step; a run waiting for an
        approval or an answer waits on; a paused one stays paused (call ``resume``).

        Raises:
            RunNotFoundError: ``store`` holds no run ``run_id``; nothing was created.
            SnapshotConflictError: Another process took the run up first.
        """
        agent = _restored(cls, model, tools, run_id, store, options)
        cast("Agent", agent).start()
        return agent

    @classmethod
    async def arestore(
        cls: type[A],
        model: Model | str,
        tools: object = (),
        *,
        run_id: str,
        store: RunStore,
        **options: object,
    ) -> A:
        """`restore`, for async code: the stored run, taken up with ``await astart()``.

        Raises:
            RunNotFoundError: ``store`` holds no run ``run_id``; nothing was created.
            SnapshotConflictError: Another process took the run up first.
        """
        agent = _restored(cls, model, tools, run_id, store, options)
        await cast("Agent", agent).astart()
        return agent


def _restored(
    cls: type[A],
    model: Model | str,
    tools: object,
    run_id: str,
    store: RunStore,
    options: dict[str, object],
) -> A:
    if store is None:
        raise TypeError("restore needs the store that holds the run (store=...), got None")
    make = cast("Callable[..., A]", cls)
    agent = make(model, tools, run_id=run_id, store=store, **options)
    if not cast("Agent", agent)._restored:
        raise RunNotFoundError(run_id, repr(store))
    return agent
