"""OpenAIModel under chaos (issue 18, part 4), against the loopback server, with a fake clock.

Broken answers are retried like dropped connections and never accepted in part; a
Retry-After is never cut short; one call has a deadline; the API key and URL credentials are
masked wherever the library records them.
"""

from __future__ import annotations

import asyncio

import pytest

from agentfsm import Agent, Event
from agentfsm.errors import ModelCallError, ModelResponseError
from agentfsm.llm import OpenAIModel, RetryPolicy
from agentfsm.llm.openai_model import DEFAULT_DEADLINE
from agentfsm.states.messages import ToolCall
from agentfsm.stores import SQLiteStore
from agentfsm.testing import (
    CutConnection,
    Disconnect,
    ErrorResponse,
    MalformedBody,
    MalformedChunk,
    Reply,
    Step,
    TruncatedStream,
)
from tests.llm.conftest import API_KEY, QUESTION, Harness

PARIS = ToolCall(id="call_a", name="get_weather", arguments='{"city": "Paris"}')

BROKEN: list[tuple[Step, bool, str]] = [
    (TruncatedStream(Reply("It is sun")), True, "no_finish_reason"),
    (TruncatedStream(Reply(tool_calls=(PARIS,))), True, "no_finish_reason"),
    (TruncatedStream(), False, "malformed"),
    # A 200 whose event stream ends before its first chunk: cut like a dropped connection.
    (TruncatedStream(at="start"), True, "truncated"),
    # Cut after the finish reason, before the usage chunk and [DONE]: the stream's end is
    # [DONE], so it is not whole (its usage is lost, and nothing says more was not to come).
    (TruncatedStream(Reply("It is sunny"), at="finish"), True, "truncated"),
    (MalformedBody(), False, "malformed"),
    (MalformedBody(), True, "malformed"),
    (MalformedChunk(Reply("It is sunny and warm")), True, "malformed"),
    (MalformedChunk(Reply("It is sunny and warm")), False, "malformed"),
]
BROKEN_IDS = [f"{type(s).__name__}-{'stream' if st else 'json'}" for s, st, _ in BROKEN]


@pytest.mark.parametrize(("step", "stream", "reason"), BROKEN, ids=BROKEN_IDS)
def test_a_broken_answer_is_retried_and_never_accepted_in_part(
    harness: Harness, step: Step, stream: bool, reason: str
) -> None:
    harness.server.add(step, Reply("Whole answer."))

    response = harness.complete(stream=stream)

    assert response.content == "Whole answer."
    assert response.tool_calls == ()
    assert len(harness.server.requests) == 2
    (notice,) = harness.notices
    assert (notice.attempt, notice.error_type, notice.wait) == (1, "ModelResponseError", 0.5)
    assert harness.waits == [0.5]


@pytest.mark.parametrize(("step", "stream", "reason"), BROKEN, ids=BROKEN_IDS)
def test_an_answer_broken_every_time_fails_after_the_bounded_attempts(
    harness: Harness, step: Step, stream: bool, reason: str
) -> None:
    harness.server.add(*[step] * 4)

    with pytest.raises(ModelResponseError) as caught:
        harness.complete(stream=stream)

    assert (caught.value.reason, caught.value.attempts) == (reason, 4)
    assert "on each of 4 attempt(s)" in str(caught.value)
    assert harness.waits == [0.5, 1.0, 2.0]
    assert len(harness.server.requests) == 4


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_connection_cut_mid_body_is_retried(harness: Harness, stream: bool) -> None:
    harness.server.add(CutConnection(Reply("It was cut off in the mid")), Reply("Whole."))

    response = harness.complete(stream=stream)

    assert response.content == "Whole."
    (notice,) = harness.notices
    assert notice.error_type == "APIConnectionError"


@pytest.mark.parametrize(
    "headers",
    [{"Retry-After": "120"}, {"Retry-After": "Fri, 01 Jan 2100 00:00:00 GMT"}],
    ids=["seconds", "date"],
)
def test_a_retry_after_longer_than_the_cap_fails_at_once_carrying_the_wait(
    harness: Harness, headers: dict[str, str]
) -> None:
    harness.server.add(ErrorResponse(429, headers=headers), Reply("never sent"))

    with pytest.raises(ModelCallError) as caught:
        harness.complete()

    error = caught.value
    assert error.retryable
    assert error.retry_after is not None
    assert error.retry_after >= 120
    assert (error.status_code, error.attempts) == (429, 1)
    assert "longer than max_retry_after=30s" in str(error)
    assert "not retried early" in str(error)
    assert (harness.waits, harness.notices) == ([], [])
    assert len(harness.server.requests) == 1


def test_a_retry_after_that_the_deadline_cannot_wait_fails_at_once(harness: Harness) -> None:
    harness.server.add(ErrorResponse(503, retry_after="20"), Reply("never sent"))

    with pytest.raises(ModelCallError) as caught:
        harness.complete(deadline=10.0)

    assert (caught.value.retry_after, caught.value.retryable) == (20.0, True)
    assert "of its 10s deadline" in str(caught.value)
    assert harness.waits == []


def test_a_retry_after_within_cap_and_deadline_is_waited_out_never_cut_short(
    harness: Harness,
) -> None:
    harness.server.add(ErrorResponse(429, retry_after="25"), Reply("ok"))

    assert harness.complete(deadline=60.0).content == "ok"
    assert harness.waits == [25.0]


