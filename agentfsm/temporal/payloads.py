"""The durable contract between client, workflow and activities: names and payloads, versioned.

A workflow's history holds these names and payloads for as long as the run lives, so they
never change shape in place: a change that is not backward compatible gets a new name
(``agentfsm.model.v2``) beside the old one, which stays registered until no running workflow
uses it. The payloads are plain dataclasses of JSON values (Temporal's default converter).
A field added with a default (``ToolRequest.timeout``, ``ModelRequest.timeout``,
``RunSettings.lost_model_attempts``) is backward compatible and keeps the name: a payload
recorded before it decodes with the default, and an older worker ignores the unknown field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentfsm import _checks as checks

DEFAULT_AGENT = "default"
"""The name an agent runs under unless the worker is told another."""
RUN_WORKFLOW = "agentfsm.run.v1"
"""The workflow type of a run."""
MODEL_ACTIVITY = "agentfsm.model.v1"
"""The activity that makes one model call."""
TOOL_ACTIVITY = "agentfsm.tool.v1"
"""The activity that runs one tool body."""
STORE_ACTIVITY = "agentfsm.store.v1"
"""The activity that appends a step's events to the worker's `RunStore`."""
LOCAL_MODEL_PATCH = "agentfsm.local-model-calls.v1"
"""The patch (``workflow.patched``) under which a run makes its model calls local
activities (`RunSettings.local_model_calls`): a run begun by a worker that did not know the
setting goes on with activities."""

DEFAULT_GRACE = 10.0
"""Seconds a stopping worker gives the activities in flight (``agentfsm worker --grace``)."""

UPDATES = ("submit", "resolve_action", "provide_input", "pause", "resume", "cancel", "shutdown")
"""The lifecycle events a client sends, each a Temporal update of that name."""
QUERY_STATE = "state"
"""The query answering the run's state and the current outcome."""
QUERY_SNAPSHOT = "snapshot"
"""The query answering the run's snapshot (as JSON)."""


@dataclass(frozen=True)
class RunSettings:
    """The timeouts a run's activities and its history are held to (the takeover knobs).

    Raises:
        TypeError: A timeout or ``heartbeat_every`` not a number, ``history_events`` or
            ``lost_model_attempts`` not an int, ``local_model_calls`` not a bool.
        ValueError: A timeout or ``heartbeat_every`` not > 0 (or not finite),
            ``history_events`` or ``lost_model_attempts`` below 1.

    Attributes:
        model_timeout: Seconds one model attempt may take, enforced by the model activity: a
            longer attempt fails with a `ModelCallError` (reason ``timeout``), final unless
            the model's own `RetryPolicy` retries it (a timeout is transient). The
            activity's start-to-close timeout is this plus ``heartbeat_timeout``, a backstop
            for a lost or stuck worker.
        tool_timeout: Seconds a tool body without a timeout of its own may take.
        heartbeat_timeout: Seconds without a heartbeat after which a tool call is taken to
            have lost its worker: a non-idempotent call then ends "outcome unknown", an
            idempotent one is tried again elsewhere.
        heartbeat_every: Seconds between a running tool's heartbeats.
        store_timeout: Seconds one store write may take (retried until it succeeds).
        history_events: Continue-as-new once the history holds this many events (or
            Temporal suggests it), carrying the snapshot.
        local_model_calls: Make each model call a local activity on the run's worker: one
            history event in the workflow task already open, instead of an activity's
            three and a workflow task's three, and no task queue round-trip. For fast
            models; a call longer than about 80% of the workflow task timeout adds a
            workflow task heartbeat (three events) each time, updates wait for the call to
            end, and a lost worker is noticed by the workflow task timeout (the next
            worker makes the call again). Off: the model call is an activity. Taken under
            the patch `LOCAL_MODEL_PATCH` (two events per workflow run), so a run
            begun by an older worker, which ignores the setting, replays on a newer one.
        lost_model_attempts: Attempts in all of a model call without a `RetryPolicy` of its
            own whose worker is lost or stuck (no heartbeat, or the activity's
            start-to-close passed): such a call is made at most this many times in all,
            then fails the turn with a `ModelCallError` (reason ``timeout``). A model
            with a `RetryPolicy` is bounded by its ``max_attempts`` instead.
    """

    model_timeout: float = 120.0
    tool_timeout: float = 3600.0
    heartbeat_timeout: float = 10.0
    heartbeat_every: float = 2.0
    store_timeout: float = 30.0
    history_events: int = 10_000
    local_model_calls: bool = False
    lost_model_attempts: int = 3

    def __post_init__(self) -> None:
        for name in (
            "model_timeout",
            "tool_timeout",
            "heartbeat_timeout",
            "heartbeat_every",
            "store_timeout",
        ):
            checks.seconds(name, getattr(self, name))
        checks.whole("history_events", self.history_events, minimum=1)
        checks.flag("local_model_calls", self.local_model_calls)
        checks.whole("lost_model_attempts", self.lost_model_attempts, minimum=1)


