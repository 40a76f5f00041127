"""The workload every implementation runs, in one place so that they cannot drift apart.

A run of ``n`` iterations: the user asks once; the model answers ``n - 1`` times with a round
of the same three tool calls (``search``, ``fetch``, ``note``) and then with a final text.
Each tool takes arguments valid against `SCHEMA` and does nothing. `VALIDATOR` is the
reused ``Draft202012Validator`` the non-agentfsm implementations check arguments with
(agentfsm validates with its own, compiled once per tool from the same schema).
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator

PROMPT = "Find the three facts and note them."
"""The user's input that opens every run."""

FINAL = "Done: three facts noted."
"""The model's final answer."""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1},
        "limit": {"type": "integer", "minimum": 1, "maximum": 50},
        "exact": {"type": "boolean"},
    },
    "required": ["query", "limit"],
    "additionalProperties": False,
}
"""The JSON Schema of every tool's arguments."""

VALIDATOR = Draft202012Validator(SCHEMA)
"""A validator built once, reused for every call (the careful hand-written way)."""

TOOL_NAMES = ("search", "fetch", "note")
"""The three tools, in the order the model calls them."""

ROUND: tuple[tuple[str, dict[str, Any]], ...] = (
    ("search", {"query": "facts about Paris", "limit": 3}),
    ("fetch", {"query": "https://example.org/paris", "limit": 1, "exact": True}),
    ("note", {"query": "Paris has 20 arrondissements", "limit": 1}),
)
"""One round of tool calls: ``(tool name, arguments)``."""

ROUND_TEXT: tuple[tuple[str, str], ...] = tuple(
    (name, json.dumps(arguments)) for name, arguments in ROUND
)
"""The same round with the arguments as the JSON text a model sends."""


def call_id(iteration: int, index: int) -> str:
    """The id of the ``index``-th call of the ``iteration``-th model reply (from 0)."""
    return f"call_{iteration}_{index}"


def noop(query: str, limit: int, exact: bool = False) -> str:
    """What every tool does: nothing, and say so."""
    return "ok"


TOOL_BODIES = dict.fromkeys(TOOL_NAMES, noop)
"""Each tool's body, by name."""


def validate(arguments: object) -> str | None:
    """The first schema error's message for ``arguments``, or None when they are valid."""
    error = next(VALIDATOR.iter_errors(arguments), None)
    return None if error is None else str(error.message)


def run_tool(name: str, arguments: object) -> str:
    """Validate ``arguments`` and call the tool: its output, or the error as text."""
    problem = validate(arguments)
    if problem is not None:
        return json.dumps({"error": problem})
    return TOOL_BODIES[name](**arguments)  # type: ignore[arg-type]  # validated above


class Listener:
    """The one event listener: counts what it is told, so that nothing is optimised away."""

    __slots__ = ("events",)

    def __init__(self) -> None:
        self.events = 0

    def __call__(self, event: object) -> None:
        """Be told of one event."""
        self.events += 1
