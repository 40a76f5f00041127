"""The `Model` protocol: messages and tool schemas in, one `ModelResponse` out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from agentfsm._compat import StrEnum
from agentfsm.errors import ModelResponseError
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message, ToolCall

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class FinishReason(StrEnum):
    """Why the model stopped producing output."""

    STOP = "stop"
    """It finished its answer."""
    TOOL_CALLS = "tool_calls"
    """It asked for tool calls."""
    LENGTH = "length"
    """It hit its token limit: the output is cut off."""
    CONTENT_FILTER = "content_filter"
    """The provider withheld output."""


class Usage(BaseModel):
    """Token counts of one model call."""

    model_config = _FROZEN

    prompt_tokens: int = Field(default=0, ge=0)
    """Tokens read."""
    completion_tokens: int = Field(default=0, ge=0)
    """Tokens produced."""
    total_tokens: int = Field(default=0, ge=0)
    """Both together."""


class ModelResponse(BaseModel):
    """One complete response of a model: text, tool calls or both."""

    model_config = _FROZEN

    content: str | None = None
    """The text, if any."""
    tool_calls: tuple[ToolCall, ...] = ()
    """The calls asked for, in order."""
    finish_reason: FinishReason = FinishReason.STOP
    """Why the model stopped."""
    usage: Usage | None = None
    """Token counts, when the provider reports them."""
    model: str = ""
    """The model that answered, as the provider names it."""

    def to_message(self) -> Message:
        """The assistant message that records this response in the conversation."""
        return Message.assistant(
            self.content if self.content is not None or self.tool_calls else "",
            self.tool_calls,
        )


UNUSABLE_FINISH: dict[FinishReason, str] = {
    FinishReason.LENGTH: "the output was cut off at the token limit (finish_reason 'length')",
    FinishReason.CONTENT_FILTER: "the provider withheld the output (finish_reason "
    "'content_filter')",
}
"""The finish reasons that make a response no answer, and what each means."""


def check_finish(response: ModelResponse, model: str, attempts: int = 1) -> None:
    """Refuse a response whose finish reason says it is no answer, whatever the model.

    The `Agent` judges every model's response with this, so a reply cut off at the token
    limit or filtered fails the call from any `Model`, as it does from `OpenAIModel`.

    Raises:
        ModelResponseError: The finish reason is ``length`` or ``content_filter``; its
            ``reason`` is that finish reason.
    """
    problem = UNUSABLE_FINISH.get(response.finish_reason)
    if problem is not None:
        raise ModelResponseError(
            f"model {model!r} returned an unusable response: {problem}",
            model=model,
            reason=response.finish_reason.value,
            attempts=attempts,
        )


class RetryNotice(BaseModel):
    """A model call failed transiently and will be tried again."""

    model_config = _FROZEN

    attempt: int = Field(ge=1)
    """The attempt that failed (1 for the first)."""
    error_type: str
    """The failure's exception type, e.g. ``RateLimitError``."""
    message: str
    """What went wrong."""
    status_code: int | None = None
    """The HTTP status, when there was one."""
    wait: float = Field(ge=0)
    """Seconds until the next attempt."""


RetryListener = Callable[[RetryNotice], object]
"""Told of each retry before its wait; its return value is ignored."""


@runtime_checkable
class Model(Protocol):
    """Anything that answers a conversation: `OpenAIModel`, `ScriptedModel`, your own.

    ``complete`` returns a response or raises `agentfsm.errors.ModelError`; transient
    failures are retried inside it (each retry reported to ``on_retry``), so an error that
    escapes is final for this call.
    """

    @property
    def name(self) -> str:
        """The model's name, for traces."""
        ...

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[JSONObject],
        *,
        on_retry: RetryListener | None = None,
    ) -> ModelResponse:
        """Answer ``messages``, offering ``tools`` (OpenAI ``tools=[...]`` form)."""
        ...
