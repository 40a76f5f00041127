"""`RunWorkflow`: one run, one workflow, the same Agent and machines inside.

The workflow id is the run id. It lives across turns: each lifecycle event is a Temporal
update whose validator asks the run's own machines (`agentfsm.temporal.validate`), so an
event the machine refuses is rejected with the in-process error and leaves nothing in the
history. Waits for approval or input expire on durable timers. Before the history grows
large the workflow continues as new, carrying the run's snapshot.

What runs here must be deterministic: the Agent's configuration, its tool declarations
(argument validation, permissions), its hooks, the guards and effects. The model call, tool
bodies and store writes are activities (`agentfsm.temporal.activities`).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from temporalio import workflow

from agentfsm.agent.core import Agent
from agentfsm.agent.vocabulary import TurnOutcome
from agentfsm.states.names import RunState
from agentfsm.stores.snapshot import Snapshot
from agentfsm.temporal.parts import ActivityModel, WorkflowStore, activity_tool, model_retry_policy
from agentfsm.temporal.payloads import RUN_WORKFLOW, Outcome, RunStart
from agentfsm.temporal.template import TEMPLATES, AgentTemplate
from agentfsm.temporal.validate import check
from agentfsm.temporal.wire import outcome_json, to_failure
from agentfsm.tools.registry import ToolRegistry

WAITS = (RunState.REQUIRES_ACTION, RunState.INPUT_REQUIRED)
"""The states whose deadline a durable timer watches."""
FIRST_TASK_STARTED = 3
"""The history length when a run's first workflow task starts (started, scheduled, started)."""


def build_agent(template: AgentTemplate, start: RunStart, store: WorkflowStore) -> Agent:
    """The run's Agent: the template's parts, with activities for model, tool bodies, saves."""
    settings = start.settings
    model = ActivityModel(
        store,
        template.model.name,
        template.name,
        start.run_id,
        settings,
        model_retry_policy(template.model, settings),
    )
    registry = ToolRegistry(
        activity_tool(declared, template.name, settings, template.max_attempts)
        for declared in template.registry
    )
    agent = Agent(
        model,
        registry,
        system_prompt=template.system_prompt,
        max_iterations=template.max_iterations,
        max_turns=template.max_turns,
        input_policy=template.input_policy,
        hooks=template.hooks,
        run_id=start.run_id,
        user_id=start.user_id,
        enabled_tools=template.enabled_tools,
        ask_user=False,
        action_timeout=template.action_timeout,
        input_timeout=template.input_timeout,
        clock=workflow.time,
        timer=workflow.time,
        store=store,
        context_window=template.context_window,
    )
    model.enabled = None if agent.enabled_tools is None else sorted(agent.enabled_tools)
    if agent.state == RunState.CREATED:  # (a run carried over is restored where it was)
        agent._run.send(
            "start",
            max_iterations=template.max_iterations,
            max_turns=template.max_turns,
            input_policy=str(template.input_policy),
            system_prompt=template.system_prompt,
        )
    agent._restored = False
    return agent


