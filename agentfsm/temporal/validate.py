"""The update validators: would the Agent refuse this call now, and with which error?

Each check asks the run's own machines (and the Agent's own argument checks) without
changing anything, and raises exactly what the in-process Agent would raise for the same
call in the same state: the same `IllegalTransitionError` (or `GuardFailedError`,
`ReentrantCallError`, `TypeError`…) with the same message. A refused update is rejected
before it reaches the workflow's history.
"""

from __future__ import annotations

from collections.abc import Mapping

from agentfsm.agent import checks
from agentfsm.agent.core import Agent
from agentfsm.agent.vocabulary import to_decision
from agentfsm.fsm.compiled import refusal
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.names import RunState


def _select(agent: Agent, event: str, args: dict[str, JSONValue]) -> None:
    """Raise what sending ``event`` now would raise (no transition is taken)."""
    machine = agent._run
    if not machine.can_send(event, **args):  # the guards' own verdict, nothing taken
        raise refusal(machine.compiled, agent.run_id, machine.state, event)


def decisions_payload(agent: Agent, decisions: object) -> JSONObject:
    """The decisions as the ``resolve_action`` event's data (checked as the Agent does)."""
    checks.decisions(agent, decisions)
    assert isinstance(decisions, Mapping)  # (checked above)
    return {
        call_id: to_decision(call_id, value).model_dump(mode="json")
        for call_id, value in decisions.items()
    }


def _mid_step(agent: Agent, name: str, args: dict[str, JSONValue]) -> None:
    agent._check_mid_step(name)
    busy = agent.state == RunState.BUSY
    if name == "submit":
        _select(agent, "submit", args)
    elif name == "cancel":
        agent._refuse_late_cancel()
        if not (busy or agent._run.can_send("cancel")):
            _select(agent, "cancel", {})
    elif not (busy or agent._run.can_send("pause")):
        _select(agent, "pause", {})


def check(agent: Agent, name: str, argument: object = None) -> None:
    """Raise what ``agent``'s method ``name`` would raise if called now with ``argument``.

    Args:
        agent: The run.
        name: One of ``submit``, ``resolve_action``, ``provide_input``, ``pause``,
            ``resume``, ``cancel``, ``shutdown``.
        argument: The text (``submit``, ``provide_input``) or the decisions.
    """
    args: dict[str, JSONValue] = {}
    if name in ("submit", "provide_input"):
        checks.user_text("text", argument)
        assert isinstance(argument, str)
        args["text"] = argument
    elif name == "resolve_action":
        args["decisions"] = decisions_payload(agent, argument)
    if agent._depth:  # a step runs: only what the contract allows mid-step
        _mid_step(agent, name, args)
        return
    if name in ("submit", "resolve_action", "provide_input") or (
        name == "resume" and agent.state == RunState.SHUTDOWN
    ):
        checks.open_for(agent, name)
    if name == "cancel" and agent.state == RunState.BUSY:
        return  # a run left busy with no step running is cancelled at once
    _select(agent, name, args)
