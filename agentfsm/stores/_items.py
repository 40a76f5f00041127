"""The snapshot's growing parts, stored as rows: shared by the SQL stores.

A snapshot's ``messages`` and ``trace`` only grow between two saves of a run (a reset is the
exception), so the SQL stores keep them as rows of their own and a save writes only the new
ones: its cost does not grow with the conversation. The rest of the snapshot is one JSON
text, to which `assemble` joins the rows back on load.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_json

from agentfsm.states.events import Event
from agentfsm.stores.snapshot import Snapshot


def model_json(model: BaseModel) -> str:
    """``model.model_dump_json()``, by its class's serializer directly (a test pins them equal).

    A save dumps every event and item it writes; ``model_dump_json`` passes a dozen
    defaults to the same serializer, a sixth of the cost of a small event.
    """
    return type(model).__pydantic_serializer__.to_json(model).decode()


_text = str.__str__  # (a str enum member's own text, as the model dumps it)


def event_json(event: Event) -> str:
    """``event.model_dump_json()``, built by the untyped serializer (a test pins them equal).

    A save dumps every event it appends. The model's serializer checks each value of
    ``data`` against the members of the recursive ``JSONValue`` union in turn, which costs
    twice what serializing the same plain dict by its values' own types does; ``data`` is
    JSON already (the Event's type says so), so the two give the same text.
    """
    fields = event.__dict__
    return to_json(
        {
            "seq": fields["seq"],
            "run_id": fields["run_id"],
            "machine": _text(fields["machine"]),
            "event": _text(fields["event"]),
            "source": _text(fields["source"]),
            "target": _text(fields["target"]),
            "at": fields["at"],
            "data": fields["data"],
        }
    ).decode()


ITEMS = {"messages": "m", "trace": "t"}
"""The snapshot's growing fields, kept as item rows (field → kind)."""


@dataclass(frozen=True, slots=True)
class Written:
    """What a store last wrote (or read) of a run: its version, a stamp, and its items.

    ``stamp`` is what the store wrote beside that version to recognise it as its own
    (None where the version alone identifies it).
    """

    version: int
    items: dict[str, tuple[object, ...]]
    stamp: str | None = None

    @classmethod
    def of(cls, snapshot: Snapshot, stamp: str | None = None) -> Written:
        """What is stored once ``snapshot`` is."""
        return cls(snapshot.version, {field: getattr(snapshot, field) for field in ITEMS}, stamp)


RECENT_RUNS = 1024
"""How many runs a store remembers what it wrote of (its most recently saved or loaded)."""


class RecentWrites(dict[str, Written]):
    """What a store wrote (or read) of its `RECENT_RUNS` most recently saved or loaded runs.

    A store keeps a run's `Written` so that its next save writes only the new items; an
    entry holds the run's messages and trace. Without a bound, a long-lived store would keep
    every conversation it ever saved in memory. A run no longer here (or written by another
    store meanwhile) has its items rewritten at its next save: the same rows, at more cost.
    """

    __slots__ = ("limit",)

    def __init__(self, limit: int = RECENT_RUNS) -> None:
        super().__init__()
        self.limit = limit

    def __setitem__(self, run_id: str, written: Written) -> None:
        """Remember ``written`` as the newest entry; forget the oldest beyond `limit`."""
        self.pop(run_id, None)  # (re-inserted at the end: the most recent)
        super().__setitem__(run_id, written)
        if len(self) > self.limit:
            del self[next(iter(self))]


def kept(before: tuple[object, ...], after: tuple[object, ...]) -> int | None:
    """How many items of ``before`` begin ``after`` unchanged (the very same objects)."""
    if len(after) < len(before):
        return None
    return len(before) if all(map(operator.is_, before, after)) else None


@dataclass(frozen=True, slots=True)
class NewItems:
    """The item rows of one kind a save writes."""

    kind: str
    """``m`` (messages) or ``t`` (trace)."""
    rewrite: bool
    """Delete the kind's stored rows first: they are not a prefix of the new items."""
    start: int
    """The index of the first item to write."""
    rows: list[str]
    """The JSON of each item to write, from ``start`` on."""


def new_items(snapshot: Snapshot, written: Written | None) -> list[NewItems]:
    """The item rows ``snapshot`` needs beyond ``written`` (None: nothing known, write all)."""
    changes = []
    for field, kind in ITEMS.items():
        items: tuple[Any, ...] = getattr(snapshot, field)
        start = None if written is None else kept(written.items[field], items)
        first = 0 if start is None else start
        rows = [model_json(items[i]) for i in range(first, len(items))]
        changes.append(NewItems(kind, start is None, first, rows))
    return changes


def core_json(snapshot: Snapshot) -> str:
    """The snapshot's JSON without its item fields."""
    return _SNAPSHOT.to_json(snapshot, exclude=_ITEM_FIELDS).decode()


_SNAPSHOT = Snapshot.__pydantic_serializer__
_ITEM_FIELDS = set(ITEMS)


def assemble(core: str, parts: Mapping[str, Sequence[str]]) -> str:
    """The whole snapshot's JSON: ``core`` with each kind's item JSONs joined back in."""
    grown = "".join(
        f',"{field}":[{",".join(parts.get(kind, ()))}]' for field, kind in ITEMS.items()
    )
    stripped = core.rstrip()
    return f"{stripped[:-1]}{grown}}}" if stripped.endswith("}") else core
