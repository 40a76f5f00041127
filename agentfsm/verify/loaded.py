"""The fields no configuration holds, and the value each is loaded with to see an effect keep it.

A configuration is an abstraction of the run's data: the fields the guards read. The queued
inputs, the question, the reason and the cancellation request are not part of it, so every
explored configuration holds none of them, and a step from it cannot show an effect that
loses one. `Stepping` takes every step that runs an action once more from the same data
with each of them loaded (`LOADS`), and checks that step against the effect table too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import cast

from agentfsm.fsm.data import RunData

Load = Callable[[object], object]
"""A field's value → the value it is loaded with."""

LOADS: Mapping[str, Load] = {
    "queued": lambda queued: (*cast("tuple[str, ...]", queued), "queued while busy"),
    "question": lambda question: "a question asked before?" if question is None else question,
    "reason": lambda reason: "a reason from before" if reason is None else reason,
    "cancel_requested": lambda requested: not requested,
}
"""`RunData`'s fields that no guard reads, and a value of each that the explored
configurations do not hold: the witness `Explorer` loads them with, to see that an effect
keeps them (a machine that dropped the queued inputs at a wait passed every property)."""


def shown(data: RunData, loads: tuple[tuple[str, Load], ...]) -> tuple[dict[str, object], str]:
    """The loaded fields of ``data``, and the same as text, for a counterexample."""
    loaded = {name: getattr(data, name) for name, _ in loads}
    return loaded, ", ".join(f"{name}={value!r}" for name, value in loaded.items())
