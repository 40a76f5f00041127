"""From the openai client's objects to a `ModelResponse`, whole or assembled from a stream.

A response that cannot be used as an answer is a `ModelResponseError`, never a response:
no choices, a finish reason of ``length`` or ``content_filter``, a stream that ended without
a finish reason. Tool calls are passed through exactly as sent — arguments that are not
JSON and names of unknown tools included — for the ToolSystem to answer with error
results the model can read.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentfsm.errors import ModelResponseError
from agentfsm.llm.base import (
    UNUSABLE_FINISH,
    DeltaKind,
    DeltaListener,
    FinishReason,
    ModelDelta,
    ModelResponse,
    Usage,
    usage_counts,
)
from agentfsm.llm.settings import TOOL_CHOICE_MODES, ModelSettings
from agentfsm.states.json import JSONValue
from agentfsm.states.messages import ToolCall, tool_call

if TYPE_CHECKING:  # openai takes most of a second to import: only when a call is made
    from openai.types import CompletionUsage
    from openai.types.chat import (
        ChatCompletion,
        ChatCompletionChunk,
        ChatCompletionMessageToolCallUnion,
    )
    from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall

_FINISH_REASONS = {
    "stop": FinishReason.STOP,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "length": FinishReason.LENGTH,
    "content_filter": FinishReason.CONTENT_FILTER,
}


STRUCTURED_OUTPUT_MODELS = ("gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4")
"""Model id prefixes of OpenAI models with structured output (``response_format`` with a
JSON Schema). Other ids — another server's models — get a ``final_answer`` tool instead,
unless `OpenAIModel` is told ``structured_output=True``."""


def supports_structured_output(model: str) -> bool:
    """Whether the model id names an OpenAI model with structured output.

    Example:
        >>> supports_structured_output("gpt-4o-mini"), supports_structured_output("llama3")
        (True, False)
    """
    return model.startswith(STRUCTURED_OUTPUT_MODELS) and model != "gpt-4o-2024-05-13"


def chat_settings(settings: ModelSettings | None, with_tools: bool) -> dict[str, object]:
    """The keyword arguments of ``chat.completions.create`` that ``settings`` ask for.

    ``max_tokens`` is sent as ``max_completion_tokens`` (what OpenAI's reasoning models
    take; ``max_tokens`` is deprecated); ``tool_choice`` and ``parallel_tool_calls`` only
    when tools are offered (the API refuses them otherwise: with no tool, the model cannot
    call one anyway). ``extra_headers`` and ``extra_body`` go to the client as such.
    """
    if settings is None:
        return {}
    sent: dict[str, object] = {}
    for name in ("temperature", "top_p", "seed", "reasoning_effort", "extra_headers"):
        value = getattr(settings, name)
        if value is not None:
            sent[name] = value
    if settings.extra_body is not None:
        sent["extra_body"] = dict(settings.extra_body)
    if settings.max_tokens is not None:
        sent["max_completion_tokens"] = settings.max_tokens
    if settings.stop is not None:
        sent["stop"] = [settings.stop] if isinstance(settings.stop, str) else list(settings.stop)
    if with_tools:
        if settings.tool_choice is not None:
            sent["tool_choice"] = _choice(settings.tool_choice)
        if settings.parallel_tool_calls is not None:
            sent["parallel_tool_calls"] = settings.parallel_tool_calls
    return sent


def _choice(choice: str) -> JSONValue:
    if choice in TOOL_CHOICE_MODES:
        return choice
    return {"type": "function", "function": {"name": choice}}


@dataclass(frozen=True, slots=True)
class Origin:
    """Which model and attempt a response came from, for the errors it may raise."""

    model: str
    """The model's name."""
    attempt: int
    """The attempt (1 for the first) that produced the response."""

    def error(self, reason: str, problem: str) -> ModelResponseError:
        """A `ModelResponseError` for this model and attempt."""
        return ModelResponseError(
            f"model {self.model!r} returned an unusable response: {problem}",
            model=self.model,
            reason=reason,
            attempts=self.attempt,
        )


def usage_of(usage: CompletionUsage | None) -> Usage | None:
    """The token counts, or None when the provider sent none."""
    if usage is None:
        return None
    prompt = usage.prompt_tokens_details
    completion = usage.completion_tokens_details
    return usage_counts(
        usage.prompt_tokens or 0,
        usage.completion_tokens or 0,
        usage.total_tokens or 0,
        prompt.cached_tokens if prompt is not None else None,
        completion.reasoning_tokens if completion is not None else None,
    )


def _tool_call(index: int, call: ChatCompletionMessageToolCallUnion) -> ToolCall:
    if call.type == "custom":
        name, arguments = call.custom.name, call.custom.input
    else:
        name, arguments = call.function.name, call.function.arguments
    # Some compatible servers omit ids; a stable one keeps the tool message answerable.
    return tool_call(call.id or f"call_{index + 1}", shared(name), arguments or "")


def shared(text: str) -> str:
    """``text`` as the one string of its value that every run shares (interned).

    For a tool's or a model's name, which a run keeps in each of its calls, results and
    trace entries: the client parses each response's JSON into new strings, and interned a
    name is not one string (some 60 bytes) per call a run keeps. Anything but a str is
    returned as it is.
    """
    return sys.intern(text) if type(text) is str else text


