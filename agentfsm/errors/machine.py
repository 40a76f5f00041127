"""Errors of the machines: refused events, machine definitions, re-entry."""

from __future__ import annotations

from agentfsm.errors._base import AgentFSMError, _plain


class IllegalTransitionError(AgentFSMError):
    """An event was sent that is not allowed in the machine's current state.

    Nothing changed: the state, the run's data and its event log are as they were.

    Attributes:
        run_id: The run the machine belongs to.
        machine: ``"run"`` or ``"loop"``.
        state: The state the machine was (and still is) in.
        event: The event that was refused.
        allowed: The events that do have a transition out of ``state``.
    """

    def __init__(
        self,
        *,
        run_id: str,
        machine: str,
        state: str,
        event: str,
        allowed: tuple[str, ...],
        detail: str = "",
    ) -> None:
        # A state may arrive as a RunState or LoopState (a str enum): kept, and shown, as
        # its plain value ('created', not <RunState.CREATED: 'created'>).
        machine, state, event = _plain(machine), _plain(state), _plain(event)
        allowed = tuple(_plain(name) for name in allowed)
        self.run_id = run_id
        self.machine = machine
        self.state = state
        self.event = event
        self.allowed = allowed
        allowed_text = ", ".join(repr(name) for name in allowed) or "none (the state is final)"
        super().__init__(
            f"event {event!r} is not allowed in state {state!r} of the {machine} machine "
            f"of run {run_id!r}{detail}; allowed events in {state!r}: {allowed_text}"
        )


class GuardFailedError(IllegalTransitionError):
    """The event has transitions out of the current state, but none of their guards held.

    Attributes:
        failed_guards: For each transition of the event out of ``state``, the guard that did
            not hold, with what it checks (``"submit_allowed: input is a non-empty …"``).
    """

    def __init__(
        self,
        *,
        run_id: str,
        machine: str,
        state: str,
        event: str,
        allowed: tuple[str, ...],
        failed_guards: tuple[str, ...],
    ) -> None:
        self.failed_guards = failed_guards
        super().__init__(
            run_id=run_id,
            machine=machine,
            state=state,
            event=event,
            allowed=allowed,
            detail=" (no guard held: " + "; ".join(failed_guards) + ")",
        )


class EventArgumentsError(IllegalTransitionError):
    """An event was sent with an argument that is not a JSON value.

    An event's arguments become its recorded ``data``, which a store writes as JSON and a
    replay reads back; NaN, a set or an arbitrary object could not be written, or would come
    back as something else. The event is refused before any guard is asked: nothing changed.

    Attributes:
        problem: Which argument, where inside it, and what a JSON value is.
    """

    def __init__(
        self,
        *,
        run_id: str,
        machine: str,
        state: str,
        event: str,
        allowed: tuple[str, ...],
        problem: str,
    ) -> None:
        self.problem = problem
        super().__init__(
            run_id=run_id,
            machine=machine,
            state=state,
            event=event,
            allowed=allowed,
            detail=f" ({problem})",
        )


class MachineDefinitionError(AgentFSMError):
    """A declared machine uses something its compiled fast path cannot reproduce exactly."""


class ReentrantCallError(AgentFSMError):
    """A call into a run from inside one of its own steps, which would break the contract.

    While a step of the run is running (a model call, a tool round, a hook, a listener), a
    hook, listener or tool of that run, or another task, may only ask for what docs/contract.md
    gives a meaning to mid-step: `submit` while busy (the input policy), `cancel` and `pause`
    (taken at the next step boundary). Anything else (starting another step: `submit` once
    the turn is over, `resolve_action`, `provide_input`, `resume`, `expire`, `shutdown`,
    `reset`, `start`; or `cancel` once the turn's outcome is decided) is refused with this
    error, and changes nothing.

    Attributes:
        run_id: The run.
        call: The method that was called (``"submit"``, ``"shutdown"``…).
        state: The run's state when it was called.
    """

    def __init__(self, run_id: str, call: str, state: str, detail: str = "") -> None:
        self.run_id = run_id
        self.call = call
        self.state = state
        super().__init__(
            f"Agent.{call}() was called while a step of run {run_id!r} is running (from one "
            f"of its own hooks, listeners or tools, or from another task), in state "
            f"{state!r}{detail}; mid-step only submit (while busy, per the input policy), "
            "cancel and pause are allowed: call it once the step has returned"
        )
