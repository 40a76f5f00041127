"""Operator actions of the live view, each the Agent's own guarded transition.

An action restores the run as a real `Agent` from the store and calls its public method
(``resolve_action``, ``provide_input``, ``pause``, ``resume``, ``cancel``), so it is the
same transition, with the same guards, as a call from the application: one that is not
allowed raises `IllegalTransitionError` and changes nothing. Another process may be driving
the run, so an action is refused when the page showed an older version than the store holds,
and a save that loses the race raises `SnapshotConflictError` (nothing of it is stored).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, cast, get_args

from agentfsm.agent.core import Agent
from agentfsm.agent.vocabulary import TurnOutcome
from agentfsm.errors import (
    ActionError,
    AgentFSMError,
    IllegalTransitionError,
    RunBusyError,
    SnapshotConflictError,
)
from agentfsm.llm.base import ModelResponse
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.messages import Message
from agentfsm.states.names import RunState
from agentfsm.stores.base import RunStore
from agentfsm.stores.snapshot import Snapshot

AgentFactory = Callable[[str, RunStore], Agent]
"""Builds the application's Agent for a stored run: ``factory(run_id, store)`` returns
``Agent(model, tools, run_id=run_id, store=store, ...)``, which restores the run. The view
needs one to approve, deny or answer (the run then calls the model and the tools)."""


class RunHandle(Protocol):
    """A run driven elsewhere, with the Agent's lifecycle methods (`TemporalRun` is one)."""

    async def resolve_action(self, decisions: Mapping[str, str]) -> TurnOutcome:
        """Decide every pending call."""

    async def provide_input(self, text: str) -> TurnOutcome:
        """Answer the pending question."""

    async def pause(self) -> TurnOutcome:
        """Pause the run."""

    async def resume(self) -> TurnOutcome:
        """Resume the run."""

    async def cancel(self) -> TurnOutcome:
        """Cancel the turn."""


class RunDriver(Protocol):
    """Finds the handle of a run that its own workers drive (`TemporalRuns` is one)."""

    def get(self, run_id: str) -> RunHandle:
        """The handle of run ``run_id``."""


ActionName = Literal["resolve", "answer", "pause", "resume", "cancel"]
"""An operator action: ``resolve`` (approve or deny every pending call), ``answer`` (the
pending question), ``pause``, ``resume``, ``cancel``."""

ACTIONS: tuple[str, ...] = get_args(ActionName)
"""The operator actions, in the order the page offers them."""


@dataclass(frozen=True, slots=True)
class Action:
    """One parsed operator action."""

    name: ActionName
    """Which action."""
    version: int | None = None
    """The run's version the page showed; the action is refused if the store moved on."""
    decisions: Mapping[str, str] = field(default_factory=dict)
    """For ``resolve``: call id → ``"approve"`` or ``"deny"``."""
    text: str = ""
    """For ``answer``: the user's answer."""


def _bad(message: str) -> ActionError:
    return ActionError(400, "BadRequest", message)


def _decisions(value: JSONValue) -> dict[str, str]:
    if not isinstance(value, dict) or not value:
        raise _bad(f"decisions must be a non-empty object of call id → decision, not {value!r}")
    for call_id, decision in value.items():
        if decision not in ("approve", "deny"):
            raise _bad(
                f"the decision for call {call_id!r} is {decision!r}; allowed: 'approve', 'deny'"
            )
    return {call_id: str(decision) for call_id, decision in value.items()}


def parse_action(body: JSONValue) -> Action:
    """The action a request's JSON body asks for.

    Raises:
        ActionError: 400, naming the field, what was given and what is allowed.
    """
    if not isinstance(body, dict):
        raise _bad(f"the body must be a JSON object, not {body!r}")
    name = body.get("action")
    if name not in ACTIONS:
        raise _bad(f"action is {name!r}; allowed: {', '.join(map(repr, ACTIONS))}")
    version = body.get("version")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise _bad(f"version must be the run's version (an integer), not {version!r}")
    if name == "resolve":
        return Action("resolve", version, decisions=_decisions(body.get("decisions")))
    if name == "answer":
        text = body.get("text")
        if not isinstance(text, str):
            raise _bad(f"text must be the answer (a string), not {text!r}")
        return Action("answer", version, text=text)
    return Action(cast(ActionName, name), version)  # pause, resume or cancel


class _NoModel:
    """The model of a view with no agent factory: never called, as such actions need none."""

    name = "agentfsm-ui-no-model"

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[JSONObject], **_: object
    ) -> ModelResponse:
        raise AgentFSMError(
            "the live view has no agent factory, so it cannot call the model; "
            "start it with --agent MODULE:FUNCTION"
        )


def _needs_agent(action: Action, snapshot: Snapshot) -> bool:
    """Whether the action goes on to call the application's model and tools."""
    if action.name in ("resolve", "answer"):
        return True
    return action.name == "resume" and snapshot.paused_from == RunState.BUSY