def finish(
    origin: Origin,
    content: str | None,
    tool_calls: tuple[ToolCall, ...],
    finish_reason: str | None,
    usage: Usage | None,
    model: str,
    response_id: str | None = None,
) -> ModelResponse:
    """The response, once its finish reason shows it is a usable answer.

    ``response_id`` is the provider's id of the response (None, or empty: it sent none).
    """
    if finish_reason is None:
        raise origin.error("no_finish_reason", "it has no finish reason")
    reason = _FINISH_REASONS.get(finish_reason)
    if reason is None:
        raise origin.error(
            "unknown_finish_reason",
            f"unknown finish_reason {finish_reason!r}; known: {', '.join(_FINISH_REASONS)}",
        )
    if reason in UNUSABLE_FINISH:
        raise origin.error(reason.value, UNUSABLE_FINISH[reason])
    ids = [call.id for call in tool_calls]
    if len(set(ids)) != len(ids):
        raise origin.error("duplicate_tool_call_ids", f"tool call ids repeat: {ids!r}")
    return ModelResponse(
        content=content,
        tool_calls=tool_calls,
        finish_reason=reason,
        usage=usage,
        model=shared(model),
        id=response_id or None,
    )


def from_completion(origin: Origin, completion: ChatCompletion) -> ModelResponse:
    """The response carried by a whole (not streamed) completion.

    A missing finish reason is read from the message (tool calls or not): the body arrived
    whole, so nothing can have been cut off.
    """
    if not completion.choices:
        raise origin.error("empty_choices", "it has no choices")
    choice = completion.choices[0]
    message = choice.message
    tool_calls = tuple(_tool_call(i, call) for i, call in enumerate(message.tool_calls or ()))
    finish_reason: str | None = choice.finish_reason
    if finish_reason is None:
        finish_reason = "tool_calls" if tool_calls else "stop"
    # A refusal is the model's answer in words, sent beside the content instead of in it.
    content = message.content if message.content is not None else message.refusal
    usage = usage_of(completion.usage)
    return finish(
        origin, content, tool_calls, finish_reason, usage, completion.model, completion.id
    )


@dataclass(slots=True)
class _PartialCall:
    id: str = ""
    name: list[str] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class StreamAssembly:
    """The pieces of a streamed response, put together chunk by chunk.

    With a ``listener``, each piece of text and of a tool call is told to it as it is taken
    in.
    """

    origin: Origin
    """Where the stream comes from."""
    listener: DeltaListener | None = None
    """Told of each piece as it arrives."""
    content: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str = ""
    response_id: str = ""
    chunks: int = 0
    choices_seen: bool = False

    def add(self, chunk: ChatCompletionChunk) -> None:
        """Take in one chunk (only the first choice's deltas count)."""
        self.chunks += 1
        self.model = chunk.model or self.model
        self.response_id = self.response_id or chunk.id
        if chunk.usage is not None:
            self.usage = usage_of(chunk.usage)
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            self.choices_seen = True
            if choice.delta.content is not None:
                self.content.append(choice.delta.content)
                if self.listener is not None and choice.delta.content:
                    self.listener(ModelDelta(DeltaKind.TEXT, choice.delta.content))
            for delta in choice.delta.tool_calls or ():
                self._add_call(delta)
            if choice.finish_reason is not None:
                self.finish_reason = choice.finish_reason

    def _add_call(self, delta: ChoiceDeltaToolCall) -> None:
        call = self.calls.setdefault(delta.index, _PartialCall())
        call.id = delta.id or call.id
        name = arguments = ""
        if delta.function is not None:
            name, arguments = delta.function.name or "", delta.function.arguments or ""
            call.name.append(name)
            call.arguments.append(arguments)
        if self.listener is not None and (delta.id or name or arguments):
            self.listener(
                ModelDelta(DeltaKind.TOOL_CALL, arguments, delta.index, delta.id, name or None)
            )

    def response(self, *, ended: bool | None = None) -> ModelResponse:
        """The whole response, once the stream has ended.

        ``ended`` says whether the stream ended with ``[DONE]`` (None: not known). A stream
        that ended before its first chunk, or without ``[DONE]``, was cut: ``truncated``.
        """
        if self.chunks == 0 and ended is not True:
            raise self.origin.error(
                "truncated", "the stream ended before its first chunk (and without [DONE])"
            )
        if ended is False and self.finish_reason is not None:
            raise self.origin.error(
                "truncated",
                f"the stream ended without [DONE] after {self.chunks} chunks (its finish "
                "reason came, its usage and end did not), so it may be cut off",
            )
        if not self.choices_seen:
            raise self.origin.error("empty_choices", "the stream carried no choices")
        if self.finish_reason is None:
            raise self.origin.error(
                "no_finish_reason",
                f"the stream ended without a finish reason after {self.chunks} chunks, "
                "so the response may be cut off",
            )
        tool_calls = tuple(
            tool_call(
                call.id or f"call_{index + 1}", shared("".join(call.name)), "".join(call.arguments)
            )
            for index, call in sorted(self.calls.items())
        )
        content = "".join(self.content) or None
        return finish(
            self.origin,
            content,
            tool_calls,
            self.finish_reason,
            self.usage,
            self.model,
            self.response_id,
        )
