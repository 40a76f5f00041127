"""The fixed vocabularies of the contract (docs/contract.md): states, events, reasons, policies.

Each is a `StrEnum`, so a member *is* its string value: ``RunState.BUSY == "busy"``.
"""

from __future__ import annotations

from agentfsm._compat import StrEnum


class MachineName(StrEnum):
    """Which of a run's two machines a transition belongs to (or ``conversation``)."""

    RUN = "run"
    """RunLifecycle, the run's formal states (the contract §1)."""
    LOOP = "loop"
    """TurnLoop, the inner iteration loop of one turn (the contract §2)."""
    CONVERSATION = "conversation"
    """Not a machine: an `Event` of this kind records a change to the conversation (a
    message, a tool call's start or result), with source and target both the run's state.
    With them the event log holds everything a snapshot does, so replaying it rebuilds the
    run (I10). Its ``event`` is a `RecordKind`."""


class RecordKind(StrEnum):
    """What a ``conversation`` event records; its ``data`` is listed with each."""

    MESSAGE = "message"
    """A message appended to the conversation: ``{"message": {...}}``."""
    DEFERRED = "deferred"
    """A hook's message held back until the open tool round closes (I7):
    ``{"message": {...}}``."""
    TOOL_STARTED = "tool_started"
    """A tool body is about to run: ``{"call_id": ..., "name": ...}``. With no result
    stored after it, the call's outcome is unknown (I11)."""
    TOOL_RESULT = "tool_result"
    """A call of the open round has its result and tool message:
    ``{"result": {...}, "message": {...}}``."""
    ROUND_CLOSED = "round_closed"
    """The open round's tool messages join the conversation, in call order: ``{}``."""
    FLUSH_DEFERRED = "flush_deferred"
    """The held-back messages join the conversation: ``{}``."""
    RESET = "reset"
    """The conversation was cleared but for its first ``keep`` messages: ``{"keep": n}``."""
    TOOL_CALLS_EDITED = "tool_calls_edited"
    """An ``after_llm`` handler edited the model's tool calls before the loop acted on them:
    ``{"original": {...}, "edited": {...}}`` (both assistant messages; ``model_replied``
    then carries the edited one)."""
    COMPACTED = "compacted"
    """The messages from ``start`` to ``end`` (exclusive) were replaced by one summary
    message: ``{"start": s, "end": e, "summary": {...}}``."""
    FORKED = "forked"
    """A fork's first event: the run begins where its origin was after ``seq``, whose log up
    to there it references instead of copying: ``{"origin": run_id, "seq": n}``."""
    MESSAGE_REPLACED = "message_replaced"
    """A fork's edit replaced the message at ``index`` (the last user message, or the
    assistant message whose pending call's arguments changed):
    ``{"index": i, "original": {...}, "message": {...}}``."""
    TOOLS_LISTED = "tools_listed"
    """A tool source (an MCP server) listed its tools, when the turn started or, after it
    announced a change, between two rounds; the run uses this list from then on:
    ``{"server": prefix, "tools": [{...}, ...]}`` (each tool as the server described it)."""
    USER_CONTENT = "user_content"
    """A tool call's content meant for the user only (an MCP block with ``audience:
    ["user"]``), recorded just before its ``tool_result`` and never sent to the model:
    ``{"call_id": ..., "name": ..., "content": [{...}, ...]}`` (each a `ContentPart`'s
    JSON). Changes nothing a replay rebuilds."""
    LEASE_TAKEN_OVER = "lease_taken_over"
    """A process took the busy run up after its driver's lease expired (the driver died or
    stalled): ``{"owner": new owner, "previous_owner": owner, "expired_at": time}``. Changes
    nothing a replay rebuilds."""


class RunState(StrEnum):
    """States of RunLifecycle."""

    CREATED = "created"
    """Initial: the run exists, its stores are not yet open."""
    READY = "ready"
    """Started and idle: waiting for the first input."""
    BUSY = "busy"
    """A turn is running (its TurnLoop is thinking or acting)."""
    REQUIRES_ACTION = "requires_action"
    """Waiting for the application to approve, deny or answer tool calls."""
    INPUT_REQUIRED = "input_required"
    """Waiting for the user to answer a question the agent asked."""
    COMPLETED = "completed"
    """The last turn ended with an answer (or at its iteration cap)."""
    FAILED = "failed"
    """The last turn ended with an error, a cancel or an expired wait."""
    PAUSED = "paused"
    """Suspended from outside; `resume` returns to the state it was paused in."""
    SHUTDOWN = "shutdown"
    """Final and absorbing: no event leaves it."""


