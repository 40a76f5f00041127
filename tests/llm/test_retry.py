"""RetryPolicy: which statuses are transient, Retry-After parsing, and the backoff."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agentfsm.llm import RetryPolicy, is_transient_status, retry_after

NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z


@pytest.mark.parametrize(
    ("status", "transient"),
    [
        *[(status, True) for status in (408, 409, 429, 500, 502, 503, 504, 599)],
        *[(status, False) for status in (400, 401, 403, 404, 413, 422, 499, 600)],
    ],
    ids=lambda value: str(value),
)
def test_only_timeouts_conflicts_rate_limits_and_server_errors_are_transient(
    status: int, transient: bool
) -> None:
    assert is_transient_status(status) is transient


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        pytest.param({}, None, id="absent"),
        pytest.param({"retry-after": "7"}, 7.0, id="seconds"),
        pytest.param({"retry-after": "1.5"}, 1.5, id="fractional"),
        pytest.param({"retry-after": "-1"}, 0.0, id="negative"),
        pytest.param({"retry-after": "nan"}, None, id="not-finite"),
        pytest.param({"retry-after": "Tue, 14 Nov 2023 22:13:50 GMT"}, 30.0, id="http-date"),
        pytest.param({"retry-after": "Tue, 14 Nov 2023 22:13:00 GMT"}, 0.0, id="past-date"),
        pytest.param({"retry-after": "Tue, 14 Nov 2023 22:13:50"}, None, id="date-no-zone"),
        pytest.param({"retry-after": "later"}, None, id="unreadable"),
        pytest.param({"retry-after-ms": "250"}, 0.25, id="milliseconds"),
        pytest.param({"retry-after-ms": "x", "retry-after": "2"}, 2.0, id="bad-ms-falls-back"),
    ],
)
def test_retry_after_reads_seconds_dates_and_milliseconds(
    headers: dict[str, str], seconds: float | None
) -> None:
    assert retry_after(headers, now=lambda: NOW) == seconds


def test_backoff_doubles_from_the_initial_wait_up_to_the_maximum() -> None:
    policy = RetryPolicy(initial_wait=0.5, max_wait=5.0, random=lambda: 0.0)

    assert [policy.backoff(n) for n in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]


def test_jitter_adds_up_to_its_amount_without_passing_the_maximum() -> None:
    policy = RetryPolicy(initial_wait=1.0, max_wait=4.5, jitter=0.5, random=lambda: 0.5)

    assert [policy.backoff(n) for n in (1, 2, 3)] == [1.25, 2.25, 4.25]
    assert (
        RetryPolicy(initial_wait=4.0, max_wait=4.5, jitter=1.0, random=lambda: 0.9).backoff(1)
        == 4.5
    )


def test_a_huge_retry_number_does_not_overflow() -> None:
    assert RetryPolicy(max_wait=8.0, random=lambda: 0.0).backoff(10_000) == 8.0


def test_the_wait_is_the_server_hint_never_cut_short_else_the_backoff() -> None:
    policy = RetryPolicy(max_retry_after=10.0, random=lambda: 0.0)

    assert (policy.wait(1, 3.0), policy.wait(1, 60.0), policy.wait(2, None)) == (3.0, 60.0, 1.0)
    assert (policy.allows(None), policy.allows(10.0), policy.allows(10.5)) == (True, True, False)


@pytest.mark.parametrize(
    ("build", "setting"),
    [
        pytest.param(lambda: RetryPolicy(max_attempts=0), "max_attempts", id="no-attempts"),
        pytest.param(lambda: RetryPolicy(initial_wait=-1), "initial_wait", id="negative-wait"),
        pytest.param(lambda: RetryPolicy(max_wait=float("nan")), "max_wait", id="nan-wait"),
        pytest.param(lambda: RetryPolicy(jitter=-0.1), "jitter", id="negative-jitter"),
    ],
)
def test_a_policy_refuses_impossible_settings(
    build: Callable[[], RetryPolicy], setting: str
) -> None:
    with pytest.raises(ValueError, match=setting):
        build()
