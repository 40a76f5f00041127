"""From the run's conversation to Anthropic's Messages API, and its answer back.

System messages become the ``system`` parameter; user messages ``user`` turns; an assistant
message a ``text`` block and a ``tool_use`` block per call; each tool message a
``tool_result`` block of a ``user`` turn (consecutive turns of one role are joined, as the
API requires them to alternate). ``stop_reason`` maps onto the run's finish reasons:
``end_turn`` and ``stop_sequence`` are ``stop``, ``tool_use`` is ``tool_calls``,
``max_tokens`` (and ``model_context_window_exceeded``) is ``length``, ``refusal`` is
``content_filter``. A stream that ends before ``message_stop`` is ``truncated`` (retried).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agentfsm.errors import ModelSettingsError
from agentfsm.llm._media import anthropic_result
from agentfsm.llm._openai_convert import Origin, finish, shared
from agentfsm.llm.base import DeltaKind, DeltaListener, ModelDelta, ModelResponse, Usage
from agentfsm.llm.settings import ModelSettings
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message, ToolCall, tool_call

STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}
"""Each ``stop_reason`` as the run's finish reason."""


def check_settings(settings: ModelSettings) -> None:
    """Refuse the settings the Messages API cannot honour.

    Raises:
        ModelSettingsError: ``seed`` or ``reasoning_effort`` (no such parameter), or a
            ``temperature`` above 1 (its range is 0 to 1).
    """
    if settings.seed is not None:
        raise ModelSettingsError("seed", "cannot be sent: Anthropic's API takes no seed")
    if settings.reasoning_effort is not None:
        raise ModelSettingsError(
            "reasoning_effort",
            "cannot be sent: Anthropic's API sets thinking by a token budget (pass "
            "extra_body={'thinking': {...}})",
        )
    if settings.temperature is not None and settings.temperature > 1:
        raise ModelSettingsError(
            "temperature", f"is {settings.temperature}; Anthropic's API takes 0 to 1"
        )


def _arguments(call: ToolCall) -> JSONObject:
    try:
        parsed = json.loads(call.arguments or "{}")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def conversation(messages: list[Message]) -> tuple[str | None, list[JSONObject]]:
    """The ``system`` text (None without one) and the ``messages`` of a request."""
    system = [m.content or "" for m in messages if m.role == "system"]
    turns: list[JSONObject] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks: list[JSONObject] = []
        if message.role == "tool":
            blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id or "",
                    "content": anthropic_result(message),
                }
            )
        elif message.content:
            blocks.append({"type": "text", "text": message.content})
        if message.role == "assistant":
            blocks.extend(
                {"type": "tool_use", "id": c.id, "name": c.name, "input": _arguments(c)}
                for c in message.tool_calls
            )
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            content = turns[-1]["content"]
            assert isinstance(content, list)
            content.extend(blocks)
        else:
            turns.append({"role": role, "content": list(blocks)})
    return ("\n\n".join(system) if system else None), turns


def anthropic_tools(tools: list[JSONObject]) -> list[JSONObject]:
    """Chat completions tools as the Messages API's (``name``, ``description``, schema)."""
    out: list[JSONObject] = []
    for tool in tools:
        function = tool.get("function")
        if isinstance(function, dict):
            out.append(
                {
                    "name": function.get("name", ""),
                    "description": function.get("description", ""),
                    "input_schema": function.get("parameters", {"type": "object"}),
                }
            )
    return out


def anthropic_settings(
    settings: ModelSettings | None, with_tools: bool, max_tokens: int
) -> dict[str, Any]:
    """The keyword arguments of ``messages.create`` that ``settings`` ask for.

    ``max_tokens`` is required by the API: the settings', else the model's default.
    """
    sent: dict[str, Any] = {"max_tokens": max_tokens}
    if settings is None:
        return sent
    check_settings(settings)
    if settings.extra_headers is not None:
        sent["extra_headers"] = settings.extra_headers
    # temperature and top_p go in the body as such: newer SDKs no longer name them.
    body: dict[str, Any] = {
        name: getattr(settings, name)
        for name in ("temperature", "top_p")
        if getattr(settings, name) is not None
    }
    body.update(settings.extra_body or {})
    if body:
        sent["extra_body"] = body
    if settings.max_tokens is not None:
        sent["max_tokens"] = settings.max_tokens
    if settings.stop is not None:
        stop = settings.stop
        sent["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    if with_tools and (settings.tool_choice is not None or settings.parallel_tool_calls is False):
        choice = settings.tool_choice or "auto"
        kinds = {"auto": "auto", "required": "any", "none": "none"}
        made: JSONObject = (
            {"type": kinds[choice]} if choice in kinds else {"type": "tool", "name": choice}
        )
        if settings.parallel_tool_calls is False and choice != "none":
            made["disable_parallel_tool_use"] = True
        sent["tool_choice"] = made
    return sent


def usage_of(usage: Any) -> Usage | None:
    """The token counts, the cache's included: prompt = input + cache writes + cache reads."""
    if usage is None:
        return None
    created = getattr(usage, "cache_creation_input_tokens", None) or 0
    read = getattr(usage, "cache_read_input_tokens", None) or 0
    prompt = (usage.input_tokens or 0) + created + read
    output = usage.output_tokens or 0
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=output,
        total_tokens=prompt + output,
        cache_creation_tokens=created,
        cache_read_tokens=read,
    )


