"""Response builders and a history checker for the Agent's tests."""

from __future__ import annotations

import json
from collections.abc import Sequence

from agentfsm.llm.base import FinishReason, ModelResponse
from agentfsm.states import Message, ToolCall


def answer(text: str) -> ModelResponse:
    return ModelResponse(content=text)


def calls(*specs: tuple[str, str, dict[str, object]]) -> ModelResponse:
    """A response asking for tool calls: (call id, tool name, arguments)."""
    return ModelResponse(
        tool_calls=tuple(
            ToolCall(id=call_id, name=name, arguments=json.dumps(arguments))
            for call_id, name, arguments in specs
        ),
        finish_reason=FinishReason.TOOL_CALLS,
    )


def assert_history_valid(messages: Sequence[Message]) -> None:
    """Check I7 on a history.

    Each assistant message with tool calls is followed at once by one tool message per call
    id, in call order, before any other message.
    """
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.role == "assistant" and message.tool_calls:
            expected = [call.id for call in message.tool_calls]
            answered = [m.tool_call_id for m in messages[index : index + len(expected)]]
            assert answered == expected, (expected, answered, messages)
            index += len(expected)
        else:
            assert message.role != "tool", f"stray tool message at {index - 1}: {message}"
