"""What a run is now: the Agent's read-only properties, its `outcome` and its `snapshot`.

Everything here reads the run (its state, conversation, trace, what awaits the application)
and changes nothing; the calls that change it are in `agentfsm.agent.lifecycle`.
"""

from __future__ import annotations

import copy

from agentfsm.agent.children import ChildRuns
from agentfsm.agent.vocabulary import TurnOutcome
from agentfsm.fsm.trace import AnyTraceEntry
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message, ToolCall
from agentfsm.states.names import FailedReason, MachineName, RunState
from agentfsm.stores.snapshot import Snapshot
from agentfsm.tools.results import ErrorDetails


class RunView(ChildRuns):
    """The Agent's read-only view of its run (mixed into `Agent`)."""

    __slots__ = ()

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self._data.run_id

    @property
    def parent(self) -> tuple[str, str] | None:
        """For a sub-agent's child run: the parent run's id and the id of its call."""
        return self._parent

    @property
    def state(self) -> str:
        """RunLifecycle's state."""
        return self._data.state

    @property
    def loop_state(self) -> str | None:
        """The current turn's TurnLoop state (None before the first turn)."""
        return self._data.loop_state

    @property
    def turn(self) -> int:
        """Turns started so far."""
        return self._data.turn

    @property
    def iteration(self) -> int:
        """Model calls in the current turn."""
        return self._data.iteration

    @property
    def max_iterations(self) -> int:
        """Model calls allowed in one turn (I8: ``iteration`` never exceeds it)."""
        return self._data.max_iterations

    @property
    def reason(self) -> str | None:
        """Why the last turn ended."""
        return self._data.reason

    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation: the system prompt first, then every message in order."""
        return tuple(self._messages)

    @property
    def trace(
        self,
    ) -> tuple[AnyTraceEntry, ...]:
        """User inputs, model calls, retries and tool executions, in order."""
        return tuple(self._entries())

    @property
    def pending(self) -> tuple[ToolCall, ...]:
        """The calls awaiting the application (in requires_action / input_required).

        A call a sub-agent's child run waits on is here too, its id the path that addresses
        it: ``"<this run>/<call>/<child run>/<child call>"`` (one run/call pair per level).
        """
        if not self._data.pending:  # (most outcomes: nothing awaits the application)
            return ()
        waiting = set(self._data.pending)
        own = tuple(call for call in self._round if call.id in waiting)
        if not self._agent_tools or len(own) == len(waiting):
            return own
        return own + self._nested_pending()

    @property
    def question(self) -> str | None:
        """The question awaiting the user's answer."""
        return self._data.question

    @property
    def input_request(self) -> JSONObject | None:
        """What the tool awaiting the user's answer asked for, as the run recorded it.

        For an MCP server's question: ``{"elicit": "form", "message": ..., "schema": {...}}``
        (the JSON Schema of the form, that `provide_input`'s answer is checked against) or
        ``{"elicit": "url", "message": ..., "url": ...}``: what a user interface needs to
        show a form or a link rather than `question`'s text alone. A copy; None when no
        tool's question waits (nothing does, or it is the model's own ``ask_user``).
        """
        if self._data.question is None or not self._inputs:
            return None
        for call_id in self._data.pending:
            recorded = self._inputs.get(call_id)
            if recorded is not None and "answer" not in recorded:
                request = recorded.get("request")
                return copy.deepcopy(request) if isinstance(request, dict) else None
        return None

    def outcome(self) -> TurnOutcome:
        """Where the run is now."""
        data = self._data
        state, reason = data.state, data.reason
        last = self._messages[-1] if self._messages else None
        reply = (
            last.content
            if state == _COMPLETED and last is not None and last.role == "assistant"
            else None
        )
        if self._output_spec is None:
            if reason is None and not data.pending and data.question is None:
                return _at_rest(state, reply)  # (``ready``, mostly: no error, nothing pending)
            error = self._failure() if reason in _FAILED_WITH_ERROR else None
            pending = self.pending if data.pending else ()
            return TurnOutcome(state, reason, reply, pending, data.question, error)
        error = self._failure() if reason in _FAILED_WITH_ERROR else None
        output = self._typed_output()
        reply = self._answer_text() if output is not None else reply
        return TurnOutcome(
            self.state, self.reason, reply, self.pending, self.question, error, output
        )

    def _failure(self) -> ErrorDetails | None:
        """The error that failed the last turn; for a restored run, from its ``fail`` event."""
        if self._error is None and self.store is not None:
            for event in reversed(self.store.events(self.run_id)):
                if event.machine == MachineName.RUN and event.event == "fail":
                    self._error = ErrorDetails.of_event(event.data)
                    break
        return self._error

    def snapshot(self) -> Snapshot:
        """The run as a `Snapshot` (what a store holds of it after its last event)."""
        return self._snapshot(self._emitter.seq, max(self._version, 1))


_COMPLETED = RunState.COMPLETED

_FAILED_WITH_ERROR = (FailedReason.ERROR, FailedReason.OUTPUT_INVALID)
"""The reasons whose outcome carries the error (an enum member read costs a lookup)."""


_PLAIN: dict[str, TurnOutcome] = {}
"""The outcomes that say only a state (no reason, reply, call, question or error), by state:
immutable, so shared (there are as many as states)."""


def _at_rest(state: str, reply: str | None) -> TurnOutcome:
    """``TurnOutcome(state, None, reply, (), None)``: for no reply, the shared one."""
    if reply is not None or type(state) is not str:
        return TurnOutcome(state, None, reply, (), None)
    found = _PLAIN.get(state)
    if found is None:
        found = _PLAIN[state] = TurnOutcome(state, None, None, (), None)
    return found
