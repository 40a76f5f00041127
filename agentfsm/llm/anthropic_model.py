"""`AnthropicModel`: Anthropic's Messages API, over the official ``anthropic`` SDK (an extra).

The same retries, deadline, streaming deltas and error mapping as `OpenAIModel` (the call
loop of `agentfsm.llm._calling`; the SDK's errors have the same shape): connection errors,
timeouts and the statuses 408, 409, 429 and 5xx (529 ``overloaded`` included) are retried,
a ``Retry-After`` is never cut short, a stream cut before ``message_stop`` is retried.
``pip install 'agentfsm[anthropic]'``; importing agentfsm never needs it.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from types import ModuleType
from typing import TYPE_CHECKING, Any

from agentfsm import _checks as checks
from agentfsm._redact import redact
from agentfsm.errors import ModelConfigError
from agentfsm.llm._anthropic_convert import (
    AnthropicStream,
    anthropic_settings,
    anthropic_tools,
    check_settings,
    conversation,
    from_message,
)
from agentfsm.llm._calling import Clock, Offer, RetryingModel, Sleep, Told
from agentfsm.llm._openai_convert import Origin
from agentfsm.llm.base import DeltaListener, ModelResponse, RetryListener
from agentfsm.llm.retry import RetryPolicy
from agentfsm.llm.settings import ModelSettings
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message

if TYPE_CHECKING:
    import anthropic

ANTHROPIC_KEY_VARIABLE = "ANTHROPIC_API_KEY"
"""The environment variable the API key is read from when none is given."""


def _sdk() -> ModuleType:
    try:
        import anthropic
    except ImportError as error:  # pragma: no cover - the extra is installed in the tests
        raise ModelConfigError(
            "anthropic", "the anthropic SDK is not installed: pip install 'agentfsm[anthropic]'"
        ) from error
    return anthropic


class AnthropicModel(RetryingModel):
    """A model behind Anthropic's Messages API.

    Args:
        model: The model id, e.g. ``"claude-sonnet-4-5"``.
        base_url: The API's base URL (by default the SDK's: ``ANTHROPIC_BASE_URL``, else
            Anthropic's).
        api_key: The API key; by default ``ANTHROPIC_API_KEY`` from the environment.
        max_tokens: The answer's token limit when the settings give none (the API requires
            one).
        timeout: Seconds to wait for each read (and write) before the attempt times out.
        connect_timeout: Seconds to wait for a connection.
        retry: What is retried and how long to wait; see `RetryPolicy`.
        stream: Ask for a stream (``on_delta`` is told each piece of text and of a tool
            call's input as it arrives).
        sleep: How retries wait; inject a fake one in tests.
        deadline: Seconds one call may take in all; None for no limit.
        clock: The monotonic clock of the deadline.

    Of the `ModelSettings`, ``stop`` is sent as ``stop_sequences``, ``tool_choice``
    ``required`` as ``{"type": "any"}``, ``parallel_tool_calls=False`` as
    ``disable_parallel_tool_use``; ``seed`` and ``reasoning_effort`` are refused (no such
    parameter), as is a ``temperature`` above 1. Structured output is not offered: a typed
    Agent asks for its answer through a ``final_answer`` tool.

    Raises:
        TypeError: An argument of the wrong type.
        ValueError: An empty ``model``, or a timeout, deadline or ``max_tokens`` not > 0.
        ModelConfigError: No ``api_key`` and no ``ANTHROPIC_API_KEY``, or the SDK is not
            installed.
    """

    _BASE_ERROR = "AnthropicError"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int = 4096,
        timeout: float = 60.0,
        connect_timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        stream: bool = False,
        sleep: Sleep = asyncio.sleep,
        deadline: float | None = 120.0,
        clock: Clock = time.monotonic,
    ) -> None:
        checks.text("model", model)
        checks.text("base_url", base_url, optional=True)
        checks.whole("max_tokens", max_tokens, minimum=1)
        checks.seconds("timeout", timeout)
        checks.seconds("connect_timeout", connect_timeout)
        checks.seconds("deadline", deadline, optional=True)
        checks.flag("stream", stream)
        if retry is not None and not isinstance(retry, RetryPolicy):
            checks.refuse_type("retry", retry, "a RetryPolicy or None")
        api_key = api_key or os.environ.get(ANTHROPIC_KEY_VARIABLE)
        if not api_key:
            raise ModelConfigError(
                model,
                f"no API key: set the {ANTHROPIC_KEY_VARIABLE} environment variable or pass "
                "api_key=...",
            )
        sdk = _sdk()
        self._setup(model, retry, stream, sleep, deadline, clock)
        self._base_url = base_url
        self._api_key = api_key
        self._max_tokens = max_tokens
        self._timeout = sdk.Timeout(timeout, connect=connect_timeout)

    @property
    def structured_output(self) -> bool:
        """False: a typed Agent asks for its answer through a ``final_answer`` tool."""
        return False

    def __repr__(self) -> str:
        where = f", base_url={self._redact(self._base_url)!r}" if self._base_url else ""
        return f"AnthropicModel({self._model!r}{where}, stream={self._stream})"

    def _redact(self, text: str) -> str:
        return redact(text, (self._api_key,))

    def _sdk(self) -> ModuleType:
        return _sdk()

    def check_settings(self, settings: ModelSettings) -> None:
        """Refuse the settings this API cannot honour (``seed``, ``reasoning_effort``…).

        Raises:
            ModelSettingsError: Naming the setting.
        """
        check_settings(settings)

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[JSONObject],
        *,
        on_retry: RetryListener | None = None,
        on_delta: DeltaListener | None = None,
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        """Answer ``messages``, offering ``tools``; transient failures are retried.

        Raises:
            ModelCallError: An HTTP error status, a connection error or a timeout that was
                not transient or still failed on the last attempt; the deadline passed.
            ModelResponseError: A response that is no answer: cut at ``max_tokens``
                (``length``), a ``refusal`` (``content_filter``), a stream cut before
                ``message_stop`` on the last attempt (``truncated``).
        """
        return await self._call(Offer(messages, tools, None, settings), on_retry, on_delta)

    def _open(self) -> AbstractAsyncContextManager[anthropic.AsyncAnthropic]:
        sdk = _sdk()
        # A client per call: its connections are closed with it, in the loop that opened them.
        client: anthropic.AsyncAnthropic = sdk.AsyncAnthropic(
            api_key=self._api_key,
            base_url=self._base_url,
            max_retries=0,
            timeout=self._timeout,
        )
        return client

    async def _request(
        self, client: anthropic.AsyncAnthropic, offer: Offer, origin: Origin, told: Told | None
    ) -> ModelResponse:
        system, turns = conversation(list(offer.messages))
        tools = anthropic_tools(list(offer.tools))
        asked = anthropic_settings(offer.settings, bool(tools), self._max_tokens)
        sdk = _sdk()
        common: dict[str, Any] = {
            "model": self._model,
            "messages": turns,
            "system": system if system is not None else sdk.omit,
            "tools": tools or sdk.omit,
            **asked,
        }
        if not self._stream:
            message = await client.messages.create(**common)
            return from_message(origin, message)
        stream = await client.messages.create(stream=True, **common)
        assembly = AnthropicStream(origin, told)
        async with stream:
            async for event in stream:
                assembly.add(event)
        return assembly.response()
