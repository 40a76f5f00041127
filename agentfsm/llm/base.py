"""The `Model` protocol: messages and tool schemas in, one `ModelResponse` out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from agentfsm._compat import StrEnum
from agentfsm.errors import ModelResponseError
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message, ToolCall, assistant_message
from agentfsm.states.unchecked import twin

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
    cache_creation_tokens: int | None = Field(default=None, ge=0)
    """Of the prompt tokens, those written to the provider's prompt cache (Anthropic), when
    reported."""
    cache_read_tokens: int | None = Field(default=None, ge=0)
    """Of the prompt tokens, those read from the provider's prompt cache, when reported."""
    reasoning_tokens: int | None = Field(default=None, ge=0)
    """Of the completion tokens, those the model spent reasoning (OpenAI), when reported."""


_USAGE_GIVEN = {"prompt_tokens", "completion_tokens", "total_tokens"}
"""The fields `usage_counts` gives (shared: see `agentfsm.states.unchecked.sealed`)."""
_USAGE_DETAILED = {
    (cached, reasoning): {
        *_USAGE_GIVEN,
        *(("cache_read_tokens",) if cached else ()),
        *(("reasoning_tokens",) if reasoning else ()),
    }
    for cached in (False, True)
    for reasoning in (False, True)
}
"""The same, by which of the optional details it gives too (shared, as above)."""
_UsageTwin = twin(Usage)
"""`Usage`'s layout with plain attribute stores (see `agentfsm.states.unchecked.twin`)."""


def usage_counts(
    prompt_tokens: int,
    completion_tokens: int,
    total_tokens: int,
    cache_read_tokens: int | None = None,
    reasoning_tokens: int | None = None,
) -> Usage:
    """``Usage(prompt_tokens=..., ...)`` with these counts, unvalidated when it may be.

    A model's client makes one per call, and a run keeps each in the call's trace entry:
    pydantic's validated one is about 480 bytes, this one about 190. Counts that are not
    plain ints of 0 or more go through the validated constructor: the same counts, or the
    same refusal. ``cache_read_tokens`` and ``reasoning_tokens`` (None: not reported) are
    set only when given, as ``Usage(...)`` would.

    Raises:
        pydantic.ValidationError: As ``Usage(...)`` would.
    """
    if (
        type(prompt_tokens) is not int
        or type(completion_tokens) is not int
        or type(total_tokens) is not int
        or prompt_tokens < 0
        or completion_tokens < 0
        or total_tokens < 0
        or not _count_or_none(cache_read_tokens)
        or not _count_or_none(reasoning_tokens)
    ):
        given: dict[str, object] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": total_tokens,
        }
        if cache_read_tokens is not None:
            given["cache_read_tokens"] = cache_read_tokens
        if reasoning_tokens is not None:
            given["reasoning_tokens"] = reasoning_tokens
        return Usage.model_validate(given)
    counts = _UsageTwin()  # (see `agentfsm.states.messages.tool_call`)
    counts.prompt_tokens = prompt_tokens
    counts.completion_tokens = completion_tokens
    counts.total_tokens = total_tokens
    counts.cache_creation_tokens = None
    counts.cache_read_tokens = cache_read_tokens
    counts.reasoning_tokens = reasoning_tokens
    counts.__pydantic_fields_set__ = _USAGE_DETAILED[
        cache_read_tokens is not None, reasoning_tokens is not None
    ]
    counts.__pydantic_extra__ = None
    counts.__pydantic_private__ = None
    counts.__class__ = Usage
    made: Usage = counts
    return made


def _count_or_none(value: object) -> bool:
    return value is None or (type(value) is int and value >= 0)


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
    id: str | None = None
    """The provider's id of this response (``chatcmpl-…``, ``resp_…``, ``msg_…``), when it
    sent one."""

    def to_message(self) -> Message:
        """The assistant message that records this response in the conversation."""
        given = self.__dict__  # (a dict item costs less than a pydantic attribute)
        content, calls = given["content"], given["tool_calls"]
        return assistant_message(content if content is not None or calls else "", calls)


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


class DeltaKind(StrEnum):
    """What a streamed piece of a model's answer is."""

    TEXT = "text"
    """A piece of the answer's text."""
    TOOL_CALL = "tool_call"
    """A piece of a tool call: its arguments (and, in its first piece, its id and name)."""
    RESET = "reset"
    """The attempt that sent the pieces so far failed: drop what this call streamed."""


@dataclass(frozen=True, slots=True)
class ModelDelta:
    """A piece of a model's answer, told as it arrives (see `Model.complete`'s ``on_delta``).

    The ``text`` of a call's ``text`` deltas since its last ``reset`` concatenate to the
    answer's content, and those of the ``tool_call`` deltas with the same ``index`` to that
    call's arguments, once the call succeeds.
    """

    kind: DeltaKind
    """Text, a tool call's piece, or a reset."""
    text: str = ""
    """The piece: of the content (``text``) or of the call's arguments (``tool_call``)."""
    index: int = 0
    """For ``tool_call``: the call's position among the answer's tool calls."""
    call_id: str | None = None
    """For ``tool_call``: the call's id, in the piece that brings it."""
    name: str | None = None
    """For ``tool_call``: the tool's name (or a piece of it), in the piece that brings it."""
    attempt: int = 1
    """The attempt of the model call that sent it (1 for the first)."""


DeltaListener = Callable[[ModelDelta], object]
"""Told of each piece of the answer as it arrives; its return value is ignored.

What it raises ends the model call and propagates out of ``complete`` unchanged.
"""


@runtime_checkable
class Model(Protocol):
    """Anything that answers a conversation: `OpenAIModel`, `ScriptedModel`, your own.

    ``complete`` returns a response or raises `agentfsm.errors.ModelError`; transient
    failures are retried inside it (each retry reported to ``on_retry``), so an error that
    escapes is final for this call.

    A model that streams also takes ``on_delta: DeltaListener | None = None`` (see
    `StreamingModel`); the Agent passes it only to a model whose ``complete`` has that
    parameter, and only when someone listens for deltas.
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


@runtime_checkable
class StreamingModel(Model, Protocol):
    """A `Model` that can tell the pieces of its answer as they arrive.

    ``on_delta`` gets each piece (a `ModelDelta`) in order; when an attempt that sent pieces
    is not accepted (retried, or the call fails), a ``reset`` delta follows them. The
    returned response is the whole answer, as without ``on_delta``.
    """

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[JSONObject],
        *,
        on_retry: RetryListener | None = None,
        on_delta: DeltaListener | None = None,
    ) -> ModelResponse:
        """Answer ``messages``, offering ``tools``, telling ``on_delta`` of each piece."""
        ...


@runtime_checkable
class StructuredModel(Model, Protocol):
    """A `Model` that can hold its answer to a JSON Schema: the API's structured output.

    Its ``structured_output`` says whether it can (for `OpenAIModel`, per model). An Agent
    with an ``output_type`` then passes ``response_format`` (the chat completions form,
    ``{"type": "json_schema", "json_schema": {...}}``) with every call, and expects the
    answer as JSON text; for a model that cannot (or any other `Model`), it offers a
    ``final_answer`` tool instead. ``on_delta`` is passed only to a model that streams, as
    for `StreamingModel`.
    """

    @property
    def structured_output(self) -> bool:
        """Whether ``complete`` honours ``response_format``."""
        ...

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[JSONObject],
        *,
        on_retry: RetryListener | None = None,
        on_delta: DeltaListener | None = None,
        response_format: JSONObject | None = None,
    ) -> ModelResponse:
        """Answer ``messages``, offering ``tools``, in the shape ``response_format`` asks."""
        ...
