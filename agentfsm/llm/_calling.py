"""What every model over an official HTTP SDK shares: retries, the deadline, error mapping.

`RetryingModel` drives one call: its attempts (each bounded by what is left of the call's
deadline), the waits between them (a `RetryPolicy`, a ``Retry-After`` never cut short), the
``reset`` delta after an attempt that streamed and failed, and the one final error
(`ModelCallError` or `ModelResponseError`, credentials redacted). A subclass says how to open
its client and send one request (`RetryingModel._request`); the SDKs it stands on (``openai``,
``anthropic``) share one shape of errors (``APIStatusError``, ``APIConnectionError``,
``APITimeoutError``, ``APIResponseValidationError``), read here from the SDK's module.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from types import ModuleType
from typing import Any

from agentfsm._redact import redact
from agentfsm.errors import ModelCallError, ModelError, ModelResponseError
from agentfsm.llm._openai_convert import Origin
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

Sleep = Callable[[float], Awaitable[None]]
"""How retries wait: ``await sleep(seconds)``; inject a fake one in tests."""

Clock = Callable[[], float]
"""A monotonic clock in seconds, for the call's deadline; inject a fake one in tests."""

BROKEN_REASONS = frozenset({"no_finish_reason", "malformed", "truncated"})
"""Unusable answers that are retried: they arrived broken, not as the server meant them."""


@dataclasses.dataclass(frozen=True, slots=True)
class Offer:
    """What one call sends: the conversation, the tools, the answer's shape, the settings."""

    messages: Sequence[Message]
    tools: Sequence[JSONObject]
    response_format: JSONObject | None
    settings: ModelSettings | None = None


class BrokenError(Exception):
    """An answer that arrived broken (cut off, not JSON): retried like a dropped connection."""

    def __init__(self, error: ModelResponseError) -> None:
        super().__init__(str(error))
        self.error = error


class Told:
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


