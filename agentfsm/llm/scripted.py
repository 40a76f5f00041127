"""`ScriptedModel`: a deterministic model that replays a script, for tests and the demo.

Each call to `ScriptedModel.complete` takes the next step of the script: a `ModelResponse`
(or a string, short for a text answer) is returned, an exception is raised, a callable is
asked for the response, and a `RetryNotice` is reported to ``on_retry`` before the call
goes on to the step after it. Every call is recorded, so a test can assert what the model
was sent::

    model = ScriptedModel().tool_call("get_weather", city="Paris").text("Sunny.")

answers a first call with a call to ``get_weather`` (id ``call_1``) and a second with the
text ``"Sunny."``; a third call raises a `ModelResponseError` saying the script ran out.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import cast

from agentfsm import _checks as checks
from agentfsm.errors import ModelResponseError
from agentfsm.llm.base import (
    DeltaKind,
    DeltaListener,
    FinishReason,
    ModelDelta,
    ModelResponse,
    RetryListener,
    RetryNotice,
    Usage,
)
from agentfsm.llm.settings import ModelSettings
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import Message, ToolCall

Responder = Callable[
    [Sequence[Message], Sequence[JSONObject]], ModelResponse | Awaitable[ModelResponse]
]
"""A step computed from the call: ``(messages, tools) -> ModelResponse`` (or awaitable)."""

ScriptStep = ModelResponse | str | BaseException | RetryNotice | Responder
"""One step of a script: a response, a text answer, an exception, a retry, or a callable."""


@dataclass(frozen=True, slots=True)
class ScriptedRequest:
    """One call a `ScriptedModel` received.

    Attributes:
        messages: The conversation it was sent.
        tools: The tool schemas it was offered.
        response_format: The structured output asked for (a typed run's, on a model with
            ``structured_output``), else None.
        settings: The model settings the call asked for (recorded, not honoured: a script
            answers what it says), else None.
    """

    messages: tuple[Message, ...]
    tools: tuple[JSONObject, ...]
    response_format: JSONObject | None = None
    settings: ModelSettings | None = None

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The names of the tools offered, in order."""
        return tuple(_tool_name(schema) for schema in self.tools)


@dataclass(frozen=True, slots=True)
class _CutOff:
    """A retry whose failed attempt streamed ``partial`` before it was cut off."""

    notice: RetryNotice
    partial: str


def _tool_name(schema: JSONObject) -> str:
    function = schema.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    return name if isinstance(name, str) else ""


