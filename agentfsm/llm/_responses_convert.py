"""From the run's conversation to the Responses API's input, and its output back.

The conversation is the run's log (no ``previous_response_id``): each call sends every
message as input items (system and user messages as messages, an assistant's text as a
message and each of its tool calls as a ``function_call`` item, a tool's answer as a
``function_call_output``). Each call is ``store=False``: the API keeps nothing.

A response that cannot be used as an answer is a `ModelResponseError`: ``incomplete`` for
the output token limit (``length``) or a content filter (``content_filter``), ``failed``, or
a stream that ended before its ``response.completed`` (``truncated``: retried).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentfsm.errors import ModelSettingsError
from agentfsm.llm._media import responses_output
from agentfsm.llm._openai_convert import Origin, finish, shared
from agentfsm.llm.base import (
    DeltaKind,
    DeltaListener,
    ModelDelta,
    ModelResponse,
    Usage,
    usage_counts,
)
from agentfsm.llm.settings import TOOL_CHOICE_MODES, ModelSettings
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import Message, ToolCall, tool_call

if TYPE_CHECKING:  # openai takes most of a second to import: only when a call is made
    from openai.types.responses import Response

UNSUPPORTED = {"stop": "stop sequences", "seed": "a seed"}
"""Settings the Responses API has no parameter for: refused, never dropped."""

_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


def check_settings(settings: ModelSettings) -> None:
    """Refuse the settings the Responses API cannot honour.

    Raises:
        ModelSettingsError: ``stop`` or ``seed`` (the API has neither).
    """
    for name, what in UNSUPPORTED.items():
        if getattr(settings, name) is not None:
            raise ModelSettingsError(
                name, f"cannot be sent: the Responses API takes no {what} (use OpenAIModel)"
            )


REASONING_MODELS = ("o1", "o3", "o4", "gpt-5")
"""Model id prefixes of OpenAI's reasoning models, whose reasoning items are carried."""


def reasoning_items(response: Response) -> dict[str, tuple[JSONObject, ...]]:
    """The reasoning items of a response, by the id of each tool call they led to.

    With ``store=False`` the API keeps nothing: a reasoning model's reasoning reaches the
    next call only if sent back, encrypted, before the calls it led to.
    """
    found: list[JSONObject] = []
    carried: dict[str, tuple[JSONObject, ...]] = {}
    for item in response.output:
        if item.type == "reasoning":
            found.append(item.model_dump(mode="json", exclude_none=True))
        elif item.type == "function_call" and found:
            carried[item.call_id] = tuple(found)
    return carried


def input_items(
    messages: list[Message] | tuple[Message, ...],
    reasoning: dict[str, tuple[JSONObject, ...]] | None = None,
) -> list[JSONObject]:
    """The conversation as Responses API input items, in order.

    ``reasoning`` holds reasoning items by the id of the tool call they led to: each is
    sent again before its assistant message's calls.
    """
    items: list[JSONObject] = []
    for message in messages:
        if message.role in ("system", "user"):
            items.append({"role": message.role, "content": message.content or ""})
        elif message.role == "assistant":
            if message.content:
                items.append({"role": "assistant", "content": message.content})
            if reasoning and message.tool_calls:
                items.extend(reasoning.get(message.tool_calls[0].id, ()))
            items.extend(
                {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                }
                for call in message.tool_calls
            )
        else:
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id or "",
                    "output": responses_output(message),
                }
            )
    return items


def responses_tools(tools: list[JSONObject] | tuple[JSONObject, ...]) -> list[JSONObject]:
    """Chat completions tools (``{"type": "function", "function": {...}}``) as Responses'.

    ``strict`` stays what the tool says (False by default: the API's own default is True,
    which would refuse most schemas not written for it).
    """
    out: list[JSONObject] = []
    for tool in tools:
        function = tool.get("function")
        if not isinstance(function, dict):
            continue
        out.append(
            {
                "type": "function",
                "name": function.get("name", ""),
                "description": function.get("description", ""),
                "parameters": function.get("parameters", {"type": "object"}),
                "strict": function.get("strict") is True,
            }
        )
    return out


def text_format(response_format: JSONObject | None) -> JSONObject | None:
    """A chat ``response_format`` (``json_schema``) as the Responses ``text`` parameter."""
    if response_format is None:
        return None
    schema = response_format.get("json_schema")
    if not isinstance(schema, dict):
        return {"format": dict(response_format)}
    return {"format": {"type": "json_schema", **schema}}


