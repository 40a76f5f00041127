"""Every error agentfsm raises, under one root.

::

    AgentFSMError
    ├── IllegalTransitionError      an event not allowed in the current state
    │   └── GuardFailedError        allowed there, but none of its guards held
    └── MachineDefinitionError      a declared machine the fast path cannot compile

Each error carries structured fields as well as a message, so an application can react
without parsing text; messages quote identifiers with ``!r`` and say what is allowed.
"""

from __future__ import annotations


class AgentFSMError(Exception):
    """The root of every error agentfsm raises."""


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


class MachineDefinitionError(AgentFSMError):
    """A declared machine uses something its compiled fast path cannot reproduce exactly."""