class ScriptedModel:
    """A model that answers each call with the next step of its script.

    Build the script with the constructor, or step by step with the chainable methods
    (`text`, `tool_call`, `tool_calls`, `respond`, `fail`, `reply_with`, `retry`). Tool
    call ids are deterministic: ``call_1``, ``call_2``, … across the whole script.

    Args:
        steps: The script; a string is a text answer.
        name: The model's name.
        fallback: Answers every call after the script ran out (by default such a call
            raises a `ModelResponseError` with ``reason="script_exhausted"``).
        chunk_size: Stream each answer to ``on_delta`` (see `complete`) in pieces of this
            many characters: its text, then each tool call's arguments. None (the default)
            streams nothing.
        structured_output: Act as a model with structured output (`StructuredModel`): a
            typed run then passes ``response_format`` (recorded in `requests`) and expects
            the answer as JSON text. False (the default): it offers a ``final_answer`` tool.

    Raises:
        TypeError: An argument of the wrong type, or a step of ``steps`` that is none of
            the above (found here, not when the model reaches it).
        ValueError: A ``chunk_size`` below 1.
    """

    def __init__(
        self,
        steps: Iterable[ScriptStep] = (),
        *,
        name: str = "scripted",
        fallback: Responder | None = None,
        chunk_size: int | None = None,
        structured_output: bool = False,
    ) -> None:
        if isinstance(steps, (str, bytes)) or not isinstance(steps, Iterable):
            checks.refuse_type("steps", steps, "an iterable of script steps (responses)")
        checks.text("name", name)
        checks.callable_or_none("fallback", fallback)
        if chunk_size is not None and (
            isinstance(chunk_size, bool) or not isinstance(chunk_size, int)
        ):
            checks.refuse_type("chunk_size", chunk_size, "an int or None")
        if chunk_size is not None and chunk_size < 1:
            raise ValueError(f"chunk_size is {chunk_size!r}; expected an int >= 1 or None")
        checks.flag("structured_output", structured_output)
        self._name = name
        self._chunk_size = chunk_size
        self._structured = structured_output
        self._steps: list[ScriptStep | _CutOff] = list(steps)
        for index, step in enumerate(self._steps):
            _check_step(f"steps[{index}]", step)
        self._scripted = len(self._steps)
        self._fallback = fallback
        self._next_call = 1
        self.requests: list[ScriptedRequest] = []
        """Every call received, in order."""

    @classmethod
    def demo(cls) -> ScriptedModel:
        """The built-in demo model (``"scripted:demo"``), needing no network or key.

        In each turn it calls the first offered tool whose required arguments are all
        strings, once, with each set to the user's last capitalised word (``"Paris"`` in
        ``"Weather in Paris?"``); given the results, it answers with them. With no such tool
        it echoes the user.
        """
        return cls(name=_DEMO_NAME, fallback=_demo_reply)

    @property
    def name(self) -> str:
        """The model's name."""
        return self._name

    @property
    def structured_output(self) -> bool:
        """Whether ``complete`` takes a ``response_format`` (structured output)."""
        return self._structured

    @property
    def remaining(self) -> int:
        """How many steps of the script are still unused."""
        return len(self._steps)

    def __repr__(self) -> str:
        return f"ScriptedModel(name={self._name!r}, remaining={self.remaining})"

    def respond(self, response: ModelResponse) -> ScriptedModel:
        """Append a step answering with ``response``; returns the model, for chaining."""
        if not isinstance(response, ModelResponse):
            checks.refuse_type("response", response, "a ModelResponse")
        self._steps.append(response)
        self._scripted += 1
        return self

    def text(self, content: str, *, usage: Usage | None = None) -> ScriptedModel:
        """Append a step answering with the text ``content``."""
        return self.respond(ModelResponse(content=content, usage=usage, model=self._name))

    def tool_call(self, name: str, /, **arguments: JSONValue) -> ScriptedModel:
        """Append a step asking for one call of tool ``name`` with ``arguments``."""
        return self.tool_calls((name, arguments))

    def tool_calls(
        self, *calls: tuple[str, JSONObject | str], content: str | None = None
    ) -> ScriptedModel:
        """Append a step asking for ``calls`` (``(name, arguments)`` pairs), in order.

        Arguments given as a string are sent as is, so a test can script malformed ones.
        """
        made = tuple(self._call(name, arguments) for name, arguments in calls)
        return self.respond(
            ModelResponse(
                content=content,
                tool_calls=made,
                finish_reason=FinishReason.TOOL_CALLS,
                model=self._name,
            )
        )

    def fail(self, error: BaseException) -> ScriptedModel:
        """Append a step raising ``error`` (e.g. a `ModelCallError`)."""
        if not isinstance(error, BaseException):
            checks.refuse_type("error", error, "an exception instance")
        self._steps.append(error)
        self._scripted += 1
        return self

    def reply_with(self, responder: Responder) -> ScriptedModel:
        """Append a step computed by ``responder(messages, tools)`` (sync or async).

        The responder returns a `ModelResponse`; anything else fails that call with a
        `ModelResponseError` (``reason="not_a_response"``), as an unusable answer would.
        """
        if not callable(responder):
            checks.refuse_type(
                "responder", responder, "a callable (messages, tools) -> ModelResponse"
            )
        self._steps.append(responder)
        self._scripted += 1
        return self

    def retry(
        self,
        *,
        error_type: str = "RateLimitError",
        status_code: int | None = 429,
        wait: float = 0.0,
        message: str = "scripted transient failure",
        partial: str | None = None,
    ) -> ScriptedModel:
        """Append a retry: reported to ``on_retry``, then the same call takes the next step.

        With ``partial`` (and a ``chunk_size``), the failed attempt first streams that text,
        as a stream cut off midway would, then a ``reset`` delta.
        """
        notice = RetryNotice(
            attempt=1, error_type=error_type, message=message, status_code=status_code, wait=wait
        )
        checks.text("partial", partial, optional=True)
        self._steps.append(notice if partial is None else _CutOff(notice, partial))
        self._scripted += 1
        return self

    def _call(self, name: str, arguments: JSONObject | str) -> ToolCall:
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        call = ToolCall(id=f"call_{self._next_call}", name=name, arguments=text)
        self._next_call += 1
        return call

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[JSONObject],
        *,
        on_retry: RetryListener | None = None,
        on_delta: DeltaListener | None = None,
        response_format: JSONObject | None = None,
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        """Record the call and answer it with the next step of the script.

        ``settings`` are recorded in the call's `ScriptedRequest` and otherwise ignored
        (a script's answers are fixed).

        With a ``chunk_size`` and ``on_delta``, the answer is streamed to ``on_delta`` in
        pieces before it is returned (a retry's ``partial`` text too, then a reset).

        Raises:
            ModelResponseError: The script ran out and there is no fallback.
            BaseException: Whatever exception the step is.
        """
        self.requests.append(
            ScriptedRequest(tuple(messages), tuple(tools), response_format, settings)
        )
        streaming = on_delta if self._chunk_size is not None else None
        attempt = 1
        step = self._next_step()
        while isinstance(step, (RetryNotice, _CutOff)):
            if isinstance(step, _CutOff):
                if streaming is not None:
                    self._stream(streaming, ModelResponse(content=step.partial), attempt)
                    streaming(ModelDelta(DeltaKind.RESET, attempt=attempt))
                step = step.notice
            if on_retry is not None:
                on_retry(step.model_copy(update={"attempt": attempt}))
            attempt += 1
            step = self._next_step()
        response = await self._answer(step, messages, tools)
        if streaming is not None:
            self._stream(streaming, response, attempt)
        return response

    async def _answer(
        self, step: ScriptStep, messages: Sequence[Message], tools: Sequence[JSONObject]
    ) -> ModelResponse:
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, str):
            return ModelResponse(content=step, model=self._name)
        if isinstance(step, ModelResponse):
            return step
        answer = cast("Responder", step)(messages, tools)  # the retries were taken before
        response = await answer if inspect.isawaitable(answer) else answer
        if not isinstance(response, ModelResponse):
            raise ModelResponseError(
                f"scripted model {self._name!r}: the responder of call {len(self.requests)} "
                f"returned {checks.given(response)}; a responder returns a ModelResponse",
                model=self._name,
                reason="not_a_response",
            )
        return response

    def _stream(self, on_delta: DeltaListener, response: ModelResponse, attempt: int) -> None:
        """Tell ``on_delta`` of ``response`` in pieces of ``chunk_size`` characters."""
        size = self._chunk_size or 1
        content = response.content or ""
        for start in range(0, len(content), size):
            on_delta(ModelDelta(DeltaKind.TEXT, content[start : start + size], attempt=attempt))
        for index, call in enumerate(response.tool_calls):
            pieces = [call.arguments[i : i + size] for i in range(0, len(call.arguments), size)]
            for number, piece in enumerate(pieces or [""]):
                first = number == 0
                on_delta(
                    ModelDelta(
                        DeltaKind.TOOL_CALL,
                        piece,
                        index,
                        call.id if first else None,
                        call.name if first else None,
                        attempt,
                    )
                )

    def _next_step(self) -> ScriptStep | _CutOff:
        if self._steps:
            return self._steps.pop(0)
        if self._fallback is not None:
            return self._fallback
        raise ModelResponseError(
            f"scripted model {self._name!r} has no step left for call {len(self.requests)}: "
            f"its script had {self._scripted} step(s); script more, or give it a fallback",
            model=self._name,
            reason="script_exhausted",
        )


