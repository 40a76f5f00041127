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
import dataclasses
import functools
import importlib
import json
import os
import ssl
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, cast

from agentfsm import _checks as checks
from agentfsm._redact import redact
from agentfsm.errors import ModelCallError, ModelConfigError, ModelError, ModelResponseError
from agentfsm.llm._openai_convert import (
    Origin,
    StreamAssembly,
    chat_settings,
    from_completion,
    supports_structured_output,
)
from agentfsm.llm.base import (
    DeltaKind,
    DeltaListener,
    ModelDelta,
    ModelResponse,
    RetryListener,
    RetryNotice,
)
from agentfsm.llm.retry import RetryPolicy, is_transient_status, retry_after
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

Sleep = Callable[[float], Awaitable[None]]
"""How retries wait: ``await sleep(seconds)``; inject a fake one in tests."""

Clock = Callable[[], float]
"""A monotonic clock in seconds, for the call's deadline; inject a fake one in tests."""

_BROKEN_REASONS = frozenset({"no_finish_reason", "malformed"})
"""Unusable answers that are retried: they arrived broken, not as the server meant them."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Offer:
    """What one call sends: the conversation, the tools and the answer's shape."""

    messages: Sequence[Message]
    tools: Sequence[JSONObject]
    response_format: JSONObject | None
    settings: ModelSettings | None = None


class _BrokenError(Exception):
    """An answer that arrived broken (cut off, not JSON): retried like a dropped connection."""

    def __init__(self, error: ModelResponseError) -> None:
        super().__init__(str(error))
        self.error = error


class _Told:
    """The pieces of one call's answer, told to its listener as they arrive.

    Each is stamped with its attempt. An attempt that told pieces and is not accepted is
    followed by a ``reset`` delta; what the listener itself raises is never mistaken for a
    failure of the model.
    """

    __slots__ = ("attempt", "error", "listener", "told")

    def __init__(self, listener: DeltaListener) -> None:
        self.listener = listener
        self.attempt = 1
        self.told = False
        self.error: BaseException | None = None

    def __call__(self, delta: ModelDelta) -> None:
        self.told = True
        if self.attempt != 1:
            delta = dataclasses.replace(delta, attempt=self.attempt)
        try:
            self.listener(delta)
        except BaseException as error:
            self.error = error
            raise

    def failed(self) -> None:
        """The attempt failed: re-raise what the listener raised, if it did; else reset."""
        if self.error is not None:
            raise self.error
        if self.told:
            self.told = False
            self(ModelDelta(DeltaKind.RESET))


def _transient(error: BaseException) -> bool:
    import openai

    if isinstance(error, _BrokenError):
        return True
    if isinstance(error, openai.APIStatusError):
        return is_transient_status(error.status_code)
    return isinstance(error, openai.APIConnectionError)  # timeouts included


def _status_code(error: BaseException) -> int | None:
    import openai

    return error.status_code if isinstance(error, openai.APIStatusError) else None


def _asked_wait(error: BaseException) -> float | None:
    """The ``Retry-After`` (or ``retry-after-ms``) of an error response, if it sent one."""
    import openai

    if isinstance(error, openai.APIStatusError):
        return retry_after(error.response.headers)
    return None


def _describe(error: BaseException) -> str:
    """One line on what went wrong, without the request body or headers."""
    import openai

    kind = type(error).__name__
    if isinstance(error, _BrokenError):
        return f"{type(error.error).__name__}: {error.error}"
    if isinstance(error, openai.APIStatusError):
        body = error.body
        detail = body.get("message") if isinstance(body, dict) else None
        return f"HTTP {error.status_code} ({kind}): {detail or body or 'no error body'}"
    cause = error.__cause__
    if cause is not None and str(cause):
        return f"{kind}: {error} ({type(cause).__name__}: {cause})"
    return f"{kind}: {error}"


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