class RunEvent(StrEnum):
    """Events of RunLifecycle (imperative verbs)."""

    START = "start"
    """Open the stores; created → ready."""
    SUBMIT = "submit"
    """Give the run a user input (argument ``text``)."""
    NEED_ACTION = "need_action"
    """Tool calls await approval or a client-side result (argument ``calls``: their ids)."""
    RESOLVE_ACTION = "resolve_action"
    """Decide every pending call (argument ``decisions``: call id → decision)."""
    NEED_INPUT = "need_input"
    """The agent asked the user (arguments ``question`` and ``calls``)."""
    PROVIDE_INPUT = "provide_input"
    """The user's answer to the pending question (argument ``text``)."""
    COMPLETE = "complete"
    """The turn ended with an answer or at its iteration cap."""
    FAIL = "fail"
    """The turn ended with an error (arguments ``error_type``, ``message``)."""
    CANCEL = "cancel"
    """Stop the turn at a step boundary, or abandon a wait."""
    EXPIRE = "expire"
    """A wait's deadline passed (argument ``now``)."""
    PAUSE = "pause"
    """Suspend the run from outside, at a safe boundary."""
    RESUME = "resume"
    """Return to the state the run was paused in."""
    SHUTDOWN = "shutdown"
    """Close the run for good."""


class LoopState(StrEnum):
    """States of TurnLoop."""

    THINKING = "thinking"
    """Initial: a model call is in flight. Entering it counts an iteration."""
    ACTING = "acting"
    """A tool round is running, its calls one after another."""
    AWAITING_ACTION = "awaiting_action"
    """The round waits for approvals or client-side results."""
    AWAITING_INPUT = "awaiting_input"
    """The round waits for the user's answer to ``ask_user``."""
    DELEGATING = "delegating"
    """A call of the round runs a sub-agent: the child run works, the round waits for it."""
    VALIDATING = "validating"
    """The model's final answer is checked against the turn's output type (typed answers)."""
    ANSWERED = "answered"
    """Final: the model answered without tool calls."""
    EXHAUSTED = "exhausted"
    """Final: the iteration cap was reached."""
    ERRORED = "errored"
    """Final: the model call failed after its retries."""
    ABORTED = "aborted"
    """Final: the turn was cancelled, expired or a hook failed."""
    REJECTED = "rejected"
    """Final: the answer failed its output validation and could not be retried (the
    ``output_retries`` budget, or the iteration cap, was spent)."""


class LoopEvent(StrEnum):
    """Events of TurnLoop."""

    MODEL_REPLIED = "model_replied"
    """A model response arrived (arguments ``tool_calls``, ``needing_action``, ``asking_user``)."""
    MODEL_FAILED = "model_failed"
    """The model call failed for good (transient errors were already retried)."""
    RESOLVED = "resolved"
    """Every pending call got its decision or answer (argument ``decisions``)."""
    TOOLS_FINISHED = "tools_finished"
    """Every call of the round has its tool message."""
    INPUT_REQUESTED = "input_requested"
    """A call of the round (an MCP server's tool) needs the user's answer before it can end
    (arguments ``call_id``, ``question``, ``request``: what the call is retried with)."""
    DELEGATED = "delegated"
    """A call of the round started (or took up again) its child run (arguments ``call_id``,
    ``child``: the child's run id)."""
    CHILD_RETURNED = "child_returned"
    """The child run came to rest with an answer or a failure, which is the call's result."""
    CHILD_ASKED = "child_asked"
    """The child run waits for approval or an answer (arguments ``needing_action``,
    ``asking_user``), which becomes the parent's wait."""
    ABORT = "abort"
    """End the turn from outside (argument ``reason``)."""
    OUTPUT_VALID = "output_valid"
    """The final answer validated against the output type (argument ``output``: its JSON)."""
    OUTPUT_INVALID = "output_invalid"
    """The final answer did not validate (argument ``errors``: what was wrong)."""


class CompletedReason(StrEnum):
    """Why a turn is `completed`."""

    ANSWERED = "answered"
    """The model gave a final answer."""
    MAX_ITERATIONS = "max_iterations"
    """The turn stopped at its iteration cap and its final message says so."""


class FailedReason(StrEnum):
    """Why a turn is `failed`."""

    ERROR = "error"
    """A model, tool or hook error ended the turn."""
    CANCELLED = "cancelled"
    """The application cancelled the turn."""
    EXPIRED = "expired"
    """A wait for approval or input passed its deadline."""
    OUTPUT_INVALID = "output_invalid"
    """The final answer failed its output validation and no retry was left."""


class InputPolicy(StrEnum):
    """What a `submit` does while the run is `busy`."""

    REJECT = "reject"
    """No transition: the submit raises `IllegalTransitionError` (the default)."""
    QUEUE = "queue"
    """Keep the input; it is submitted when the current turn ends."""
    INTERRUPT = "interrupt"
    """Cancel the turn at the next boundary, then submit the input."""


RUN_INITIAL = RunState.CREATED
"""Where every run starts."""
RUN_FINAL = frozenset({RunState.SHUTDOWN})
"""The final states of RunLifecycle."""
RUN_WAITING = frozenset({RunState.REQUIRES_ACTION, RunState.INPUT_REQUIRED})
"""States in which the run waits for the application or the user."""
LOOP_INITIAL = LoopState.THINKING
"""Where every turn starts."""
LOOP_FINAL = frozenset(
    {
        LoopState.ANSWERED,
        LoopState.EXHAUSTED,
        LoopState.ERRORED,
        LoopState.ABORTED,
        LoopState.REJECTED,
    }
)
"""The final states of TurnLoop."""
