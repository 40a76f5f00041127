"""`OpenAIModel`: chat completions with tools, over the official ``openai`` client.

Works with any OpenAI-compatible server through ``base_url``. The client's own retries are
off (``max_retries=0``); transient failures are retried here instead, under a `RetryPolicy`,
each retry reported to the caller's ``on_retry`` before its wait:

- connection errors, timeouts and the statuses 408, 409, 429 and 5xx;
- an answer that arrived broken — a stream cut off before its finish reason, a body or a
  chunk that is not valid JSON: the request is idempotent and nothing of the broken answer
  is kept, so it is sent again (a partial answer is never accepted).

A ``Retry-After`` is never cut short: the call waits it out when it is at most
``max_retry_after`` and fits in the call's deadline, and otherwise fails at once with a
retryable `ModelCallError` whose ``retry_after`` carries the wait asked for. The deadline
(``deadline`` seconds, 120 by default) bounds one call whole: its attempts and the waits
between them.

An error that escapes `OpenAIModel.complete` is final: a `ModelCallError` (status,
connection, timeout or deadline, with the number of attempts) or a `ModelResponseError` (a
response that is not a usable answer). Their messages, the retry notices and ``repr`` never
show the API key, a URL's user-info or an ``Authorization`` value.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import os
import ssl
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from agentfsm import _checks as checks
from agentfsm._redact import redact
from agentfsm.errors import ModelConfigError
from agentfsm.llm._calling import Clock, Offer, RetryingModel, Sleep, Told
from agentfsm.llm._media import chat_messages
from agentfsm.llm._openai_convert import (
    Origin,
    StreamAssembly,
    chat_settings,
    from_completion,
    supports_structured_output,
)
from agentfsm.llm.base import DeltaListener, ModelResponse, RetryListener
from agentfsm.llm.retry import RetryPolicy
from agentfsm.llm.settings import ModelSettings
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message

if TYPE_CHECKING:  # openai takes most of a second to import: it is imported on first use
    import openai
    from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolUnionParam
    from openai.types.chat.completion_create_params import ResponseFormat

API_KEY_VARIABLE = "OPENAI_API_KEY"
"""The environment variable the API key is read from when none is given."""

DEFAULT_DEADLINE = 120.0
"""Seconds one model call may take by default, its attempts and waits together."""


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """The TLS context of every client `OpenAIModel` opens, made once per process.

    It is the one the openai client's HTTP library would make itself (its
    ``create_ssl_context``, which reads ``SSL_CERT_FILE``/``SSL_CERT_DIR`` then), but making
    one loads the whole CA store, 50-100 ms of CPU, and a client is opened for every call.
    """
    import openai

    http = next(
        base
        for base in openai.DefaultAsyncHttpxClient.__mro__[1:]
        if base.__name__ == "AsyncClient"
    )
    library = importlib.import_module(http.__module__.partition(".")[0])  # httpx or httpx2
    return cast(ssl.SSLContext, library.create_ssl_context())


class OpenAIModel(RetryingModel):
    """A model behind the chat completions API: OpenAI's, or any compatible server's.

    Args:
        model: The model id, e.g. ``"gpt-4o-mini"``.
        base_url: The API's base URL (e.g. ``http://localhost:11434/v1``); by default the
            client's own (``OPENAI_BASE_URL``, else OpenAI).
        api_key: The API key; by default ``OPENAI_API_KEY`` from the environment. A server
            that needs no key still needs a non-empty string.
        timeout: Seconds to wait for each read (and write) before the attempt times out.
        connect_timeout: Seconds to wait for a connection.
        retry: What is retried and how long to wait; see `RetryPolicy`.
        stream: Ask for a stream and assemble it into one response; with ``on_delta``,
            each piece of text and of a tool call is told as it arrives.
        sleep: How retries wait (``asyncio.sleep``); inject a fake one in tests.
        client: An ``openai.AsyncOpenAI`` to use (and to keep open) instead of a new one
            per call, e.g. to share its connections; its own retries are turned off for
            these calls. ``base_url`` and ``api_key`` are then ignored.
        deadline: Seconds one call may take in all, its attempts and the waits between
            them (each attempt gets at most what is left); None for no limit.
        clock: The monotonic clock the deadline is measured with (``time.monotonic``).
        structured_output: Whether the model honours a JSON Schema ``response_format``
            (structured output), which a typed Agent then uses; None (the default) decides
            by the model id (`supports_structured_output`). False makes a typed Agent offer
            a ``final_answer`` tool instead.

    Raises:
        TypeError: An argument of the wrong type (``model`` not a string, ``timeout="5s"``…).
        ValueError: An empty ``model``, or a timeout or deadline that is not > 0.
        ModelConfigError: No ``client``, no ``api_key`` and no ``OPENAI_API_KEY``.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        connect_timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        stream: bool = False,
        sleep: Sleep = asyncio.sleep,
        client: openai.AsyncOpenAI | None = None,
        deadline: float | None = DEFAULT_DEADLINE,
        clock: Clock = time.monotonic,
        structured_output: bool | None = None,
    ) -> None:
        _check_arguments(model, base_url, api_key, timeout, connect_timeout, retry, stream)
        if structured_output is not None:
            checks.flag("structured_output", structured_output)
        checks.seconds("deadline", deadline, optional=True)
        checks.callable_or_none("sleep", sleep)
        checks.callable_or_none("clock", clock)
        if client is None and not api_key:
            api_key = os.environ.get(API_KEY_VARIABLE)
            if not api_key:
                raise ModelConfigError(
                    model,
                    f"no API key: set the {API_KEY_VARIABLE} environment variable or pass "
                    "api_key=... (any non-empty string for a server that needs no key)",
                )
        import openai

        self._setup(model, retry, stream, sleep, deadline, clock)
        self._base_url = base_url
        self._api_key = api_key
        self._timeout = openai.Timeout(timeout, connect=connect_timeout)
        self._client = client
        self._structured = (
            supports_structured_output(model) if structured_output is None else structured_output
        )

    @property
    def structured_output(self) -> bool:
        """Whether ``complete`` sends a ``response_format`` (structured output)."""
        return self._structured

    def __repr__(self) -> str:
        where = f", base_url={self._redact(self._base_url)!r}" if self._base_url else ""
        return f"OpenAIModel({self._model!r}{where}, stream={self._stream})"

    def _redact(self, text: str) -> str:
        """``text`` without this model's API key, URL user-info or Authorization values."""
        shared = self._client.api_key if self._client is not None else None
        return redact(text, (self._api_key, shared))

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
        """Answer ``messages``, offering ``tools``; transient failures are retried.

        ``settings`` are sent with each attempt (see `chat_settings` for how each maps
        onto the request).

        With ``response_format`` (a typed Agent's JSON Schema, when `structured_output`),
        it is sent with each attempt: the answer is JSON text in that shape.

        With ``stream=True``, ``on_delta`` is told each piece of the answer as it arrives
        (without a stream, it is told nothing). An attempt that told pieces and fails — cut
        off and retried, or failing the call — is followed by a ``reset`` delta: drop what
        was told so far. What ``on_delta`` raises ends the call and propagates unchanged.

        Raises:
            ModelCallError: An HTTP error status, a connection error or a timeout that
                was not transient, or still failed on the last attempt; a ``Retry-After``
                longer than allowed (``retry_after`` set); the call's deadline passed.
            ModelResponseError: A response that is not a usable answer (cut off, filtered,
                no choices, malformed, a stream that ended without a finish reason), on the
                last attempt when it arrived broken.
        """
        offer = Offer(messages, tools, response_format, settings)
        return await self._call(offer, on_retry, on_delta)

    def _sdk(self) -> ModuleType:
        import openai

        return openai

    def _open(self) -> AbstractAsyncContextManager[openai.AsyncOpenAI]:
        import openai

        if self._client is not None:
            shared = self._client.with_options(max_retries=0, timeout=self._timeout)
            return contextlib.nullcontext(shared)
        # A client per call: its connections are closed with it, in the event loop that
        # opened them, whichever loop the next call runs in. Its TLS context is shared.
        return openai.AsyncOpenAI(
            api_key=self._api_key,
            base_url=self._base_url,
            max_retries=0,
            timeout=self._timeout,
            http_client=openai.DefaultAsyncHttpxClient(verify=_tls_context()),
        )

    async def _request(
        self, client: openai.AsyncOpenAI, offer: Offer, origin: Origin, told: Told | None
    ) -> ModelResponse:
        import openai

        sent = cast("list[ChatCompletionMessageParam]", chat_messages(offer.messages))
        tools = offer.tools
        offered = cast("list[ChatCompletionToolUnionParam]", list(tools)) if tools else openai.omit
        shape = cast("ResponseFormat", offer.response_format or openai.omit)
        completions = client.chat.completions
        asked: dict[str, Any] = chat_settings(offer.settings, bool(tools))
        if not self._stream:
            completion = await completions.create(
                model=self._model, messages=sent, tools=offered, response_format=shape, **asked
            )
            return from_completion(origin, completion)
        stream = await completions.create(
            model=self._model,
            messages=sent,
            tools=offered,
            response_format=shape,
            stream=True,
            stream_options={"include_usage": True},
            **asked,
        )
        assembly = StreamAssembly(origin, told)
        ended = _watch_for_done(stream)
        async with stream:
            async for chunk in stream:
                assembly.add(chunk)
        return assembly.response(ended=ended[0])


