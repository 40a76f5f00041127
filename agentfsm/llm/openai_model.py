"""`OpenAIModel`: chat completions with tools, over the official ``openai`` client.

Works with any OpenAI-compatible server through ``base_url``. The client's own retries are
off (``max_retries=0``); transient failures are retried here instead, with tenacity, under a
`RetryPolicy`, each retry reported to the caller's ``on_retry`` before its wait. An error
that escapes `OpenAIModel.complete` is final: a `ModelCallError` (status, connection or
timeout, with the number of attempts) or a `ModelResponseError` (a response that is not a
usable answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, cast

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from agentfsm.errors import ModelCallError, ModelConfigError, ModelError
from agentfsm.llm._openai_convert import Origin, StreamAssembly, from_completion
from agentfsm.llm.base import ModelResponse, RetryListener, RetryNotice
from agentfsm.llm.retry import RetryPolicy, is_transient_status, retry_after
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message

if TYPE_CHECKING:  # openai takes most of a second to import: it is imported on first use
    import openai
    from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolUnionParam

API_KEY_VARIABLE = "OPENAI_API_KEY"
"""The environment variable the API key is read from when none is given."""

Sleep = Callable[[float], Awaitable[None]]
"""How retries wait: ``await sleep(seconds)``; inject a fake one in tests."""


def _transient(error: BaseException) -> bool:
    import openai

    if isinstance(error, openai.APIStatusError):
        return is_transient_status(error.status_code)
    return isinstance(error, openai.APIConnectionError)  # timeouts included


def _status_code(error: BaseException) -> int | None:
    import openai

    return error.status_code if isinstance(error, openai.APIStatusError) else None


def _describe(error: BaseException) -> str:
    """One line on what went wrong, without the request body or headers."""
    import openai

    kind = type(error).__name__
    if isinstance(error, openai.APIStatusError):
        body = error.body
        detail = body.get("message") if isinstance(body, dict) else None
        return f"HTTP {error.status_code} ({kind}): {detail or body or 'no error body'}"
    cause = error.__cause__
    if cause is not None and str(cause):
        return f"{kind}: {error} ({type(cause).__name__}: {cause})"
    return f"{kind}: {error}"


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
        stream: Ask for a stream and assemble it into one response.
        sleep: How retries wait (``asyncio.sleep``); inject a fake one in tests.
        client: An ``openai.AsyncOpenAI`` to use (and to keep open) instead of a new one
            per call, e.g. to share its connections; its own retries are turned off for
            these calls. ``base_url`` and ``api_key`` are then ignored.

    Raises:
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
    ) -> None:
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

    @property
    def name(self) -> str:
        """The model id."""
        return self._model

    @property
    def retry(self) -> RetryPolicy:
        """What is retried, and how long each retry waits."""
        return self._retry

    def __repr__(self) -> str:
        where = f", base_url={self._base_url!r}" if self._base_url else ""
        return f"OpenAIModel({self._model!r}{where}, stream={self._stream})"

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[JSONObject],
        *,
        on_retry: RetryListener | None = None,
    ) -> ModelResponse:
        """Answer ``messages``, offering ``tools``; transient failures are retried.

        Raises:
            ModelCallError: An HTTP error status, a connection error or a timeout that
                was not transient, or still failed on the last attempt.
            ModelResponseError: A response that is not a usable answer (cut off, filtered,
                no choices, malformed, a stream that ended without a finish reason).
        """
        import openai

        attempts = 0
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self._retry.max_attempts),
            wait=self._wait,
            retry=retry_if_exception(_transient),
            sleep=self._sleep,
            before_sleep=lambda state: self._report(state, on_retry),
            reraise=True,
        )
        async with self._open() as client:
            try:
                async for attempt in retrying:
                    with attempt:
                        attempts += 1
                        response = await self._attempt(client, messages, tools, attempts)
            except openai.OpenAIError as error:
                raise self._failure(error, attempts) from error
            except json.JSONDecodeError as error:
                origin = Origin(self._model, attempts)
                raise origin.error("malformed", f"its body is not valid JSON ({error})") from error
        return response

    def _open(self) -> AbstractAsyncContextManager[openai.AsyncOpenAI]:
        import openai

        if self._client is not None:
            shared = self._client.with_options(max_retries=0, timeout=self._timeout)
            return contextlib.nullcontext(shared)
        # A client per call: its connections are closed with it, in the event loop that
        # opened them, whichever loop the next call runs in.
        return openai.AsyncOpenAI(
            api_key=self._api_key,
            base_url=self._base_url,
            max_retries=0,
            timeout=self._timeout,
        )

    async def _attempt(
        self,
        client: openai.AsyncOpenAI,
        messages: Sequence[Message],
        tools: Sequence[JSONObject],
        attempt: int,
    ) -> ModelResponse:
        import openai

        origin = Origin(self._model, attempt)
        sent = cast("list[ChatCompletionMessageParam]", [m.to_openai() for m in messages])
        offered = cast("list[ChatCompletionToolUnionParam]", list(tools)) if tools else openai.omit
        completions = client.chat.completions
        if not self._stream:
            completion = await completions.create(model=self._model, messages=sent, tools=offered)
            return from_completion(origin, completion)
        stream = await completions.create(
            model=self._model,
            messages=sent,
            tools=offered,
            stream=True,
            stream_options={"include_usage": True},
        )
        assembly = StreamAssembly(origin)
        async with stream:
            async for chunk in stream:
                assembly.add(chunk)
        return assembly.response()

    def _wait(self, state: RetryCallState) -> float:
        import openai

        error = state.outcome.exception() if state.outcome is not None else None
        asked = (
            retry_after(error.response.headers)
            if isinstance(error, openai.APIStatusError)
            else None
        )
        return self._retry.wait(state.attempt_number, asked)

    def _report(self, state: RetryCallState, on_retry: RetryListener | None) -> None:
        if on_retry is None or state.outcome is None:
            return
        error = state.outcome.exception()
        if error is None:  # pragma: no cover - tenacity sleeps only after a failure here
            return
        on_retry(
            RetryNotice(
                attempt=state.attempt_number,
                error_type=type(error).__name__,
                message=_describe(error),
                status_code=_status_code(error),
                wait=state.next_action.sleep if state.next_action is not None else 0.0,
            )
        )

    def _failure(self, error: openai.OpenAIError, attempts: int) -> ModelError:
        import openai

        name, transient = self._model, _transient(error)
        if isinstance(error, openai.APIResponseValidationError):
            origin = Origin(name, attempts)
            return origin.error("malformed", f"its body does not fit the API ({error})")
        if transient:  # retried until the last attempt allowed
            why = f"transient, but all {attempts} attempt(s) allowed failed"
        else:
            why = (
                "not retried: only connection errors, timeouts and HTTP 408, 409, 429 and 5xx are"
            )
        reason = "status"
        if isinstance(error, openai.APITimeoutError):
            reason = "timeout"
        elif isinstance(error, openai.APIConnectionError):
            reason = "connection"
        elif not isinstance(error, openai.APIStatusError):
            reason = "api_error"
        where = f" at {str(error.request.url)!r}" if isinstance(error, openai.APIError) else ""
        return ModelCallError(
            f"model {name!r} call failed{where} after {attempts} attempt(s): "
            f"{_describe(error)}; {why}",
            model=name,
            reason=reason,
            attempts=attempts,
            status_code=_status_code(error),
            retryable=transient,
        )