class RetryingModel:
    """The call loop of a model over an official SDK; subclasses send the requests.

    A subclass sets ``_model``, ``_retry``, ``_stream``, ``_sleep``, ``_deadline`` and
    ``_clock`` (`_setup`), and gives `_sdk`, `_open`, `_request` and `_redact`.
    """

    _BASE_ERROR = "OpenAIError"
    """The name of the SDK's root error class, which every failure of a request is."""

    _model: str
    _retry: RetryPolicy
    _stream: bool
    _sleep: Sleep
    _deadline: float | None
    _clock: Clock

    def _setup(
        self,
        model: str,
        retry: RetryPolicy | None,
        stream: bool,
        sleep: Sleep,
        deadline: float | None,
        clock: Clock,
    ) -> None:
        self._model = model
        self._retry = retry or RetryPolicy()
        self._stream = stream
        self._sleep = sleep
        self._deadline = deadline
        self._clock = clock

    @property
    def name(self) -> str:
        """The model id."""
        return self._model

    @property
    def retry(self) -> RetryPolicy:
        """What is retried, and how long each retry waits."""
        return self._retry

    @property
    def deadline(self) -> float | None:
        """Seconds one call may take in all (attempts and waits); None for no limit."""
        return self._deadline

    def _sdk(self) -> ModuleType:
        """The SDK module whose errors the requests raise (``openai``, ``anthropic``)."""
        raise NotImplementedError

    def _open(self) -> AbstractAsyncContextManager[Any]:
        """The client for one call (opened per call, or the shared one)."""
        raise NotImplementedError

    async def _request(
        self, client: Any, offer: Offer, origin: Origin, told: Told | None
    ) -> ModelResponse:
        """One request; a `ModelResponseError` for a response that is no answer."""
        raise NotImplementedError

    def _redact(self, text: str) -> str:
        """``text`` without this model's credentials."""
        return redact(text, ())

    async def _call(
        self, offer: Offer, on_retry: RetryListener | None, on_delta: DeltaListener | None
    ) -> ModelResponse:
        """Answer ``offer``: attempts, waits and the one final error."""
        sdk = self._sdk()
        started = self._clock()
        attempts = 0
        told = Told(on_delta) if on_delta is not None and self._stream else None
        async with self._open() as client:
            while True:
                attempts += 1
                if told is not None:
                    told.attempt = attempts
                try:
                    return await self._bounded(client, offer, attempts, started, told)
                except (getattr(sdk, self._BASE_ERROR), BrokenError, ModelError) as error:
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
        self, client: Any, offer: Offer, attempt: int, started: float, told: Told | None
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

    async def _attempt(
        self, client: Any, offer: Offer, attempt: int, told: Told | None
    ) -> ModelResponse:
        """One request; an answer that arrived broken raises `BrokenError` (so it is retried)."""
        origin = Origin(self._model, attempt)
        try:
            return await self._request(client, offer, origin, told)
        except json.JSONDecodeError as error:
            raise BrokenError(
                origin.error("malformed", f"its body is not valid JSON ({error})")
            ) from error
        except ModelResponseError as error:
            if error.reason in BROKEN_REASONS:
                raise BrokenError(error) from error
            raise

    # -- errors of the SDK ----------------------------------------------------------------

    def _transient(self, error: BaseException) -> bool:
        sdk = self._sdk()
        if isinstance(error, BrokenError):
            return True
        if isinstance(error, sdk.APIStatusError):
            return is_transient_status(error.status_code)
        return isinstance(error, sdk.APIConnectionError)  # timeouts included

    def _status_code(self, error: BaseException) -> int | None:
        sdk = self._sdk()
        return error.status_code if isinstance(error, sdk.APIStatusError) else None

    def _asked_wait(self, error: BaseException) -> float | None:
        """The ``Retry-After`` (or ``retry-after-ms``) of an error response, if it sent one."""
        sdk = self._sdk()
        if isinstance(error, sdk.APIStatusError):
            return retry_after(error.response.headers)
        return None

    def _describe(self, error: BaseException) -> str:
        """One line on what went wrong, without the request body or headers."""
        sdk = self._sdk()
        kind = type(error).__name__
        if isinstance(error, BrokenError):
            return f"{type(error.error).__name__}: {error.error}"
        if isinstance(error, sdk.APIStatusError):
            body = error.body
            detail = body.get("message") if isinstance(body, dict) else None
            if detail is None and isinstance(body, dict) and isinstance(body.get("error"), dict):
                detail = body["error"].get("message")
            return f"HTTP {error.status_code} ({kind}): {detail or body or 'no error body'}"
        cause = error.__cause__
        if cause is not None and str(cause):
            return f"{kind}: {error} ({type(cause).__name__}: {cause})"
        return f"{kind}: {error}"

    async def _before_retry(
        self,
        error: BaseException,
        attempts: int,
        started: float,
        on_retry: RetryListener | None,
    ) -> None:
        """Wait before the next attempt, or raise the call's final error."""
        if not self._transient(error) or attempts >= self._retry.max_attempts:
            raise self._failure(error, attempts) from error
        asked = self._asked_wait(error)
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
                        error.error if isinstance(error, BrokenError) else error
                    ).__name__,
                    message=self._redact(self._describe(error)),
                    status_code=self._status_code(error),
                    wait=wait,
                )
            )
        await self._sleep(wait)

    def _failure(self, error: BaseException, attempts: int) -> ModelError:
        sdk = self._sdk()
        name, transient = self._model, self._transient(error)
        if isinstance(error, BrokenError):
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
        if isinstance(error, sdk.APIResponseValidationError):
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
        error: BaseException,
        attempts: int,
        why: str,
        *,
        retryable: bool,
        reason: str | None = None,
        retry_after: float | None = None,
    ) -> ModelCallError:
        sdk = self._sdk()
        if reason is None:
            reason = "status"
            if isinstance(error, sdk.APITimeoutError):
                reason = "timeout"
            elif isinstance(error, sdk.APIConnectionError):
                reason = "connection"
            elif not isinstance(error, sdk.APIStatusError):
                reason = "api_error"
        where = f" at {str(error.request.url)!r}" if isinstance(error, sdk.APIError) else ""
        return ModelCallError(
            self._redact(
                f"model {self._model!r} call failed{where} after {attempts} attempt(s): "
                f"{self._describe(error)}; {why}"
            ),
            model=self._model,
            reason=reason,
            attempts=attempts,
            status_code=self._status_code(error),
            retryable=retryable,
            retry_after=retry_after,
        )

    def _asked_too_long(
        self, error: BaseException, attempts: int, asked: float, allowed: str
    ) -> ModelCallError:
        why = (
            f"the server asked to wait {asked:g}s before a retry (Retry-After), longer than "
            f"{allowed}; not retried early: try again after retry_after seconds"
        )
        return self._call_error(error, attempts, why, retryable=True, retry_after=asked)

    def _deadline_passed(
        self, attempts: int, error: BaseException | None, wait: float | None
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
