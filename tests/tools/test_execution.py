from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tenacity import wait_fixed

from agentfsm.errors import ToolTimeoutError
from agentfsm.tools import Tool, ToolContext, ToolStatus, ToolSystem
from agentfsm.tools.execution import Attempted, start
from agentfsm.tools.system import _DEFAULT_RETRY
from tests.tools.spies import Flavour, call, spy_tool

CONTEXT = ToolContext(run_id="run-1")
TIMEOUT = 0.005
"""Long enough for a no-op body, short enough that the suite never really waits."""


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """An event a blocking body waits on; always released, so no thread outlives the test."""
    event = threading.Event()
    yield event
    event.set()


def test_an_async_body_past_its_timeout_is_cancelled_and_answered_timeout() -> None:
    cancelled = []

    async def hang() -> str:
        """Never finishes on its own."""
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "unreachable"

    system = ToolSystem([Tool(hang, timeout=TIMEOUT)])
    started = time.perf_counter()

    (result,) = system.run_round_sync([call("c1", "hang", "{}")], CONTEXT).results

    assert time.perf_counter() - started < 1.0
    assert (result.status, result.attempts) == (ToolStatus.TIMEOUT, 1)
    assert result.error is not None
    assert (result.error.type, result.error.message) == (
        "ToolTimeoutError",
        "call 'c1' to tool 'hang' timed out after 0.005 s",
    )
    assert cancelled == [True]


def test_a_sync_body_past_its_timeout_is_abandoned_in_its_thread(gate: threading.Event) -> None:
    finished = threading.Event()

    def block() -> str:
        """Waits until the test releases it."""
        gate.wait(5.0)
        finished.set()
        return "late"

    system = ToolSystem([Tool(block, timeout=TIMEOUT)])

    (result,) = system.run_round_sync([call("c1", "block", "{}")], CONTEXT).results

    assert result.status is ToolStatus.TIMEOUT
    assert not finished.is_set()  # it still runs: a thread cannot be killed (documented)
    gate.set()
    assert finished.wait(1.0)


def test_a_body_within_its_timeout_succeeds(flavour: Flavour) -> None:
    forecast, spy = spy_tool(flavour, timeout=1.0)

    (result,) = ToolSystem([forecast]).run_round_sync([call("c1")], CONTEXT).results

    assert (result.status, result.output) == (ToolStatus.SUCCESS, {"city": "Paris", "days": 2})
    assert len(spy.calls) == 1


def test_a_sync_body_exception_in_its_thread_is_an_error_result() -> None:
    def explode() -> str:
        """Fails at once."""
        raise PermissionError("read-only file system")

    (result,) = (
        ToolSystem([Tool(explode, timeout=1.0)])
        .run_round_sync([call("c1", "explode", "{}")], CONTEXT)
        .results
    )

    assert result.status is ToolStatus.ERROR
    assert result.error is not None
    assert (result.error.type, result.error.message) == (
        "PermissionError",
        "read-only file system",
    )


def test_a_base_exception_in_a_sync_body_thread_still_propagates() -> None:
    def leave() -> str:
        """Exits."""
        raise SystemExit(3)

    with pytest.raises(SystemExit):
        ToolSystem([Tool(leave, timeout=1.0)]).run_round_sync([call("c1", "leave", "{}")], CONTEXT)


def test_a_body_raising_its_own_timeout_error_is_an_error_not_a_timeout(flavour: Flavour) -> None:
    forecast, spy = spy_tool(flavour, timeout=1.0)

    def own_timeout(_: dict[str, object]) -> object:
        raise ToolTimeoutError("upstream", "other-call", 2.0)

    spy.behaviour = own_timeout

    (result,) = ToolSystem([forecast]).run_round_sync([call("c1")], CONTEXT).results

    assert result.status is ToolStatus.ERROR