@workflow.defn(name=RUN_WORKFLOW, sandboxed=False)
class RunWorkflow:
    """A run as a workflow: started with a `RunStart`, driven by updates, queried for state."""

    @workflow.init
    def __init__(self, start: RunStart) -> None:
        template = TEMPLATES.get(start.agent)
        if template is None:  # a worker without this agent: another worker may have it
            raise RuntimeError(f"this worker has no agent {start.agent!r}")
        carried = None if start.snapshot is None else Snapshot.model_validate(start.snapshot)
        self._start = start
        self._store = WorkflowStore(start.run_id, carried, start.settings)
        self._agent = build_agent(template, start, self._store)
        self._changes = self._seen = 0
        self._began = False  # (set by `run`'s first step)

    # -- the run ------------------------------------------------------------------------

    @workflow.run
    async def run(self, start: RunStart) -> Outcome:
        """Keep the run until it is shut down (continuing as new when the history is long)."""
        self._began = True
        await self._store.flush()
        agent = self._agent
        while agent.state != RunState.SHUTDOWN:
            self._seen = self._changes
            try:
                await workflow.wait_condition(self._changed, timeout=self._until_deadline())
            except asyncio.TimeoutError:
                await self._expire()
                continue
            if self._continue_due():
                await self._continue_as_new()
        await workflow.wait_condition(workflow.all_handlers_finished)
        return outcome_json(agent.outcome())

    def _changed(self) -> bool:
        return self._changes != self._seen

    def _until_deadline(self) -> timedelta | None:
        data = self._agent._data
        if data.state not in WAITS or data.deadline is None:
            return None
        return timedelta(seconds=max(0.001, data.deadline - workflow.time()))

    async def _expire(self) -> None:
        agent = self._agent
        if agent._depth or not agent._run.can_send("expire", now=workflow.time()):
            return
        try:
            await agent.aexpire()
        except Exception:  # (the run is at rest whatever a hook raised: I12)
            workflow.logger.exception("expiring the wait of run %s", agent.run_id)
        await self._store.flush()
        self._changes += 1

    def _continue_due(self) -> bool:
        info = workflow.info()
        return (
            info.is_continue_as_new_suggested()
            or info.get_current_history_length() >= self._start.settings.history_events
        )

    async def _continue_as_new(self) -> None:
        await workflow.wait_condition(
            lambda: workflow.all_handlers_finished() and not self._agent._depth
        )
        await self._store.flush()
        carried = self._store.load(self._agent.run_id)
        snapshot = None if carried is None else carried.model_dump(mode="json")
        workflow.continue_as_new(dataclasses.replace(self._start, snapshot=snapshot))

    # -- updates --------------------------------------------------------------------------

    def _validate(self, name: str, argument: object = None) -> None:
        try:
            check(self._agent, name, argument)
        except Exception as error:
            raise to_failure(error) from None

    async def _call(self, method: Callable[..., Awaitable[TurnOutcome]], *args: Any) -> Outcome:
        await self._after_run_began()
        try:
            outcome = await method(*args)
        except Exception as error:  # the Agent settled the run first (I12): fail the update
            await self._store.flush()
            raise to_failure(error) from None
        finally:
            self._changes += 1
        await self._store.flush()  # the client reads the store once this returns
        return outcome_json(outcome)

    async def _after_run_began(self) -> None:
        """Let `run` take its first step first if this update came after the first task.

        The start's save, queued by ``__init__``, is carried by whoever sends to the store
        first: `run`'s flush (a local activity), or an update's model call or flush. An update
        in the run's first workflow task (given with the start by `TemporalRuns.start_with`,
        or sent before a worker took the task) has its handler run before `run` by the SDK:
        the handler carries the save, live and in every replay. A later update reaches a run
        whose `run` has already scheduled the write, but a replay may deliver it in one
        activation with the start all the same: if a query was answered while that write was
        in flight, the first task completed with no command, and a replay takes it for a
        workflow task heartbeat and merges it with the next task. The handler then ran
        first and took the save, `run` scheduled nothing, and every replay failed ("Missing
        associated machine for LocalActivity(1)"): the run was stuck for good. So a handler
        that runs before `run` in an activation past the first task waits for `run`'s first
        step, as it happened live.
        """
        if self._began or workflow.info().get_current_history_length() <= FIRST_TASK_STARTED:
            return
        await workflow.wait_condition(lambda: self._began)

    @workflow.update(name="submit")
    async def submit(self, text: str) -> Outcome:
        """Give the run a user input; returns the turn's outcome."""
        return await self._call(self._agent.asubmit, text)

    @submit.validator
    def _check_submit(self, text: str) -> None:
        self._validate("submit", text)

    @workflow.update(name="resolve_action")
    async def resolve_action(self, decisions: dict[str, Any]) -> Outcome:
        """Decide the pending calls (``{call_id: "approve" | "deny" | decision JSON}``)."""
        return await self._call(self._agent.aresolve_action, _decisions(decisions))

    @resolve_action.validator
    def _check_resolve_action(self, decisions: dict[str, Any]) -> None:
        try:
            decided: object = _decisions(decisions)
        except (AttributeError, ValueError) as error:  # not a mapping, or a bad decision
            raise to_failure(
                TypeError(f"decisions must map call ids to decisions ({error})")
            ) from None
        self._validate("resolve_action", decided)

    @workflow.update(name="provide_input")
    async def provide_input(self, text: str) -> Outcome:
        """Answer the pending question."""
        return await self._call(self._agent.aprovide_input, text)

    @provide_input.validator
    def _check_provide_input(self, text: str) -> None:
        self._validate("provide_input", text)

    @workflow.update(name="pause")
    async def pause(self) -> Outcome:
        """Pause the run (at the next step boundary while busy)."""
        return await self._call(self._agent.apause)

    @pause.validator
    def _check_pause(self) -> None:
        self._validate("pause")

    @workflow.update(name="resume")
    async def resume(self) -> Outcome:
        """Resume a paused run."""
        return await self._call(self._agent.aresume)

    @resume.validator
    def _check_resume(self) -> None:
        self._validate("resume")

    @workflow.update(name="cancel")
    async def cancel(self) -> Outcome:
        """Cancel the turn (at the next step boundary while busy)."""
        return await self._call(self._agent.acancel)

    @cancel.validator
    def _check_cancel(self) -> None:
        self._validate("cancel")

    @workflow.update(name="shutdown")
    async def shutdown(self) -> Outcome:
        """Close the run for good; the workflow then completes."""
        return await self._call(self._agent.ashutdown)

    @shutdown.validator
    def _check_shutdown(self) -> None:
        self._validate("shutdown")

    # -- queries --------------------------------------------------------------------------

    @workflow.query(name="state")
    def state(self) -> str:
        """RunLifecycle's state."""
        return self._agent.state

    @workflow.query(name="outcome")
    def outcome(self) -> Outcome:
        """Where the run is: state, reason, reply, pending calls, question, error."""
        return outcome_json(self._agent.outcome())

    @workflow.query(name="snapshot")
    def snapshot(self) -> dict[str, Any]:
        """The run's snapshot, as JSON."""
        return self._agent.snapshot().model_dump(mode="json")


def _decisions(decisions: dict[str, Any]) -> dict[str, Any]:
    """Decisions from JSON: ``"approve"``/``"deny"`` as they are, objects as `Decision`."""
    from agentfsm.tools.policy import Decision

    return {
        call_id: Decision.model_validate(value) if isinstance(value, dict) else value
        for call_id, value in decisions.items()
    }