class OpenAIModel:
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

        self._model = model
        self._base_url = base_url
        self._api_key = api_key
        self._timeout = openai.Timeout(timeout, connect=connect_timeout)
        self._retry = retry or RetryPolicy()
        self._stream = stream
        self._sleep = sleep
        self._client = client
        self._deadline = deadline
        self._clock = clock
        self._structured = (
            supports_structured_output(model) if structured_output is None else structured_output
        )

    @property
    def name(self) -> str:
        """The model id."""
        return self._model

    @property
    def structured_output(self) -> bool:
        """Whether ``complete`` sends a ``response_format`` (structured output)."""
        return self._structured

    @property
    def retry(self) -> RetryPolicy:
        """What is retried, and how long each retry waits."""
        return self._retry

    @property
    def deadline(self) -> float | None:
        """Seconds one call may take in all (attempts and waits); None for no limit."""
        return self._deadline

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
        import openai

        started = self._clock()
        attempts = 0
        told = _Told(on_delta) if on_delta is not None and self._stream else None
        async with self._open() as client:
            while True:
                attempts += 1
                if told is not None:
                    told.attempt = attempts
                try:
                    offer = _Offer(messages, tools, response_format, settings)
                    return await self._bounded(client, offer, attempts, started, told)
                except (openai.OpenAIError, _BrokenError, ModelError) as error:
                    if told is not None:
                        told.failed()
                    if isinstance(error, ModelError):
                        raise
                    await self._before_retry(error, attempts, started, on_retry)

    def _left(self, started: float) -> float | None:
        """Seconds left before the call's deadline, or None without one."""
        if self._deadline is None:
            return None
        return self._deadline - (self._clock() - started)

    async def _bounded(
        self,
        client: openai.AsyncOpenAI,
        offer: _Offer,
        attempt: int,
        started: float,
        told: _Told | None,
    ) -> ModelResponse:
        """One attempt, given at most what is left of the call's deadline."""
        left = self._left(started)
        if left is None:
            return await self._attempt(client, offer, attempt, told)
        if left <= 0:
            raise self._deadline_passed(attempt - 1, None, None)
        try:
            one = self._attempt(client, offer, attempt, told)
            return await asyncio.wait_for(one, left)
        except TimeoutError:
            raise self._deadline_passed(attempt, None, None) from None

    async def _before_retry(
        self,
        error: openai.OpenAIError | _BrokenError,
        attempts: int,
        started: float,
        on_retry: RetryListener | None,
    ) -> None:
        """Wait before the next attempt, or raise the call's final error."""
        if not _transient(error) or attempts >= self._retry.max_attempts:
            raise self._failure(error, attempts) from error
        asked = _asked_wait(error)
        if not self._retry.allows(asked) and asked is not None:
            allowed = f"max_retry_after={self._retry.max_retry_after:g}s"
            raise self._asked_too_long(error, attempts, asked, allowed) from error
        wait = self._retry.wait(attempts, asked)
        left = self._left(started)
        if left is not None and wait >= left:
            if asked is not None:
                allowed = f"the {max(left, 0.0):.3g}s left of its {self._deadline:g}s deadline"
                raise self._asked_too_long(error, attempts, asked, allowed) from error
            raise self._deadline_passed(attempts, error, wait) from error
        if on_retry is not None:
            on_retry(
                RetryNotice(
                    attempt=attempts,
                    error_type=type(
                        error.error if isinstance(error, _BrokenError) else error
                    ).__name__,
                    message=self._redact(_describe(error)),
                    status_code=_status_code(error),
                    wait=wait,
                )
            )
        await self._sleep(wait)

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

    async def _attempt(
        self,
        client: openai.AsyncOpenAI,
        offer: _Offer,
        attempt: int,
        told: _Told | None,
    ) -> ModelResponse:
        """One request; an answer that arrived broken raises `_BrokenError` (so it is retried)."""
        origin = Origin(self._model, attempt)
        try:
            return await self._request(client, offer, origin, told)
        except json.JSONDecodeError as error:
            raise _BrokenError(
                origin.error("malformed", f"its body is not valid JSON ({error})")
            ) from error
        except ModelResponseError as error:
            if error.reason in _BROKEN_REASONS:
                raise _BrokenError(error) from error
            raise

    async def _request(
        self, client: openai.AsyncOpenAI, offer: _Offer, origin: Origin, told: _Told | None
    ) -> ModelResponse:
        import openai

        sent = cast("list[ChatCompletionMessageParam]", [m.to_openai() for m in offer.messages])
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
        async with stream:
            async for chunk in stream:
                assembly.add(chunk)
        return assembly.response()

    def _failure(self, error: openai.OpenAIError | _BrokenError, attempts: int) -> ModelError:
        import openai

        name, transient = self._model, _transient(error)
        if isinstance(error, _BrokenError):
            problem = str(error.error).split(": ", 1)[-1]
            return ModelResponseError(
                self._redact(
                    f"model {name!r} returned an unusable response on each of {attempts} "
                    f"attempt(s): {problem}"
                ),
                model=name,
                reason=error.error.reason,
                attempts=attempts,
            )
        if isinstance(error, openai.APIResponseValidationError):
            origin = Origin(name, attempts)
            return origin.error("malformed", f"its body does not fit the API ({error})")
        if transient:  # retried until the last attempt allowed
            why = f"transient, but all {attempts} attempt(s) allowed failed"
        else:
            why = (
                "not retried: only connection errors, timeouts and HTTP 408, 409, 429 and 5xx are"
            )
        return self._call_error(error, attempts, why, retryable=transient)

    def _call_error(
        self,
        error: openai.OpenAIError | _BrokenError,
        attempts: int,
        why: str,
        *,
        retryable: bool,
        reason: str | None = None,
        retry_after: float | None = None,
    ) -> ModelCallError:
        import openai

        if reason is None:
            reason = "status"
            if isinstance(error, openai.APITimeoutError):
                reason = "timeout"
            elif isinstance(error, openai.APIConnectionError):
                reason = "connection"
            elif not isinstance(error, openai.APIStatusError):
                reason = "api_error"
        where = f" at {str(error.request.url)!r}" if isinstance(error, openai.APIError) else ""
        return ModelCallError(
            self._redact(
                f"model {self._model!r} call failed{where} after {attempts} attempt(s): "
                f"{_describe(error)}; {why}"
            ),
            model=self._model,
            reason=reason,
            attempts=attempts,
            status_code=_status_code(error),
            retryable=retryable,
            retry_after=retry_after,
        )

    def _asked_too_long(
        self, error: openai.OpenAIError | _BrokenError, attempts: int, asked: float, allowed: str
    ) -> ModelCallError:
        why = (
            f"the server asked to wait {asked:g}s before a retry (Retry-After), longer than "
            f"{allowed}; not retried early: try again after retry_after seconds"
        )
        return self._call_error(error, attempts, why, retryable=True, retry_after=asked)

    def _deadline_passed(
        self, attempts: int, error: openai.OpenAIError | _BrokenError | None, wait: float | None
    ) -> ModelCallError:
        after = f" after {attempts} attempt(s)" if attempts else ""
        if error is not None:
            why = (
                f"its deadline of {self._deadline:g}s (deadline=...) leaves no time for the "
                f"next wait of {wait:.3g}s"
            )
            return self._call_error(error, attempts, why, retryable=True, reason="deadline")
        return ModelCallError(
            f"model {self._model!r} call failed{after}: its deadline of {self._deadline:g}s "
            "(deadline=..., attempts and waits together) passed",
            model=self._model,
            reason="deadline",
            attempts=max(attempts, 1),
            retryable=True,
        )


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