def test_the_deadline_bounds_the_attempts_and_waits_together(harness: Harness) -> None:
    harness.server.add(*[ErrorResponse(503)] * 4)

    with pytest.raises(ModelCallError) as caught:
        harness.complete(deadline=2.0)

    error = caught.value
    assert (error.reason, error.attempts, error.retryable) == ("deadline", 3, True)
    assert "its deadline of 2s" in str(error)
    assert harness.waits == [0.5, 1.0]  # the next 2 s wait would pass the deadline
    assert len(harness.server.requests) == 3


def test_a_slow_attempt_gets_only_what_is_left_of_the_deadline(harness: Harness) -> None:
    harness.server.add(Reply("far too late", delay=5.0))

    with pytest.raises(ModelCallError) as caught:
        harness.complete(deadline=0.05, timeout=60.0)

    assert (caught.value.reason, caught.value.attempts) == ("deadline", 1)
    assert "deadline of 0.05s" in str(caught.value)


def test_a_call_begun_after_its_deadline_sends_nothing(harness: Harness) -> None:
    model = harness.model(deadline=1.0)
    harness.server.add(ErrorResponse(503), Reply("never sent"))

    async def late_sleep(seconds: float) -> None:
        harness.now += 5.0  # the wait overran: the deadline passed during it

    model._sleep = late_sleep
    with pytest.raises(ModelCallError) as caught:
        asyncio.run(model.complete(QUESTION, ()))

    assert (caught.value.reason, caught.value.attempts) == ("deadline", 1)
    assert len(harness.server.requests) == 1


def test_the_deadline_has_a_default_and_may_be_turned_off(harness: Harness) -> None:
    assert OpenAIModel("m", api_key="k").deadline == DEFAULT_DEADLINE == 120.0
    harness.server.add(ErrorResponse(503), Reply("ok"))
    assert harness.complete(deadline=None).content == "ok"


def test_the_api_key_echoed_by_the_server_is_masked(harness: Harness) -> None:
    secret = "sk-live-1234567890abcdef"
    echo = f"Incorrect API key provided: {secret}"
    harness.server.add(ErrorResponse(503, message=echo), ErrorResponse(401, message=echo))
    model = harness.model(api_key=secret)

    with pytest.raises(ModelCallError) as caught:
        asyncio.run(model.complete(QUESTION, (), on_retry=harness.notices.append))

    assert secret not in str(caught.value)
    assert "Incorrect API key provided: ***" in str(caught.value)
    (notice,) = harness.notices
    assert secret not in notice.message
    assert secret not in repr(model)


def test_url_credentials_are_masked_in_repr_and_errors(harness: Harness) -> None:
    url = harness.server.url.replace("http://", "http://ada:hunter2@") + "?api_key=topsecret"
    model = OpenAIModel(
        "gpt-test", base_url=url, api_key=API_KEY, sleep=harness.sleep, clock=harness.clock
    )
    harness.server.add(*[Disconnect()] * 4)

    with pytest.raises(ModelCallError) as caught:
        asyncio.run(model.complete(QUESTION, ()))

    for text in (repr(model), str(caught.value)):
        assert "hunter2" not in text
        assert "topsecret" not in text
        assert "***@127.0.0.1" in text


def test_a_failed_run_records_no_credentials_in_its_events_or_store(
    harness: Harness, tmp_path: object
) -> None:
    secret = "sk-live-abcdefabcdef"
    url = harness.server.url.replace("http://", "http://ada:hunter2@")
    harness.server.add(ErrorResponse(401, message=f"bad key {secret} for {url}"))
    model = OpenAIModel("gpt-test", base_url=url, api_key=secret, clock=harness.clock)
    path = tmp_path / "runs.db"  # type: ignore[operator]
    events: list[Event] = []
    with SQLiteStore(path) as store:
        agent = Agent(model, [], run_id="r", store=store)
        agent.add_listener(lambda item: events.append(item) if isinstance(item, Event) else None)

        async def run() -> str:
            await agent.astart()
            return str((await agent.asubmit("hi")).state)

        assert asyncio.run(run()) == "failed"  # asyncio.run joins the client's threads
    (fail,) = [event for event in events if event.event == "fail"]
    assert "***" in str(fail.data["message"])
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())  # type: ignore[attr-defined]
    for leaked in (secret, "hunter2"):
        assert leaked not in str(fail.data)
        assert leaked.encode() not in stored


def test_model_failed_and_fail_events_mask_credentials_from_any_model() -> None:
    from agentfsm.fsm import Emitter

    log: list[Event] = []
    emitter = Emitter("r", listeners=[log.append], clock=lambda: 0.0)
    message = "GET https://u:pw@host/x?token=abc failed; Authorization: Bearer xyz"
    emitter.emit("run", "fail", "busy", "failed", {"message": message})  # type: ignore[arg-type]

    assert log[0].data["message"] == (
        "GET https://***@host/x?token=*** failed; Authorization: Bearer ***"
    )


def test_a_policy_of_one_attempt_does_not_retry_a_broken_answer(harness: Harness) -> None:
    harness.server.add(MalformedBody(), Reply("never sent"))

    with pytest.raises(ModelResponseError) as caught:
        harness.complete(retry=RetryPolicy(max_attempts=1))

    assert (caught.value.reason, caught.value.attempts) == ("malformed", 1)
    assert len(harness.server.requests) == 1