def _check(action: Action, snapshot: Snapshot, factory: AgentFactory | None) -> None:
    run_id = snapshot.run_id
    _stale(action, snapshot)
    if snapshot.state == RunState.BUSY:
        raise ActionError(
            409,
            "RunBusy",
            f"run {run_id!r} is busy: the process running its turn owns it until the turn "
            "ends or waits; nothing was done",
        )
    if factory is None and _needs_agent(action, snapshot):
        raise ActionError(
            409,
            "NoAgent",
            f"{action.name!r} runs the application's model and tools, which this view was "
            "not given: start it with --agent MODULE:FUNCTION (or pass agent= to "
            "create_app); nothing was done",
        )


def _restore(run_id: str, store: RunStore, factory: AgentFactory | None) -> Agent:
    agent = (
        factory(run_id, store)
        if factory is not None
        else Agent(_NoModel(), run_id=run_id, store=store)
    )
    if agent.run_id != run_id or agent.state == RunState.CREATED:
        raise ActionError(
            500,
            "AgentFactoryError",
            f"the agent factory did not restore run {run_id!r} (it gave run "
            f"{agent.run_id!r} in state {agent.state!r}): it must pass run_id= and store= "
            "to Agent",
        )
    return agent


async def _dispatch(agent: RunHandle, action: Action) -> TurnOutcome:
    if action.name == "resolve":
        return await agent.resolve_action(dict(action.decisions))
    if action.name == "answer":
        return await agent.provide_input(action.text)
    if action.name == "pause":
        return await agent.pause()
    if action.name == "resume":
        return await agent.resume()
    return await agent.cancel()


class _LocalHandle:
    """An in-process `Agent` seen as a `RunHandle` (its async methods under the plain names)."""

    __slots__ = ("_agent",)

    def __init__(self, agent: Agent) -> None:
        self._agent = agent

    async def resolve_action(self, decisions: Mapping[str, str]) -> TurnOutcome:
        return await self._agent.aresolve_action(dict(decisions))

    async def provide_input(self, text: str) -> TurnOutcome:
        return await self._agent.aprovide_input(text)

    async def pause(self) -> TurnOutcome:
        return await self._agent.apause()

    async def resume(self) -> TurnOutcome:
        return await self._agent.aresume()

    async def cancel(self) -> TurnOutcome:
        return await self._agent.acancel()


def _stale(action: Action, snapshot: Snapshot) -> None:
    if action.version is not None and action.version != snapshot.version:
        raise ActionError(
            409,
            "StaleView",
            f"run {snapshot.run_id!r} changed since the page showed it (version "
            f"{action.version}, now {snapshot.version}); nothing was done: look at it again",
        )


async def perform(
    action: Action,
    run_id: str,
    store: RunStore,
    factory: AgentFactory | None,
    driver: RunDriver | None = None,
) -> JSONObject:
    """Do ``action`` on the stored run; return where it is now.

    Through a restored Agent, or, given a ``driver``, through the run's handle (the run's
    own workers carry it out; a busy run takes ``pause`` and ``cancel`` at its next step
    boundary, as the contract says).

    Raises:
        ActionError: 404 for no such run; 409 when the view or the run refuses (the
            message is the `IllegalTransitionError`'s, the `SnapshotConflictError`'s or the
            `RunBusyError`'s: another process drives the run);
            500 when the run failed otherwise; 502 when the driver could not be reached.
            Nothing is stored by a refused action.
    """
    snapshot = store.load(run_id)
    if snapshot is None:
        raise ActionError(404, "NoSuchRun", f"no run {run_id!r} in the store")
    if driver is not None:
        _stale(action, snapshot)
        return await _driven(action, driver.get(run_id))
    _check(action, snapshot, factory)
    agent = _restore(run_id, store, factory)
    try:
        outcome = await _dispatch(_LocalHandle(agent), action)
    except SnapshotConflictError as error:
        raise ActionError(
            409,
            type(error).__name__,
            f"{error}: another process changed the run meanwhile; this action was not "
            "stored, look at the run again",
        ) from error
    except (IllegalTransitionError, RunBusyError) as error:  # (busy: driven elsewhere)
        raise ActionError(409, type(error).__name__, str(error)) from error
    except (AgentFSMError, ValueError) as error:
        raise ActionError(500, type(error).__name__, str(error)) from error
    finally:
        agent.close()
    return _outcome(outcome)


async def _driven(action: Action, handle: RunHandle) -> JSONObject:
    """``action`` sent to a run its own workers drive."""
    try:
        outcome = await _dispatch(handle, action)
    except IllegalTransitionError as error:
        raise ActionError(409, type(error).__name__, str(error)) from error
    except (AgentFSMError, ValueError) as error:
        raise ActionError(500, type(error).__name__, str(error)) from error
    except Exception as error:  # (the driver's own: a server not reached, a run not found)
        raise ActionError(
            502, type(error).__name__, f"the run's driver did not take the action: {error}"
        ) from error
    return _outcome(outcome)


def _outcome(outcome: TurnOutcome) -> JSONObject:
    return {"state": outcome.state, "reason": outcome.reason, "reply": outcome.reply}
