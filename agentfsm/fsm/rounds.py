"""A tool round in the conversation: which calls it has open, and the messages that close it.

Shared by the Agent, which holds a round open while its calls run, and by the exact replay
(I10), which rebuilds it from the log; both must agree on one definition.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import attrgetter, itemgetter

from agentfsm.states.messages import Message, ToolCall
from agentfsm.tools.results import ToolResult

_ID = attrgetter("id")
_CALL_ID = attrgetter("call_id")
_RESULT = itemgetter(0)
_MESSAGE = itemgetter(1)


def open_round(messages: Sequence[Message]) -> tuple[ToolCall, ...]:
    """The calls of the round a turn has open: those of its last message, if it has any.

    A round's tool messages join the conversation only when it closes, so while it is open
    the assistant message asking for its calls is the last one.
    """
    return messages[-1].tool_calls if messages else ()


def round_messages(
    calls: Sequence[ToolCall], answers: Iterable[tuple[ToolResult, Message]]
) -> list[Message]:
    """The tool messages that close a round: one per answered call, in call order (I7)."""
    answers = tuple(answers)
    # (no comprehensions: each is a call; this runs once per round)
    if list(map(_CALL_ID, map(_RESULT, answers))) == list(map(_ID, calls)):
        return list(map(_MESSAGE, answers))  # answered in order: the usual case
    order = {call.id: index for index, call in enumerate(calls)}
    ranked = sorted(answers, key=lambda answer: order.get(answer[0].call_id, len(order)))
    return [message for _, message in ranked]
