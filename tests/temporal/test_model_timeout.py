"""A model call past the run's ``model_timeout``: final without a policy, retried under one.

The model activity enforces ``model_timeout`` itself, so a timed-out attempt is the model's
error (a `ModelCallError`, reason ``timeout``): it ends the turn failed after one attempt
when the model has no `RetryPolicy`, and after the policy's attempts when it has one, with
model calls as activities or as local activities. Only a worker stuck past the activity's
start-to-close (``model_timeout`` plus ``heartbeat_timeout``) makes a call without a policy
again, at most ``lost_model_attempts`` times in all. The tests count attempts, not time.
"""

from __future__ import annotations

import asyncio

import pytest
from temporalio.client import Client

from agentfsm.agent.vocabulary import TurnOutcome
from agentfsm.errors import ModelCallError
from agentfsm.stores.memory import MemoryStore
from agentfsm.temporal import RunSettings, TemporalRuns
from agentfsm.temporal.template import AgentFactory
from agentfsm.tools.results import ErrorDetails
from tests.temporal import agents
from tests.temporal.support import on_temporal

MODES = pytest.mark.parametrize("local", [False, True], ids=["activity", "local_model_calls"])


def _timed_out(
    target: str,
    factory: AgentFactory,
    settings: RunSettings,
    run_id: str,
    *,
    linger: float = 0.0,
) -> tuple[TurnOutcome, TurnOutcome]:
    """Submit once to a fresh run: the turn's outcome, and the run's outcome after it.

    With ``linger``, the worker runs on until that many seconds after the submit (see
    `test_a_timed_out_model_call_is_retried_under_the_models_policy`).
    """

    async def body(runs: TemporalRuns, client: Client) -> tuple[TurnOutcome, TurnOutcome]:
        run = await runs.start(run_id)
        clock = asyncio.get_running_loop().time
        until = clock() + linger
        outcome = await asyncio.wait_for(run.submit("hello"), 60)  # (never retried forever)
        after = await run.outcome()
        await asyncio.sleep(max(0.0, until - clock()))
        return outcome, after

    return on_temporal(target, MemoryStore(), body, agents={"default": factory}, settings=settings)


def _failed(outcome: TurnOutcome, after: TurnOutcome) -> ErrorDetails:
    """The turn's error: it failed, as the run says too."""
    assert (outcome.state, outcome.reason) == ("failed", "error")
    assert after == outcome
    assert outcome.error is not None
    assert outcome.error.type == "ModelCallError"
    assert "timed out" in outcome.error.message
    return outcome.error


@MODES
def test_a_timed_out_model_call_without_a_policy_is_tried_once(
    temporal_target: str, local: bool
) -> None:
    agents.SLOW.calls.clear()
    settings = RunSettings(model_timeout=0.3, local_model_calls=local)
    error = _failed(*_timed_out(temporal_target, agents.make_slow_agent, settings, f"s-{local}"))
    assert (
        error.message
        == "model 'slow' call timed out after 0.3s (the run's model_timeout), attempt 1"
    )
    assert error.retryable  # (a timeout is transient, as in one process: try again later)
    assert len(agents.SLOW.calls) == 1


@MODES
def test_a_timed_out_model_call_is_retried_under_the_models_policy(
    temporal_target: str, local: bool
) -> None:
    agents.SLOW_RETRIED.calls.clear()
    # A local activity retried by the worker (temporalio's sdk-core) keeps its first
    # attempt's start-to-close timer (model_timeout + heartbeat_timeout) armed: it must
    # fire after the last attempt (else it cuts that one short), and before the worker
    # shuts down, or its tokio task panics ("receive half not dropped") in whatever test
    # runs then. So a window the three 0.3 s attempts fit in with room to spare (not the
    # default 10.3 s), and the worker outlives it.
    settings = RunSettings(model_timeout=0.3, heartbeat_timeout=3.0, local_model_calls=local)
    window = settings.model_timeout + settings.heartbeat_timeout + 1.0 if local else 0.0
    error = _failed(
        *_timed_out(
            temporal_target,
            agents.make_slow_retried_agent,
            settings,
            f"r-{local}",
            linger=window,
        )
    )
    assert error.message.endswith("model_timeout), attempt 3")  # the policy's max_attempts
    assert len(agents.SLOW_RETRIED.calls) == 3


@MODES
def test_a_stuck_model_call_is_made_at_most_lost_model_attempts_times(
    temporal_target: str, local: bool
) -> None:
    agents.SLOW_STUCK.calls.clear()
    settings = RunSettings(
        model_timeout=0.2, heartbeat_timeout=0.5, lost_model_attempts=2, local_model_calls=local
    )
    _failed(*_timed_out(temporal_target, agents.make_slow_stuck_agent, settings, f"k-{local}"))
    assert len(agents.SLOW_STUCK.calls) == 2


def test_run_settings_refuse_bad_timeouts_and_attempts() -> None:
    with pytest.raises(ValueError, match="lost_model_attempts must be a whole number >= 1"):
        RunSettings(lost_model_attempts=0)
    with pytest.raises(TypeError, match="lost_model_attempts"):
        RunSettings(lost_model_attempts=2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="model_timeout must be a number of seconds > 0"):
        RunSettings(model_timeout=0)
    assert RunSettings().lost_model_attempts == 3


def test_only_the_deadline_is_reported_as_the_model_timeout() -> None:
    from agentfsm.temporal.activities import _within

    async def own_timeout() -> str:
        raise asyncio.TimeoutError("the model's own")

    async def quick() -> str:
        return "answer"

    async def slow() -> str:
        await asyncio.sleep(30)
        return "late"

    with pytest.raises(asyncio.TimeoutError, match="the model's own"):
        asyncio.run(_within(own_timeout(), 5.0, "m", 1))  # before the deadline: its own error
    assert asyncio.run(_within(quick(), None, "m", 1)) == "answer"  # a request without one
    with pytest.raises(ModelCallError, match=r"timed out after 0\.01s") as raised:
        asyncio.run(_within(slow(), 0.01, "m", 2))
    assert (raised.value.reason, raised.value.attempts) == ("timeout", 2)
