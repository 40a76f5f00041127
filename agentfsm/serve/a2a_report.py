"""How a run's turn reaches an A2A client: status updates, the closing events, failures.

Every stretch of a task the server works on ends with the status that closes it
(``completed``, ``failed``, ``canceled``, ``rejected`` or ``input-required``): the
protocol's streams close at that status, so a client always sees one, even when the turn
was cancelled while busy, the server is stopping, or the model raised an exception of its
own.

What went wrong is shown to the caller only as agentfsm words it (an `AgentFSMError`'s
message, a refusal). Any other exception (a model's ``RuntimeError`` that may carry a
connection string) is logged on the server with a short id, and the caller is told only
that id (`hidden`).
"""

from __future__ import annotations

import base64
import logging
import uuid

from a2a.helpers.proto_helpers import new_data_part, new_raw_part, new_text_part
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Part, Role, TaskState
from pydantic import ValidationError

from agentfsm.agent.core import Agent
from agentfsm.agent.vocabulary import TurnOutcome
from agentfsm.errors import AgentFSMError
from agentfsm.states.content import ContentPart
from agentfsm.states.events import Event
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.names import MachineName, RunState
from agentfsm.states.projections import A2A_INTERRUPTED, A2A_TERMINAL, A2AState, project

__all__ = ["LOGGER", "TASK_STATES", "Report", "agent_message", "hidden", "shown", "user_parts"]

LOGGER = logging.getLogger("agentfsm.serve.a2a")
"""Where the A2A server logs what it does not tell its callers (with the id it told them)."""

TASK_STATES: dict[A2AState, TaskState] = {
    A2AState.SUBMITTED: TaskState.TASK_STATE_SUBMITTED,
    A2AState.WORKING: TaskState.TASK_STATE_WORKING,
    A2AState.INPUT_REQUIRED: TaskState.TASK_STATE_INPUT_REQUIRED,
    A2AState.COMPLETED: TaskState.TASK_STATE_COMPLETED,
    A2AState.FAILED: TaskState.TASK_STATE_FAILED,
    A2AState.CANCELED: TaskState.TASK_STATE_CANCELED,
}
"""The projection's A2A states as the SDK's `TaskState` values."""

_ENDS_THE_STREAM = A2A_TERMINAL | A2A_INTERRUPTED


def hidden(error: BaseException, what: str = "an A2A request") -> str:
    """Log ``error`` (traceback included) under a new id; the message the caller gets."""
    ref = uuid.uuid4().hex[:12]
    LOGGER.error("%s failed (error id %s)", what, ref, exc_info=error)
    return f"internal error (id {ref}): the server's log has the details"


def shown(error: Exception) -> str:
    """What the caller is told of ``error``: agentfsm's own words, else only an id."""
    if isinstance(error, (AgentFSMError, ValueError)):
        return f"{type(error).__name__}: {error}"
    return hidden(error, "a turn")


def agent_message(text: str, data: JSONObject | None = None) -> Message:
    """A message of the agent: ``text``, and ``data`` as a data part."""
    parts = [new_text_part(text)]
    if data is not None:
        parts.append(new_data_part(data))
    return Message(message_id=uuid.uuid4().hex, role=Role.ROLE_AGENT, parts=parts)


def _pending(agent: Agent) -> JSONObject:
    calls: list[JSONValue] = [
        {"id": call.id, "name": call.name, "arguments": call.arguments} for call in agent.pending
    ]
    return {"state": agent.state, "pending": calls, "question": agent.question}


def user_parts(content: object) -> list[Part]:
    """A ``user_content`` record's parts as A2A parts: text as text, media as raw bytes.

    Each item is read as the `ContentPart` it was recorded from; one that is not is left
    out. A media part's bytes carry its media type.
    """
    parts: list[Part] = []
    for item in content if isinstance(content, list) else ():
        try:
            part = ContentPart.model_validate(item)
        except ValidationError:
            continue
        if part.type == "text":
            parts.append(new_text_part(part.text or ""))
        else:  # (media: its base64 was checked by the model)
            raw = base64.b64decode(part.data or "")
            parts.append(new_raw_part(raw, media_type=part.mime_type))
    return parts


class Report:
    """Turns a run's transitions into the task's status updates and its closing events."""

    def __init__(self, updater: TaskUpdater) -> None:
        self.updater = updater
        self.last: Event | None = None
        self.failure: JSONObject = {}
        self.closed = False

    @staticmethod
    def _metadata(event: Event | None) -> dict[str, object] | None:
        if event is None:
            return None
        return {
            "agentfsm": {
                "seq": event.seq,
                "machine": str(event.machine),
                "event": event.event,
                "source": event.source,
                "target": event.target,
            }
        }

    async def user_content(self, event: Event) -> None:
        """Give the caller a ``user_content`` record as an artifact named ``user_content``.

        The record is a tool's content for the user only (never the model's); its parts are
        `user_parts`, its metadata the call's id and the tool's name.
        """
        parts = user_parts(event.data.get("content"))
        if parts:
            await self.updater.add_artifact(
                parts,
                name="user_content",
                metadata={"call_id": event.data.get("call_id"), "tool": event.data.get("name")},
            )

    async def transition(self, event: Event) -> None:
        """Report one transition, unless it ends this stretch of the task (see `close`)."""
        self.last = event
        if event.machine == MachineName.RUN and event.event == "fail":
            self.failure = dict(event.data)
        target = event.target if event.machine == MachineName.RUN else RunState.BUSY
        reasoned = target in (RunState.COMPLETED, RunState.FAILED)
        state = A2AState.WORKING if reasoned else project(target).a2a
        if reasoned or state in _ENDS_THE_STREAM:
            return  # reported once, by close, after the artifact
        await self.updater.update_status(TASK_STATES[state], metadata=self._metadata(event))

    def failed_with(self, error: Exception) -> None:
        """The turn moved, then raised ``error``: what its closing status says of it."""
        if isinstance(error, (AgentFSMError, ValueError)):
            self.failure.setdefault("message", shown(error))
        else:  # the run's log holds the (redacted) text; the caller gets only an id
            self.failure["message"] = shown(error)

    async def close(self, agent: Agent, outcome: TurnOutcome) -> None:
        """The closing events: the reply as an artifact, then the projected status."""
        self.closed = True
        state = project(outcome.state, outcome.reason).a2a
        message: Message | None = None
        if outcome.state == RunState.COMPLETED and outcome.reply is not None:
            await self.updater.add_artifact([new_text_part(outcome.reply)], name="reply")
        elif state == A2AState.INPUT_REQUIRED:
            text = outcome.question or "Approve or deny the pending tool calls."
            message = agent_message(text, _pending(agent))
        elif outcome.state == RunState.FAILED:
            detail = self.failure.get("message") or f"the turn ended: {outcome.reason}"
            message = agent_message(str(detail), {"reason": outcome.reason})
        await self.updater.update_status(
            TASK_STATES[state], message=message, metadata=self._metadata(self.last)
        )

    async def refused(self, agent: Agent, error: Exception, fresh: bool) -> None:
        """The run refused the message (nothing changed): say why, in the run's state."""
        self.closed = True
        text = shown(error)
        if fresh:
            await self.updater.reject(agent_message(text))
            return
        state = project(agent.state, agent.reason).a2a
        data = _pending(agent) if state == A2AState.INPUT_REQUIRED else None
        await self.updater.update_status(TASK_STATES[state], message=agent_message(text, data))
