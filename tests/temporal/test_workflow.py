"""A run as a workflow: updates, validators, queries, timers, failures, start-up refusals.

Each test runs a worker with the workflow cache off (``max_cached_workflows=0``), so every
workflow task, and every update validator, runs on a workflow rebuilt from its history, as
on a worker that has never seen the run.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from agentfsm import Agent
from agentfsm.errors import HookFailedError, IllegalTransitionError, ReentrantCallError
from agentfsm.llm.scripted import ScriptedModel
from agentfsm.stores.memory import MemoryStore
from agentfsm.temporal import RunSettings, TemporalRuns, create_worker
from agentfsm.temporal.template import load_factory, template_of
from agentfsm.temporal.wire import outcome_json, outcome_of, rebuild
from tests.temporal import agents
from tests.temporal.support import connect, on_temporal


async def _history_length(client: Client, run_id: str) -> int:
    history = await client.get_workflow_handle(run_id).fetch_history()
    return len(history.events)


def test_updates_queries_and_refusals_leave_no_history(temporal_target: str) -> None:
    store = MemoryStore()

    async def body(runs: TemporalRuns, client: Client) -> None:
        run = await runs.start("queries")
        assert await run.state() == "ready"
        outcome = await run.submit("pay 3")
        assert outcome.state == "requires_action"
        assert [call.name for call in await run.pending()] == ["pay"]
        assert await run.question() is None
        assert (await run.snapshot()).state == "requires_action"
        before = await _history_length(client, run.run_id)
        with pytest.raises(IllegalTransitionError) as refused:
            await run.provide_input("not asked")
        assert refused.value.state == "requires_action"
        assert refused.value.event == "provide_input"
        with pytest.raises(IllegalTransitionError):  # (a guard: GuardFailedError)
            await run.resolve_action({"not-pending": "approve"})
        assert await _history_length(client, run.run_id) == before
        done = await run.resolve_action({outcome.pending[0].id: "approve"})
        assert done.state == "completed"
        assert done.reply is not None
        assert '"paid": 3' in done.reply
        asked = await run.submit("ask")
        assert (await run.question()) == asked.question == "Which city?"
        await run.shutdown()
        assert (await run.result()).state == "shutdown"

    on_temporal(temporal_target, store, body)
    stored = store.load("queries")
    assert stored is not None
    assert stored.state == "shutdown"


def test_a_hook_failure_fails_the_turn_and_the_run_goes_on(temporal_target: str) -> None:
    async def body(runs: TemporalRuns, client: Client) -> None:
        run = await runs.start("hooked")
        with pytest.raises(HookFailedError, match="the hook refused"):
            await run.submit("explode")
        failed = await run.outcome()
        assert (failed.state, failed.reason) == ("failed", "error")
        assert failed.error is not None
        assert failed.error.type == "HookFailedError"
        again = await run.submit("hello")
        assert again.reply == "you said: hello"

    on_temporal(temporal_target, MemoryStore(), body, agents={"default": agents.make_hooked_agent})


def test_a_wait_expires_on_a_durable_timer(temporal_target: str) -> None:
    async def body(runs: TemporalRuns, client: Client) -> str | None:
        run = await runs.start("timed")
        waiting = await run.submit("pay 1")
        assert waiting.state == "requires_action"
        while (await run.state()) == "requires_action":  # (the body's own limit: a hang)
            await asyncio.sleep(0.2)
        return (await run.outcome()).reason

    reason = on_temporal(
        temporal_target, MemoryStore(), body, agents={"default": agents.make_timed_agent}
    )
    assert reason == "expired"


@pytest.mark.parametrize("local", [False, True], ids=["activity", "local_model_calls"])
def test_model_calls_retry_under_the_models_policy_in_temporal(
    temporal_target: str, local: bool
) -> None:
    agents.FLAKY.attempts.clear()

    async def body(runs: TemporalRuns, client: Client) -> str | None:
        run = await runs.start("flaky-local" if local else "flaky")
        return (await run.submit("hi")).reply

    reply = on_temporal(
        temporal_target,
        MemoryStore(),
        body,
        agents={"default": agents.make_flaky_agent},
        settings=RunSettings(local_model_calls=local),
    )
    assert reply == "attempt 2"  # one failed attempt, retried once by Temporal, not more
    assert agents.FLAKY.attempts == {1: 2}


def test_what_cannot_run_in_a_workflow_is_refused_at_start_up() -> None:
    with pytest.raises(ValueError, match="listener"):
        template_of("a", agents.make_agent(listeners=[print]))
    with pytest.raises(ValueError, match="store"):
        template_of("a", agents.make_agent(store=MemoryStore()))
    with pytest.raises(ValueError, match="clock"):
        template_of("a", agents.make_agent(clock=lambda: 0.0))
    started = Agent(ScriptedModel(["hi"]))
    started.start()
    with pytest.raises(ValueError, match="already started"):
        template_of("a", started)
    with pytest.raises(TypeError, match="must return an agentfsm Agent"):
        template_of("a", object())
    with pytest.raises(ValueError, match="module:factory"):
        load_factory("no_colon")
    with pytest.raises(ValueError, match="no callable"):
        load_factory("tests.temporal.agents:nothing_here")
    assert load_factory("tests.temporal.agents:make_agent") is agents.make_agent


def test_create_worker_needs_an_agent(temporal_target: str) -> None:
    async def main() -> None:
        client = await connect(temporal_target)
        with pytest.raises(ValueError, match="agents is empty"):
            create_worker(client, task_queue="q", agents={}, store=MemoryStore())

    asyncio.run(main())


def test_workers_and_runs_refuse_bad_arguments_naming_them(temporal_target: str) -> None:
    """Refused before a worker polls or a run starts: each error names its argument."""

    async def main() -> None:
        client = await connect(temporal_target)
        store = MemoryStore()
        good: dict[str, Any] = {"task_queue": "q", "agents": {"a": agents.make_agent}}
        worker_cases: list[tuple[dict[str, Any], type[Exception], str]] = [
            ({"task_queue": ""}, ValueError, "task_queue must be a non-empty string"),
            ({"task_queue": 5}, TypeError, "task_queue must be a non-empty string"),
            ({"agents": [agents.make_agent]}, TypeError, "agents must be a mapping"),
            ({"agents": {"a": "make_agent"}}, TypeError, "agents['a'] must be a factory"),
            ({"agents": {"": agents.make_agent}}, ValueError, "each name of agents"),
            ({"store": "runs.db"}, TypeError, "store must be a RunStore"),
            ({"heartbeat_every": 0}, ValueError, "heartbeat_every must be a number of seconds"),
        ]
        for change, error, words in worker_cases:
            arguments = {"store": store, **good, **change}
            with pytest.raises(error) as raised:
                create_worker(client, **arguments)
            assert str(raised.value).startswith(words), change
        runs_cases: list[tuple[dict[str, Any], type[Exception], str]] = [
            ({"task_queue": ""}, ValueError, "task_queue must be a non-empty string"),
            ({"agent": 7}, TypeError, "agent must be a non-empty string"),
            ({"settings": {"model_timeout": 5}}, TypeError, "settings must be a RunSettings"),
            ({"task_timeout": -1}, ValueError, "task_timeout must be a number of seconds > 0"),
        ]
        for change, error, words in runs_cases:
            with pytest.raises(error) as raised:
                TemporalRuns(client, **{"task_queue": "q", **change})
            assert str(raised.value).startswith(words), change
        with pytest.raises(TypeError, match=r"^client must be a connected temporalio Client"):
            TemporalRuns(temporal_target, task_queue="q")  # type: ignore[arg-type]

    asyncio.run(main())


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("tool_timeout", 0, ValueError),
        ("heartbeat_timeout", "10s", TypeError),
        ("heartbeat_every", float("inf"), ValueError),
        ("store_timeout", -1.0, ValueError),
        ("history_events", 0, ValueError),
        ("history_events", 1e4, TypeError),
        ("local_model_calls", 1, TypeError),
    ],
)
def test_run_settings_refuse_a_bad_field_naming_it(
    field: str, value: object, error: type[Exception]
) -> None:
    with pytest.raises(error, match=f"^{field} must be "):
        RunSettings(**{field: value})  # type: ignore[arg-type]


def test_errors_and_outcomes_cross_the_wire_unchanged() -> None:
    error = IllegalTransitionError(
        run_id="r", machine="run", state="ready", event="resume", allowed=("submit",)
    )
    from agentfsm.temporal.wire import to_failure

    failure = to_failure(error)
    back = rebuild(failure.type, failure.message, failure.details[0])
    assert isinstance(back, IllegalTransitionError)
    assert str(back) == str(error)
    assert back.allowed == ("submit",)
    assert type(rebuild("KeyError", "k")) is KeyError
    custom = rebuild("SomethingElse", "m")
    assert type(custom).__name__ == "SomethingElse"
    assert str(custom) == "m"
    agent = agents.make_agent()
    agent.start()
    outcome = agent.submit("pay 2")
    assert outcome_of(outcome_json(outcome)) == outcome


def test_mid_step_calls_follow_the_contract(temporal_target: str) -> None:
    agents.HELD.clear()
    agents.RELEASE.clear()

    async def body(runs: TemporalRuns, client: Client) -> tuple[str, str | None]:
        run = await runs.start("mid-step")
        turn = asyncio.ensure_future(run.submit("hold 2"))
        try:
            # The step is mid-call until the test releases the tool, however slow the
            # machine: no window for the calls below to miss.
            while not agents.HELD.is_set():
                await asyncio.sleep(0.01)
            assert await run.state() == "busy"
            with pytest.raises(ReentrantCallError):  # only submit, cancel, pause mid-step
                await run.resume()
            requested = await run.cancel()  # a request, taken at the next step boundary
            assert requested.state == "busy"
        finally:
            agents.RELEASE.set()
        outcome = await turn
        return outcome.state, outcome.reason

    state, reason = on_temporal(
        temporal_target, MemoryStore(), body, agents={"default": agents.make_held_agent}
    )
    assert reason == "cancelled"
    assert state != "busy"


def test_the_worker_command_refuses_a_bad_agent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentfsm.cli import main

    store = str(tmp_path / "runs.db")
    code = main(
        ["worker", "--temporal", "127.0.0.1:1", "--task-queue", "q", "--agent", "nope",
         "--store", store]
    )  # fmt: skip
    assert code == 1
    assert "module:factory" in capsys.readouterr().err


def test_a_worker_refused_before_it_starts_closes_the_until_it_never_awaited(
    tmp_path: Path,
) -> None:
    import inspect

    from agentfsm.temporal.worker import run_worker

    async def refused() -> Any:
        stop = asyncio.Event()
        until = stop.wait()  # (as the worker command passes it)
        with pytest.raises(ValueError, match="module:factory"):
            await run_worker("127.0.0.1:1", task_queue="q", agent="nope",
                             store=str(tmp_path / "runs.db"), until=until)  # fmt: skip
        return until

    until = asyncio.run(refused())
    # Closed, not left to warn "coroutine 'Event.wait' was never awaited" in a later test.
    assert inspect.getcoroutinestate(until) == inspect.CORO_CLOSED
