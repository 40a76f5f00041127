"""`Snapshot`: everything needed to resume a run, as one serialisable value.

A snapshot holds every field of `RunData` (both machines' state and data), the conversation,
the trace, the ``seq`` of the last event it reflects and a ``version`` for optimistic
concurrency. Its JSON round-trip is lossless, and ``schema_version`` lets a later agentfsm
refuse (or migrate) a snapshot it does not understand instead of misreading it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, field_validator

from agentfsm.fsm.data import RunData
from agentfsm.fsm.trace import AnyTraceEntry, TraceEntry
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message
from agentfsm.states.names import InputPolicy
from agentfsm.states.unchecked import blank, sealed
from agentfsm.tools.policy import Decision
from agentfsm.tools.results import ToolResult

SNAPSHOT_SCHEMA_VERSION = 1
"""The schema version of the snapshots this agentfsm writes."""

READABLE_SCHEMA_VERSIONS: tuple[int, ...] = (1,)
"""The snapshot schema versions this agentfsm reads."""


class ToolAnswer(BaseModel):
    """One answered call of the round that is open: its result and its tool message."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    result: ToolResult
    """How the call ended."""
    message: Message
    """Its tool message, which joins the conversation when the round closes."""


class ForkPoint(BaseModel):
    """Where a forked run comes from: its origin run and the rest point it was forked at."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str = Field(min_length=1)
    """The origin run's id."""
    seq: int = Field(ge=1)
    """The ``seq`` of the origin's event after which the fork begins (a rest point)."""