def _check_step(name: str, step: object) -> None:
    """Refuse a script step the model could not answer with (found now, not at its call)."""
    if not isinstance(step, (ModelResponse, str, BaseException, RetryNotice)) and not callable(
        step
    ):
        checks.refuse_type(
            name,
            step,
            "a script step: a ModelResponse, a str (a text answer), an exception to raise, "
            "a RetryNotice or a responder (messages, tools) -> ModelResponse",
        )


_DEMO_NAME = "scripted:demo"
_CAPITALISED = re.compile(r"\b[A-Z][\w'-]*")


def _demo_reply(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
    """The demo model's answer: call one tool per turn, then report what it returned."""
    results: list[str] = []
    for message in reversed(messages):
        if message.role != "tool":
            break
        results.insert(0, message.content or "")
    if results:
        return ModelResponse(
            content="Here is what I found: " + "; ".join(results) + ".", model=_DEMO_NAME
        )
    said = next((m.content or "" for m in reversed(messages) if m.role == "user"), "")
    for schema in tools:
        arguments = _demo_arguments(schema, said)
        if arguments is not None:
            number = 1 + sum(len(m.tool_calls) for m in messages)
            call = ToolCall(id=f"call_{number}", name=_tool_name(schema), arguments=arguments)
            return ModelResponse(
                tool_calls=(call,), finish_reason=FinishReason.TOOL_CALLS, model=_DEMO_NAME
            )
    answer = f"You said: {said}" if said else "Hello! Ask me anything."
    return ModelResponse(content=answer, model=_DEMO_NAME)


def _demo_arguments(schema: JSONObject, said: str) -> str | None:
    """Arguments for a tool whose required arguments are all strings, or None."""
    function = schema.get("function")
    parameters = function.get("parameters") if isinstance(function, dict) else None
    if not isinstance(parameters, dict) or not _tool_name(schema):
        return None
    properties = parameters.get("properties")
    required = parameters.get("required")
    properties = properties if isinstance(properties, dict) else {}
    names = (
        [name for name in required if isinstance(name, str)] if isinstance(required, list) else []
    )
    if not all(_is_string(properties.get(name)) for name in names):
        return None
    words = _CAPITALISED.findall(said)
    value = words[-1] if len(words) > 1 else said.strip(" ?!.")
    return json.dumps(dict.fromkeys(names, value))


def _is_string(schema: JSONValue) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "string"