class Flaky:
    """Fails ``failures`` times with ``error``, then returns "ok"."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures = failures
        self.error = error
        self.runs = 0

    def __call__(self) -> str:
        self.runs += 1
        if self.runs <= self.failures:
            raise self.error
        return "ok"


@pytest.mark.parametrize(
    ("idempotent", "retry_on", "failures", "status", "runs"),
    [
        (True, (ConnectionError,), 2, ToolStatus.SUCCESS, 3),
        (True, (ConnectionError,), 5, ToolStatus.ERROR, 3),
        (True, (OSError,), 1, ToolStatus.SUCCESS, 2),
        (True, (ValueError,), 1, ToolStatus.ERROR, 1),
        (False, (ConnectionError,), 1, ToolStatus.ERROR, 1),
        (True, (), 1, ToolStatus.ERROR, 1),
    ],
    ids=[
        "retried-until-success",
        "retries-exhausted",
        "retryable-by-base-class",
        "not-a-retryable-type",
        "not-idempotent",
        "nothing-declared-retryable",
    ],
)
def test_only_an_idempotent_tool_retries_declared_exceptions(
    idempotent: bool,
    retry_on: tuple[type[Exception], ...],
    failures: int,
    status: ToolStatus,
    runs: int,
) -> None:
    flaky = Flaky(failures, ConnectionError("reset by peer"))
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    system = ToolSystem(
        [Tool(flaky, name="flaky", idempotent=idempotent, retry_on=retry_on)],
        max_attempts=3,
        retry_wait=wait_fixed(0.5),
        sleep=sleep,
    )

    (result,) = system.run_round_sync([call("c1", "flaky", "{}")], CONTEXT).results

    assert (result.status, result.attempts, flaky.runs) == (status, runs, runs)
    assert slept == [0.5] * (runs - 1)


def test_an_idempotent_tool_retries_its_timeouts_when_timeout_error_is_retryable() -> None:
    runs = []

    async def sometimes_hangs() -> str:
        """Hangs on its first run only."""
        runs.append(1)
        if len(runs) == 1:
            await asyncio.Event().wait()
        return "ok"

    async def sleep(seconds: float) -> None:
        del seconds

    system = ToolSystem(
        [Tool(sometimes_hangs, idempotent=True, timeout=TIMEOUT, retry_on=(TimeoutError,))],
        sleep=sleep,
    )

    (result,) = system.run_round_sync([call("c1", "sometimes_hangs", "{}")], CONTEXT).results

    assert (result.status, result.output, result.attempts) == (ToolStatus.SUCCESS, "ok", 2)


def test_cancelling_the_round_cancels_the_running_body() -> None:
    body_cancelled = asyncio.Event()
    started = asyncio.Event()

    async def wait_forever() -> str:
        """Runs until cancelled."""
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            body_cancelled.set()
        return "unreachable"

    system = ToolSystem([Tool(wait_forever, timeout=10.0)])

    async def scenario() -> None:
        round_ = asyncio.ensure_future(
            system.run_round([call("c1", "wait_forever", "{}")], CONTEXT)
        )
        await started.wait()
        round_.cancel()
        with pytest.raises(asyncio.CancelledError):
            await round_
        await asyncio.wait_for(body_cancelled.wait(), 1.0)

    asyncio.run(scenario())
    assert body_cancelled.is_set()


def test_a_sync_body_raising_stop_iteration_in_its_thread_is_an_error_result() -> None:
    def stop() -> str:
        """Raises what a future cannot carry."""
        raise StopIteration

    (result,) = (
        ToolSystem([Tool(stop, timeout=1.0)])
        .run_round_sync([call("c1", "stop", "{}")], CONTEXT)
        .results
    )

    assert result.status is ToolStatus.ERROR
    assert result.error is not None
    assert (result.error.type, result.error.message) == (
        "RuntimeError",
        "tool body raised StopIteration()",
    )


def test_a_body_failing_while_cancelled_after_its_timeout_is_still_a_timeout() -> None:
    async def messy() -> str:
        """Turns its cancellation into another error."""
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise RuntimeError("cleanup failed") from None
        return "unreachable"

    (result,) = (
        ToolSystem([Tool(messy, timeout=TIMEOUT)])
        .run_round_sync([call("c1", "messy", "{}")], CONTEXT)
        .results
    )

    assert result.status is ToolStatus.TIMEOUT


@given(value=st.none() | st.booleans() | st.integers() | st.text(max_size=8))
def test_a_plain_body_s_outcome_is_the_attempted_its_constructor_builds(value: object) -> None:
    tool = Tool(lambda: value, name="plain")

    ran = start(tool, {}, "c1", _DEFAULT_RETRY)

    assert type(ran) is Attempted
    assert ran == Attempted(value, None, 1)
    assert (ran.value, ran.error, ran.attempts) == (value, None, 1)