class Snapshot(BaseModel):
    """A run at one point of its event log: data, conversation, trace, seq and version.

    Build one with `Snapshot.from_data` and get the machines' data back with `to_data`.
    Floats (``deadline``) must be finite, so the JSON round-trip is exact.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = SNAPSHOT_SCHEMA_VERSION
    """The layout of this snapshot; only `READABLE_SCHEMA_VERSIONS` validate."""
    run_id: str = Field(min_length=1)
    """The run's identifier."""
    state: str
    """RunLifecycle's state."""
    loop_state: str | None = None
    """TurnLoop's state; None before the first turn."""
    turn: int = Field(default=0, ge=0)
    """How many inputs were accepted by `submit`."""
    iteration: int = Field(default=0, ge=0)
    """Model calls in the current turn."""
    max_iterations: int = Field(default=10, ge=1)
    """The cap on iterations in one turn."""
    max_turns: int | None = Field(default=None, ge=1)
    """The cap on turns; None for no cap."""
    input_policy: InputPolicy = InputPolicy.REJECT
    """What a `submit` does while the run is busy."""
    at_boundary: bool = True
    """True while no model call and no tool call is in flight."""
    pending: tuple[str, ...] = ()
    """Ids of the tool calls that await a decision or an answer."""
    question: str | None = None
    """The question awaiting the user's answer."""
    deadline: FiniteFloat | None = None
    """When the current wait expires (seconds since the epoch)."""
    paused_from: str | None = None
    """The state the run was paused in."""
    reason: str | None = None
    """Why the last turn ended."""
    queued: tuple[str, ...] = ()
    """Inputs submitted while busy."""
    cancel_requested: bool = False
    """An interrupting submit asked to cancel the turn at its next boundary."""
    output_retries: int | None = Field(default=None, ge=0)
    """Invalid final answers a turn may send back to the model; None without an output type."""
    invalid_outputs: int = Field(default=0, ge=0)
    """Final answers of the current turn that failed their output validation."""
    messages: tuple[Message, ...] = ()
    """The conversation, in order."""
    deferred: tuple[Message, ...] = ()
    """Hook messages held back until the open tool round closes (I7)."""
    decisions: dict[str, Decision] = Field(default_factory=dict)
    """The application's decisions for the open round, by call id."""
    answers: tuple[ToolAnswer, ...] = ()
    """The open round's answered calls, in call order (resumed, they never run again)."""
    started: tuple[str, ...] = ()
    """Ids of the open round's calls whose body started and has no stored answer yet."""
    origin: ForkPoint | None = None
    """For a fork (`agentfsm.stores.forking`), the run and rest point it was forked from."""
    tool_lists: dict[str, tuple[JSONObject, ...]] = Field(default_factory=dict)
    """The last recorded listing of each tool source (MCP server), by its prefix."""
    inputs: dict[str, JSONObject] = Field(default_factory=dict)
    """The open round's calls whose tool asked the user, by call id: ``{"request": ...}``,
    and ``"answer"`` once the user answered (the call is retried with both)."""
    trace: tuple[TraceEntry, ...] = ()
    """What happened inside the transitions (model calls, tool executions…), in order."""
    seq: int = Field(default=0, ge=0)
    """The ``seq`` of the last event this snapshot reflects (0 before any event)."""
    version: int = Field(default=1, ge=1)
    """Incremented by one at every save of the run: 1 for its first save."""

    @field_validator("schema_version")
    @classmethod
    def _readable(cls, value: int) -> int:
        if value not in READABLE_SCHEMA_VERSIONS:
            raise ValueError(
                f"snapshot schema version {value} is not one this agentfsm reads "
                f"({READABLE_SCHEMA_VERSIONS!r})"
            )
        return value

    @classmethod
    def from_data(
        cls,
        data: RunData,
        messages: Sequence[Message],
        trace: Sequence[AnyTraceEntry],
        seq: int,
        version: int,
        *,
        deferred: Sequence[Message] = (),
        decisions: Mapping[str, Decision] | None = None,
        answers: Sequence[ToolAnswer] = (),
        started: Sequence[str] = (),
        origin: ForkPoint | None = None,
        tool_lists: Mapping[str, Sequence[JSONObject]] | None = None,
        inputs: Mapping[str, JSONObject] | None = None,
        trusted: bool = False,
    ) -> Snapshot:
        """The snapshot of a run's machines' data, conversation and trace.

        Args:
            data: The machines' data; every field is copied.
            messages: The conversation.
            trace: The trace entries.
            seq: The ``seq`` of the last event emitted so far.
            version: The version this snapshot will be saved as.
            deferred: Hook messages held back until the open round closes.
            decisions: The decisions for the open round.
            answers: The open round's answered calls.
            started: The open round's calls started without an answer.
            origin: For a fork, where it was forked from.
            tool_lists: The last listing of each tool source, by prefix.
            inputs: The open round's calls whose tool asked the user.
            trusted: Skip validation: every value comes from a live run's own checked
                models (the Agent builds one snapshot per event; validating its whole
                conversation and trace again each time would make a long run quadratic).
        """
        fields: dict[str, Any] = {
            "schema_version": SNAPSHOT_SCHEMA_VERSION,
            "run_id": data.run_id,
            "state": data.state,
            "loop_state": data.loop_state,
            "turn": data.turn,
            "iteration": data.iteration,
            "max_iterations": data.max_iterations,
            "max_turns": data.max_turns,
            "input_policy": data.input_policy,
            "at_boundary": data.at_boundary,
            "pending": data.pending,
            "question": data.question,
            "deadline": data.deadline,
            "paused_from": data.paused_from,
            "reason": data.reason,
            "queued": data.queued,
            "cancel_requested": data.cancel_requested,
            "output_retries": data.output_retries,
            "invalid_outputs": data.invalid_outputs,
            "messages": tuple(messages),
            "deferred": tuple(deferred),
            "decisions": dict(decisions or {}),
            "answers": tuple(answers),
            "started": tuple(started),
            "origin": origin,
            "tool_lists": {name: tuple(tools) for name, tools in (tool_lists or {}).items()},
            "inputs": dict(inputs or {}),
            "trace": tuple(trace),
            "seq": seq,
            "version": version,
        }
        if trusted:
            return cls._trusted(fields)
        del fields["schema_version"]  # (its default: given, it would count as set)
        return cls(**fields)

    @classmethod
    def _trusted(cls, fields: dict[str, Any]) -> Snapshot:
        """A snapshot of ``fields`` (every field, in the class's order), unvalidated.

        What ``model_construct`` makes, without its walk over every field's aliases and
        defaults (a quarter of a write-behind point's cost on the run's thread); ``fields``
        becomes its ``__dict__``, and every such snapshot shares one set of the fields
        given (all but ``schema_version``, as a validated one has), not a copy of each.
        """
        snapshot = blank(cls)
        object.__setattr__(snapshot, "__dict__", fields)
        return sealed(snapshot, _GIVEN)

    def to_data(self) -> RunData:
        """A fresh `RunData` equal to the one this snapshot was taken from."""
        return RunData(
            run_id=self.run_id,
            state=self.state,
            loop_state=self.loop_state,
            turn=self.turn,
            iteration=self.iteration,
            max_iterations=self.max_iterations,
            max_turns=self.max_turns,
            input_policy=self.input_policy,
            at_boundary=self.at_boundary,
            pending=self.pending,
            question=self.question,
            deadline=self.deadline,
            paused_from=self.paused_from,
            reason=self.reason,
            queued=self.queued,
            cancel_requested=self.cancel_requested,
            output_retries=self.output_retries,
            invalid_outputs=self.invalid_outputs,
        )


_GIVEN = set(Snapshot.model_fields) - {"schema_version"}
"""The fields a snapshot from `Snapshot.from_data` was given (pydantic copies it before any
change, so every trusted snapshot shares it)."""