@dataclass(frozen=True)
class RunStart:
    """What starts (or continues as new) a run's workflow.

    Attributes:
        agent: The name of the agent the worker was given (``--agent``).
        run_id: The run's id (also the workflow id).
        user_id: The application's user the run acts for.
        settings: The run's timeouts.
        snapshot: The run carried over by continue-as-new (None for a new run).
        version: The payload's version.
    """

    agent: str
    run_id: str
    user_id: str | None = None
    settings: RunSettings = field(default_factory=RunSettings)
    snapshot: dict[str, Any] | None = None
    version: int = 1


@dataclass(frozen=True)
class ToolRequest:
    """One tool body to run.

    Attributes:
        agent: The agent whose tool it is.
        tool: The tool's name.
        arguments: The validated arguments, as JSON.
        run_id: The run.
        turn: The turn.
        iteration: The model call of the turn that asked for it.
        call_id: The call (with ``run_id``, the idempotency key).
        user_id: The application's user.
        version: The payload's version.
        timeout: Seconds the body may take (the tool's own timeout, else the run's
            ``tool_timeout``); None (a request from before it was sent): the tool's own.
    """

    agent: str
    tool: str
    arguments: dict[str, Any]
    run_id: str
    turn: int
    iteration: int
    call_id: str
    user_id: str | None = None
    version: int = 1
    timeout: float | None = None


@dataclass(frozen=True)
class StoreWrite:
    """One save the Agent made, as a delta: the history never carries the conversation twice.

    Attributes:
        snapshot: The snapshot as JSON, its ``messages`` and ``trace`` only those past
            ``messages_from`` and ``trace_from``.
        messages_from: How many of the stored snapshot's messages the new one keeps, in
            front of the ones given.
        trace_from: The same for the trace.
        events: The events since the stored snapshot, as JSON.
        expected_version: The stored version this save continues (None: a new run).
    """

    snapshot: dict[str, Any]
    messages_from: int
    trace_from: int
    events: list[dict[str, Any]]
    expected_version: int | None


@dataclass(frozen=True)
class StoreBatch:
    """The saves of one step, applied in order (a save already stored is skipped)."""

    writes: list[StoreWrite]
    version: int = 1


@dataclass(frozen=True)
class ModelRequest:
    """One model call: the conversation is read from the store, not carried.

    Attributes:
        agent: The agent whose model answers.
        run_id: The run, whose stored snapshot holds the conversation.
        count: How many messages the stored conversation must have (checked).
        enabled: The tools offered (None: all).
        writes: The saves since the last store write, stored first (one activity, not two).
        version: The payload's version.
        timeout: Seconds the model's attempt may take (the run's ``model_timeout``): the
            activity fails a longer one with a `ModelCallError` (reason ``timeout``); None (a
            request from before it was sent): only the activity's start-to-close.
    """

    agent: str
    run_id: str
    count: int
    enabled: list[str] | None = None
    writes: list[StoreWrite] = field(default_factory=list)
    version: int = 1
    timeout: float | None = None


Outcome = dict[str, Any]
"""A `TurnOutcome` as JSON (what every update returns)."""
