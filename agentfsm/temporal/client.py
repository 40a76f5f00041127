"""The client side: start runs on Temporal and drive them with the Agent's methods.

`TemporalRuns` starts a run (one workflow, id = run id); `TemporalRun` is its handle, with
the Agent's lifecycle methods as awaitables that return the same `TurnOutcome` and raise
the same errors (a refused event raises the `IllegalTransitionError` the in-process Agent
would, with the same message).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any

from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from agentfsm import _checks
from agentfsm.agent import checks
from agentfsm.agent.checks import SHUT_DOWN_IS_FINAL
from agentfsm.agent.vocabulary import DecisionLike, TurnOutcome, to_decision
from agentfsm.errors import IllegalTransitionError
from agentfsm.states.json import JSONValue
from agentfsm.states.messages import ToolCall
from agentfsm.stores.snapshot import Snapshot
from agentfsm.temporal.payloads import DEFAULT_AGENT, RUN_WORKFLOW, RunSettings, RunStart
from agentfsm.temporal.wire import from_failure, outcome_of

_OPEN_FOR = frozenset({"submit", "resolve_action", "provide_input", "resume"})
"""The calls a shut-down run refuses with the Agent's "a shut-down run is final" detail."""


def _shut_down(run_id: str, name: str) -> IllegalTransitionError:
    """What the Agent raises for ``name`` on a shut-down run (its workflow has completed)."""
    return IllegalTransitionError(
        run_id=run_id,
        machine="run",
        state="shutdown",
        event=name,
        allowed=(),
        detail=SHUT_DOWN_IS_FINAL if name in _OPEN_FOR else "",
    )


class TemporalRun:
    """One run on Temporal, driven like an `Agent`.

    Args:
        handle: The run's workflow handle.
    """

    def __init__(self, handle: WorkflowHandle[Any, Any]) -> None:
        self.handle = handle
        """The workflow handle (for what Temporal offers beyond these methods)."""

    @property
    def run_id(self) -> str:
        """The run's id (the workflow id)."""
        return self.handle.id

    async def _update(self, name: str, *args: JSONValue) -> TurnOutcome:
        return await self._sent(
            name, lambda: self.handle.execute_update(name, *args, result_type=dict)
        )

    async def _sent(self, name: str, send: Callable[[], Awaitable[Any]]) -> TurnOutcome:
        """``send`` the update ``name``; its outcome, or the error the Agent would raise."""
        try:
            data = await send()
        except WorkflowUpdateFailedError as error:
            cause = error.cause
            if isinstance(cause, ApplicationError):
                raise from_failure(cause) from None
            raise
        except RPCError:
            if not await self._closed():
                raise
            raise _shut_down(self.run_id, name) from None
        return outcome_of(data)

    async def _closed(self) -> bool:
        description = await self.handle.describe()
        return description.status == WorkflowExecutionStatus.COMPLETED

    async def submit(self, text: str) -> TurnOutcome:
        """Give the run a user input; returns the turn's outcome (see `Agent.asubmit`)."""
        return await self._update("submit", text)

    async def resolve_action(self, decisions: Mapping[str, DecisionLike]) -> TurnOutcome:
        """Decide every pending call (see `Agent.aresolve_action`)."""
        if not isinstance(decisions, Mapping):
            raise TypeError(
                f"decisions must be a mapping of call id to decision, not "
                f"{type(decisions).__name__}"
            )
        payload: dict[str, JSONValue] = {
            str(call_id): to_decision(str(call_id), value).model_dump(mode="json")
            for call_id, value in decisions.items()
        }
        return await self._update("resolve_action", payload)

    async def provide_input(self, text: str) -> TurnOutcome:
        """Answer the pending question (see `Agent.aprovide_input`)."""
        return await self._update("provide_input", text)

    async def pause(self) -> TurnOutcome:
        """Pause the run (see `Agent.apause`)."""
        return await self._update("pause")

    async def resume(self) -> TurnOutcome:
        """Resume the paused run (see `Agent.aresume`)."""
        return await self._update("resume")

    async def cancel(self) -> TurnOutcome:
        """Cancel the turn (see `Agent.acancel`)."""
        return await self._update("cancel")

    async def shutdown(self) -> TurnOutcome:
        """Close the run for good; its workflow completes (see `Agent.ashutdown`)."""
        return await self._update("shutdown")

    async def state(self) -> str:
        """RunLifecycle's state (a query)."""
        state: str = await self.handle.query("state", result_type=str)
        return state

    async def outcome(self) -> TurnOutcome:
        """Where the run is (a query)."""
        return outcome_of(await self.handle.query("outcome", result_type=dict))

    async def pending(self) -> tuple[ToolCall, ...]:
        """The calls awaiting a decision or an answer (a query)."""
        return (await self.outcome()).pending

    async def question(self) -> str | None:
        """The question awaiting an answer (a query)."""
        return (await self.outcome()).question

    async def snapshot(self) -> Snapshot:
        """The run's snapshot (a query)."""
        return Snapshot.model_validate(await self.handle.query("snapshot", result_type=dict))

    async def result(self) -> TurnOutcome:
        """Wait for the run's workflow to complete (after `shutdown`); its last outcome."""
        return outcome_of(await self.handle.result())


