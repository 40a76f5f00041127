"""A scripted fake model and a history checker for the Agent's tests."""

from __future__ import annotations

import json
from collections.abc import Sequence

from agentfsm.errors import ModelError
from agentfsm.llm.base import FinishReason, ModelResponse, RetryListener
from agentfsm.states import Message, ToolCall
from agentfsm.states.json import JSONObject


class FakeModel:
    """Replays responses (or raises errors) in order; records what it was sent."""

    name = "fake"

    def __init__(self, *steps: ModelResponse | ModelError) -> None:
        self.steps = list(steps)
        self.calls: list[tuple[list[Message], list[JSONObject]]] = []

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[JSONObject],
        *,
        on_retry: RetryListener | None = None,
    ) -> ModelResponse:
        self.calls.append((list(messages), list(tools)))
        step = self.steps.pop(0)
        if isinstance(step, ModelError):
            raise step
        return step


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
