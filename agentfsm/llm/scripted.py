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

from agentfsm import _checks as checks
from agentfsm.errors import ModelResponseError
from agentfsm.llm.base import FinishReason, ModelResponse, RetryListener, RetryNotice, Usage
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
    """

    messages: tuple[Message, ...]
    tools: tuple[JSONObject, ...]

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The names of the tools offered, in order."""
        return tuple(_tool_name(schema) for schema in self.tools)


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
    """

    def __init__(
        self,
        steps: Iterable[ScriptStep] = (),
        *,
        name: str = "scripted",
        fallback: Responder | None = None,
    ) -> None:
        if isinstance(steps, (str, bytes)) or not isinstance(steps, Iterable):
            checks.refuse_type("steps", steps, "an iterable of script steps (responses)")
        checks.text("name", name)
        checks.callable_or_none("fallback", fallback)
        self._name = name
        self._steps: list[ScriptStep] = list(steps)
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
    def remaining(self) -> int:
        """How many steps of the script are still unused."""
        return len(self._steps)

    def __repr__(self) -> str:
        return f"ScriptedModel(name={self._name!r}, remaining={self.remaining})"

    def respond(self, response: ModelResponse) -> ScriptedModel:
        """Append a step answering with ``response``; returns the model, for chaining."""
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
        self._steps.append(error)
        self._scripted += 1
        return self

    def reply_with(self, responder: Responder) -> ScriptedModel:
        """Append a step computed by ``responder(messages, tools)``."""
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
    ) -> ScriptedModel:
        """Append a retry: reported to ``on_retry``, then the same call takes the next step."""
        notice = RetryNotice(
            attempt=1, error_type=error_type, message=message, status_code=status_code, wait=wait
        )
        self._steps.append(notice)
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
    ) -> ModelResponse:
        """Record the call and answer it with the next step of the script.

        Raises:
            ModelResponseError: The script ran out and there is no fallback.
            BaseException: Whatever exception the step is.
        """
        self.requests.append(ScriptedRequest(tuple(messages), tuple(tools)))
        attempt = 1
        while True:
            step = self._next_step()
            if not isinstance(step, RetryNotice):
                break
            if on_retry is not None:
                on_retry(step.model_copy(update={"attempt": attempt}))
            attempt += 1
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, str):
            return ModelResponse(content=step, model=self._name)
        if isinstance(step, ModelResponse):
            return step
        answer = step(messages, tools)
        return await answer if inspect.isawaitable(answer) else answer

    def _next_step(self) -> ScriptStep:
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