def from_message(origin: Origin, message: Any) -> ModelResponse:
    """The answer a whole ``Message`` carries."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in message.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            calls.append(tool_call(block.id, shared(block.name), json.dumps(block.input)))
    usage = usage_of(message.usage)
    return _finished(origin, texts, calls, message.stop_reason, usage, message.model, message.id)


def _finished(
    origin: Origin,
    texts: list[str],
    calls: list[ToolCall],
    stop_reason: str | None,
    usage: Usage | None,
    model: str,
    response_id: str | None = None,
) -> ModelResponse:
    if stop_reason is None:
        raise origin.error("no_finish_reason", "it has no stop_reason")
    reason = STOP_REASONS.get(stop_reason)
    if reason is None:
        raise origin.error(
            "unknown_finish_reason",
            f"unknown stop_reason {stop_reason!r}; known: {', '.join(STOP_REASONS)}",
        )
    content = "".join(texts) if texts else None
    return finish(origin, content, tuple(calls), reason, usage, model or "", response_id)


@dataclass(slots=True)
class _Block:
    kind: str
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)


@dataclass(slots=True)
class AnthropicStream:
    """The events of a streamed message, put together; pieces told as they arrive."""

    origin: Origin
    listener: DeltaListener | None = None
    blocks: dict[int, _Block] = field(default_factory=dict)
    calls: dict[int, int] = field(default_factory=dict)
    """Each tool_use block's position among the answer's tool calls, by block index."""
    model: str = ""
    response_id: str = ""
    usage: Any = None
    output_tokens: int = 0
    stop_reason: str | None = None
    stopped: bool = False
    events: int = 0

    def add(self, event: Any) -> None:
        """Take in one event."""
        self.events += 1
        kind = event.type
        if kind == "message_start":
            self.model = event.message.model
            self.response_id = getattr(event.message, "id", "") or ""
            self.usage = event.message.usage
        elif kind == "content_block_start":
            self._start(event.index, event.content_block)
        elif kind == "content_block_delta":
            self._delta(event.index, event.delta)
        elif kind == "message_delta":
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            if event.usage is not None:
                self.output_tokens = event.usage.output_tokens or self.output_tokens
        elif kind == "message_stop":
            self.stopped = True

    def _start(self, index: int, block: Any) -> None:
        if block.type == "tool_use":
            self.blocks[index] = _Block("tool_use", block.id, block.name)
            self.calls[index] = position = len(self.calls)
            if self.listener is not None:
                self.listener(ModelDelta(DeltaKind.TOOL_CALL, "", position, block.id, block.name))
        else:
            self.blocks[index] = _Block(block.type)
            text = getattr(block, "text", "")
            if text:
                self._text(index, text)

    def _delta(self, index: int, delta: Any) -> None:
        if delta.type == "text_delta":
            self._text(index, delta.text)
        elif delta.type == "input_json_delta" and index in self.blocks:
            self.blocks[index].parts.append(delta.partial_json)
            if self.listener is not None and delta.partial_json:
                piece = ModelDelta(DeltaKind.TOOL_CALL, delta.partial_json, self.calls[index])
                self.listener(piece)

    def _text(self, index: int, text: str) -> None:
        block = self.blocks.setdefault(index, _Block("text"))
        block.parts.append(text)
        if self.listener is not None and text:
            self.listener(ModelDelta(DeltaKind.TEXT, text))

    def response(self) -> ModelResponse:
        """The whole answer, once the stream has ended with ``message_stop``."""
        if not self.stopped:
            raise self.origin.error(
                "truncated",
                f"the stream ended after {self.events} events without message_stop, so the "
                "response may be cut off",
            )
        texts, calls = [], []
        for _, block in sorted(self.blocks.items()):
            if block.kind == "text":
                texts.append("".join(block.parts))
            elif block.kind == "tool_use":
                arguments = "".join(block.parts) or "{}"
                calls.append(tool_call(block.id, shared(block.name), arguments))
        usage = None
        if self.usage is not None:
            self.usage.output_tokens = self.output_tokens or self.usage.output_tokens
            usage = usage_of(self.usage)
        return _finished(
            self.origin, texts, calls, self.stop_reason, usage, self.model, self.response_id
        )