def responses_settings(settings: ModelSettings | None, with_tools: bool) -> dict[str, Any]:
    """The keyword arguments of ``responses.create`` that ``settings`` ask for."""
    if settings is None:
        return {}
    check_settings(settings)
    sent: dict[str, Any] = {}
    for name in ("temperature", "top_p", "extra_headers"):
        value = getattr(settings, name)
        if value is not None:
            sent[name] = value
    if settings.extra_body is not None:
        sent["extra_body"] = dict(settings.extra_body)
    if settings.max_tokens is not None:
        sent["max_output_tokens"] = settings.max_tokens
    if settings.reasoning_effort is not None:
        sent["reasoning"] = {"effort": settings.reasoning_effort}
    if with_tools:
        choice = settings.tool_choice
        if choice is not None:
            named: JSONValue = {"type": "function", "name": choice}
            sent["tool_choice"] = choice if choice in TOOL_CHOICE_MODES else named
        if settings.parallel_tool_calls is not None:
            sent["parallel_tool_calls"] = settings.parallel_tool_calls
    return sent


def usage_of(usage: Any) -> Usage | None:
    """The token counts of a Responses ``usage``, or None."""
    if usage is None:
        return None
    read = getattr(usage, "input_tokens_details", None)
    reasoned = getattr(usage, "output_tokens_details", None)
    return usage_counts(
        usage.input_tokens or 0,
        usage.output_tokens or 0,
        usage.total_tokens or 0,
        getattr(read, "cached_tokens", None),
        getattr(reasoned, "reasoning_tokens", None),
    )


def from_response(origin: Origin, response: Response) -> ModelResponse:
    """The answer a whole ``Response`` carries (its ``output`` items, in order)."""
    status = response.status
    if status == "failed":
        error = response.error
        detail = error.message if error is not None else "no error given"
        raise origin.error("failed", f"the response failed: {detail}")
    reason = "stop"
    if status == "incomplete":
        details = response.incomplete_details
        why = details.reason if details is not None else None
        reason = _INCOMPLETE.get(why or "", "length")
    elif status not in ("completed", None):
        raise origin.error("truncated", f"the response is {status!r}, not completed")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for item in response.output:
        if item.type == "message":
            for part in item.content:
                texts.append(part.text if part.type == "output_text" else part.refusal)
        elif item.type == "function_call":
            calls.append(tool_call(item.call_id, shared(item.name), item.arguments or ""))
    if calls and reason == "stop":
        reason = "tool_calls"
    content = "".join(texts) if texts else None
    usage = usage_of(response.usage)
    return finish(origin, content, tuple(calls), reason, usage, response.model or "", response.id)


@dataclass(slots=True)
class ResponsesStream:
    """The events of a streamed response: pieces told as they arrive, the answer at its end.

    The answer is the final ``response.completed`` (or ``response.incomplete``) event's
    response; a stream that ends without one was cut (``truncated``).
    """

    origin: Origin
    listener: DeltaListener | None = None
    calls: dict[str, int] = field(default_factory=dict)
    """The function calls' item ids, by their position among the answer's tool calls."""
    final: Any = None
    events: int = 0

    def add(self, event: Any) -> None:
        """Take in one event."""
        self.events += 1
        kind = event.type
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            self.final = event.response
        elif kind == "error":
            raise self.origin.error("failed", f"the stream sent an error: {event.message}")
        elif self.listener is None:
            return
        elif kind == "response.output_text.delta" and event.delta:
            self.listener(ModelDelta(DeltaKind.TEXT, event.delta))
        elif kind == "response.output_item.added" and event.item.type == "function_call":
            index = self.calls.setdefault(event.item.id or event.item.call_id, len(self.calls))
            self.listener(
                ModelDelta(DeltaKind.TOOL_CALL, "", index, event.item.call_id, event.item.name)
            )
        elif kind == "response.function_call_arguments.delta" and event.delta:
            index = self.calls.get(event.item_id, 0)
            self.listener(ModelDelta(DeltaKind.TOOL_CALL, event.delta, index))

    def response(self) -> ModelResponse:
        """The whole answer, once the stream has ended."""
        if self.final is None:
            raise self.origin.error(
                "truncated",
                f"the stream ended after {self.events} events without response.completed, "
                "so the response may be cut off",
            )
        return from_response(self.origin, self.final)
