"""Response builders for the Agent's tests, and the kit's history checker (I7)."""

from __future__ import annotations

import json

from agentfsm.llm.base import FinishReason, ModelResponse
from agentfsm.states import ToolCall
from agentfsm.testing import assert_history_valid

__all__ = ["answer", "assert_history_valid", "calls"]


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
