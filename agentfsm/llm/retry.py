"""What a model call retries, and how long it waits: `RetryPolicy`.

Only transient failures are retried: connection errors, timeouts, and the HTTP statuses
408 (request timeout), 409 (conflict, e.g. a lock), 429 (rate limited) and 5xx (server
errors). A request the server refused for what it is — 400, 401, 403, 404, 422 — fails at
once: sending it again would fail the same way.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

TRANSIENT_STATUSES = frozenset({408, 409, 429})
"""Client-error statuses that are retried; every 5xx is retried too."""


def is_transient_status(status: int) -> bool:
    """Whether an HTTP error status is worth retrying (408, 409, 429 or any 5xx)."""
    return status in TRANSIENT_STATUSES or 500 <= status <= 599


def retry_after(headers: Mapping[str, str], now: Callable[[], float] = time.time) -> float | None:
    """The wait, in seconds, a response asks for, or None if it asks for none.

    ``retry-after-ms`` (milliseconds, sent by OpenAI) is preferred; ``Retry-After`` may be
    seconds or an HTTP date. A date in the past, or a negative value, asks for no wait.
    """
    millis = _number(headers.get("retry-after-ms"))
    if millis is not None:
        return max(millis / 1000, 0.0)
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _number(value)
    if seconds is not None:
        return max(seconds, 0.0)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # an HTTP date is GMT; a naive one is read as such
        return None
    return max(when.timestamp() - now(), 0.0)


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many times a model call is tried, and how long it waits between tries.

    The wait before retry ``n`` (1 for the first retry) is the ``Retry-After`` the server
    sent, never cut short; without one it is
    ``min(max_wait, initial_wait * 2 ** (n - 1) + jitter * random())``. A ``Retry-After``
    longer than ``max_retry_after`` is not waited for: the call fails at once with a
    retryable error that carries the wait asked for.

    Attributes:
        max_attempts: Tries in all, the first included (1 disables retries).
        initial_wait: Seconds before the first retry, before jitter.
        max_wait: The longest computed backoff, in seconds.
        jitter: Up to this many random seconds are added, so clients spread out.
        max_retry_after: The longest ``Retry-After`` waited for; a longer one fails the
            call at once (it is never retried before the server said).
        random: The source of jitter, uniform on [0, 1).
    """

    max_attempts: int = 4
    initial_wait: float = 0.5
    max_wait: float = 8.0
    jitter: float = 0.5
    max_retry_after: float = 30.0
    random: Callable[[], float] = field(default=random.random, compare=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")
        for name in ("initial_wait", "max_wait", "jitter", "max_retry_after"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be a number of seconds >= 0")

    def backoff(self, retry: int) -> float:
        """The computed wait before retry ``retry`` (1 for the first), jitter included."""
        exponential = self.initial_wait * 2.0 ** min(retry - 1, 64)
        return min(self.max_wait, exponential + self.jitter * self.random())

    def wait(self, retry: int, asked: float | None) -> float:
        """The wait before retry ``retry``: what the server ``asked``, else the backoff.

        Use `allows` first: a wait asked for that is longer than ``max_retry_after`` is not
        to be waited (nor cut short).
        """
        if asked is not None:
            return asked
        return self.backoff(retry)

    def allows(self, asked: float | None) -> bool:
        """Whether a ``Retry-After`` of ``asked`` seconds is one to wait for."""
        return asked is None or asked <= self.max_retry_after