class TemporalRuns:
    """Starts runs of an agent on a task queue, and finds them again by id.

    Args:
        client: A connected Temporal client.
        task_queue: The task queue the workers poll.
        agent: The agent's name on the workers.
        settings: The runs' timeouts (`RunSettings`).
        task_timeout: Seconds a workflow task may take before another worker takes it
            over (Temporal's default is 10; part of how fast a lost worker's run resumes).

    Raises:
        TypeError: An argument of the wrong kind (a client that is not a Temporal
            `Client`, a task queue that is not a str, settings that are not `RunSettings`).
        ValueError: An empty task queue or agent name, a ``task_timeout`` not > 0.
    """

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str,
        agent: str = DEFAULT_AGENT,
        settings: RunSettings | None = None,
        task_timeout: float | None = None,
    ) -> None:
        if not isinstance(client, Client):
            _checks.refuse_type("client", client, "a connected temporalio Client")
        _checks.text("task_queue", task_queue)
        _checks.text("agent", agent)
        if settings is not None and not isinstance(settings, RunSettings):
            _checks.refuse_type("settings", settings, "a RunSettings or None")
        _checks.seconds("task_timeout", task_timeout, optional=True)
        self.client = client
        self.task_timeout = None if task_timeout is None else timedelta(seconds=task_timeout)
        self.task_queue = task_queue
        self.agent = agent
        self.settings = settings or RunSettings()

    async def start(self, run_id: str | None = None, *, user_id: str | None = None) -> TemporalRun:
        """Start a run (its workflow, id = run id) in ``ready``; returns its handle."""
        run_id = run_id or uuid.uuid4().hex
        start = RunStart(self.agent, run_id, user_id, self.settings)
        await self.client.start_workflow(
            RUN_WORKFLOW,
            start,
            id=run_id,
            task_queue=self.task_queue,
            task_timeout=self.task_timeout,
        )
        # A handle on the workflow id alone follows the run across continue-as-new.
        return self.get(run_id)

    async def start_with(
        self, text: str, run_id: str | None = None, *, user_id: str | None = None
    ) -> tuple[TemporalRun, TurnOutcome]:
        """Start a run and give it its first input, in one round-trip (update-with-start).

        The same as `start` followed by `TemporalRun.submit`, but the workflow's start and
        the ``submit`` update travel in one request and are taken in the run's first
        workflow task: one client call instead of two, and never a workflow task of its own
        for the first input. A first input the run refuses (an empty text) raises what
        `submit` would (the same `IllegalTransitionError`) and leaves nothing of it in the
        history; the run is started all the same, in ``ready``, as `start` would leave it.

        Args:
            text: The user's first input.
            run_id: The run's id (also the workflow id); a new one if None.
            user_id: The application's user the run acts for.

        Returns:
            The run's handle and the first turn's outcome.

        Raises:
            TypeError: ``text`` is not a str (nothing is started).
            temporalio.exceptions.WorkflowAlreadyStartedError: A run with this id exists.
        """
        checks.user_text("text", text)
        run_id = run_id or uuid.uuid4().hex
        operation: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
            RUN_WORKFLOW,
            RunStart(self.agent, run_id, user_id, self.settings),
            id=run_id,
            task_queue=self.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            task_timeout=self.task_timeout,
        )
        run = self.get(run_id)
        outcome = await run._sent(
            "submit",
            lambda: self.client.execute_update_with_start_workflow(
                "submit", text, start_workflow_operation=operation, result_type=dict
            ),
        )
        return run, outcome

    def get(self, run_id: str) -> TemporalRun:
        """The handle of a run started earlier."""
        return TemporalRun(self.client.get_workflow_handle(run_id))
