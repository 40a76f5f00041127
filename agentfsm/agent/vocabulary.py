"""The vocabulary of a turn: outcomes, decisions, listeners and the built-in ``ask_user`` tool."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from agentfsm.errors import TurnFailedError
from agentfsm.fsm.trace import LLMCallTrace, LLMRetryTrace, ToolExecutionTrace, UserInputTrace
from agentfsm.states.events import Event
from agentfsm.states.messages import ToolCall
from agentfsm.tools.hooks import HookHandler, HookKind, Hooks
from agentfsm.tools.policy import Decision
from agentfsm.tools.results import ErrorDetails
from agentfsm.tools.spec import Tool

AgentEvent = Event | UserInputTrace | LLMCallTrace | LLMRetryTrace | ToolExecutionTrace
"""What listeners and `Agent.stream` receive: transitions, and the trace entries between."""
AgentListener = Callable[[AgentEvent], object]
"""Told of every transition and trace entry, in order."""
DecisionLike = Decision | str
"""A decision, or one of the words ``"approve"`` and ``"deny"``."""

ASK_USER = "ask_user"
"""The name of the built-in tool through which the model asks the user a question."""

INCOMPLETE_MESSAGE = (
    "I stopped after {n} iterations, the most this run allows, before finishing the task. "
    "The task is incomplete."
)
"""The final assistant message of a turn that hit its iteration cap."""


@functools.cache
def ask_user_tool() -> Tool[..., object]:
    """The built-in client-side ``ask_user`` tool: its answer comes from `provide_input`.

    Built once and shared by every Agent (a tool is immutable, and checking its schema
    costs milliseconds).
    """
    return Tool(
        None,
        name=ASK_USER,
        description="Ask the user a question and wait for their answer.",
        parameters={
            "type": "object",
            "properties": {"question": {"type": "string", "description": "The question."}},
            "required": ["question"],
            "additionalProperties": False,
        },
        client_side=True,
    )


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """Where a call to the Agent left the run."""

    state: str
    """The run's state: completed, failed, requires_action, input_required, paused, busy…"""
    reason: str | None
    """Why the turn ended (`CompletedReason` / `FailedReason`), None while it goes on."""
    reply: str | None
    """The final assistant message's text, when the turn completed."""
    pending: tuple[ToolCall, ...]
    """The calls awaiting `resolve_action` / `provide_input`."""
    question: str | None
    """The question awaiting `provide_input`."""
    error: ErrorDetails | None = None
    """Why the turn failed, when its reason is ``error``: the model's, tool's or hook's
    error type and message, whether it may be retried, and the wait a server asked for; or,
    when it is ``output_invalid``, what was wrong with the last answer."""
    output: object = None
    """The typed answer of a run with an ``output_type``, when the turn completed with a
    valid one: an instance of the pydantic model (or the JSON value, for a JSON Schema)."""

    def raise_for_error(self) -> TurnOutcome:
        """Raise `TurnFailedError` if the turn failed; else return this outcome.

        A failed turn is a value (the run is at rest, its error recorded); this turns it into
        an exception, as httpx's ``raise_for_status`` does a 4xx/5xx response::

            reply = agent.submit("Hi").raise_for_error().reply

        Raises:
            TurnFailedError: ``state`` is ``failed`` (any reason: an error, an invalid
                answer, a cancel, an expired wait); its fields carry ``reason`` and
                ``error``.
        """
        if self.state != "failed":
            return self
        error = self.error
        raise TurnFailedError(
            None if self.reason is None else str(self.reason),
            None if error is None else error.type,
            None if error is None else error.message,
            retryable=error is not None and error.retryable,
            retry_after=None if error is None else error.retry_after,
        )


def to_decision(call_id: str, value: DecisionLike) -> Decision:
    """``value`` as a `Decision`; a clear `ValueError` for anything else."""
    if isinstance(value, Decision):
        return value
    if value == "approve":
        return Decision.approve()
    if value == "deny":
        return Decision.deny()
    raise ValueError(
        f"decisions[{call_id!r}] (the decision for call {call_id!r}) is {value!r}; expected a "
        "Decision (Decision.approve(), Decision.deny(reason), Decision.output(value)) or "
        "'approve' / 'deny'"
    )


def question_of(call: ToolCall) -> str | None:
    """The question of an ``ask_user`` call, or None when it has no usable one."""
    try:
        arguments = json.loads(call.arguments or "{}")
    except ValueError:
        return None
    question = arguments.get("question") if isinstance(arguments, dict) else None
    return question if isinstance(question, str) and question.strip() else None


def hooks_from(
    handlers: Mapping[HookKind | str, HookHandler | Sequence[HookHandler]],
) -> Hooks:
    """A `Hooks` with each handler of ``handlers`` (one or a sequence per hook)."""
    hooks = Hooks()
    for kind, value in handlers.items():
        for handler in value if isinstance(value, Sequence) else (value,):
            hooks.add(kind, handler)
    return hooks
