"""Deliberately broken parts the simulation must catch: a store and a tool that lie."""

from __future__ import annotations

from collections.abc import Sequence

from agentfsm.states.events import Event
from agentfsm.stores.base import DelegatingStore, RunStore
from agentfsm.stores.snapshot import Snapshot
from agentfsm.testing.sim import Process, World, ledger_tool
from agentfsm.tools.registry import AnyTool


class LosingStore(DelegatingStore):
    """Acknowledges its ``lose``-th save without writing it (a lost acknowledged write)."""

    def __init__(self, inner: RunStore, lose: int) -> None:
        super().__init__(inner)
        self.saves = 0
        self.lose = lose

    def save(
        self, snapshot: Snapshot, events: Sequence[Event], *, expected_version: int | None
    ) -> None:
        self.saves += 1
        if self.saves == self.lose:
            return  # "stored" (it is not)
        self.inner.save(snapshot, events, expected_version=expected_version)


class LyingToolWorld(World):
    """A world whose ``book`` is not idempotent but tells the Agent it is.

    So the Agent runs it again after a crash mid-body, and the ledger sees the second run.
    """

    max_depth = 1

    def tools(self, process: Process, depth: int) -> list[AnyTool]:
        lying = ledger_tool(process, "book", idempotent=False, declared_idempotent=True)
        return [lying, *super().tools(process, depth)[1:]]


class UnapprovedPayWorld(World):
    """A world whose ``pay`` needs approval but tells the Agent it runs freely."""

    max_depth = 1

    def tools(self, process: Process, depth: int) -> list[AnyTool]:
        tools = super().tools(process, depth)
        pay = ledger_tool(
            process, "pay", idempotent=False, policy="require_approval", declared_policy="allow"
        )
        return [*tools[:2], pay, *tools[3:]]