def _watch_for_done(stream: Any) -> list[bool | None]:
    """Note whether ``stream`` ends with ``[DONE]``: ``[True]`` if so, ``[False]`` if not.

    ``[DONE]`` is a chat completions stream's end: a body that ends without it was cut,
    however much arrived (a stream cut after its finish reason loses its usage chunk). The
    client consumes ``[DONE]`` without telling; its event iterator is wrapped here before
    the stream is read. On a client whose stream has no such iterator, ``[None]``: unknown.
    """
    ended: list[bool | None] = [None]
    events = getattr(stream, "_iter_events", None)
    if events is None:
        return ended
    ended[0] = False

    async def noting() -> AsyncIterator[Any]:
        async for event in events():
            if getattr(event, "data", "").startswith("[DONE]"):
                ended[0] = True
            yield event

    stream._iter_events = noting
    return ended


def _check_arguments(
    model: object,
    base_url: object,
    api_key: object,
    timeout: object,
    connect_timeout: object,
    retry: object,
    stream: object,
) -> None:
    """Refuse a wrong argument of `OpenAIModel` with an error naming it."""
    checks.text("model", model)
    checks.text("base_url", base_url, optional=True)
    if api_key is not None and not isinstance(api_key, str):
        checks.refuse_type("api_key", api_key, "a string or None")
    checks.seconds("timeout", timeout)
    checks.seconds("connect_timeout", connect_timeout)
    if retry is not None and not isinstance(retry, RetryPolicy):
        checks.refuse_type("retry", retry, "a RetryPolicy or None")
    checks.flag("stream", stream)
