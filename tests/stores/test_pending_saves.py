"""A flight's saves, taken by its worker when it begins, and replaceable until then."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, cast

from agentfsm.agent.behind import Pending, Save
from agentfsm.stores import RunStore
from agentfsm.stores.base import start_saves


def _save(version: int) -> Save:
    return (cast(Any, f"snapshot {version}"), (), version - 1 or None)


class Recording:
    """Records each save it is given (a unit test's stand-in for a store)."""

    def __init__(self) -> None:
        self.saved: list[tuple[object, Sequence[object], int | None]] = []

    def save(
        self, snapshot: object, events: Sequence[object], *, expected_version: int | None
    ) -> None:
        self.saved.append((snapshot, events, expected_version))


def test_saves_replaced_before_the_worker_takes_them_are_the_ones_made() -> None:
    pending = Pending((_save(1),))
    assert pending.replace((_save(1), _save(2)))
    assert pending.take() == (_save(1), _save(2))


def test_saves_taken_by_the_worker_can_no_longer_be_replaced() -> None:
    pending = Pending((_save(1),))
    taken = pending.take()
    assert not pending.replace((_save(2),))
    assert taken == (_save(1),)
    assert pending.take() == (_save(1),)  # (unchanged by the refused replacement)


def test_start_saves_makes_what_the_callable_gives_when_the_worker_begins() -> None:
    store = Recording()
    gate = threading.Event()
    pending = Pending((_save(1),))

    def take() -> tuple[Save, ...]:
        gate.wait(10)
        return pending.take()

    future = start_saves(cast(RunStore, store), take)
    assert pending.replace((_save(1), _save(2)))  # (the worker waits at the gate)
    gate.set()
    assert future.result(10) == (None, None)
    assert store.saved == [("snapshot 1", (), None), ("snapshot 2", (), 1)]
