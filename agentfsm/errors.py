"""Every error agentfsm raises, under one root.

::

    AgentFSMError
    ├── IllegalTransitionError      an event not allowed in the current state
    │   ├── GuardFailedError        allowed there, but none of its guards held
    │   └── EventArgumentsError     an event whose arguments are not JSON values
    ├── MachineDefinitionError      a declared machine the fast path cannot compile
    ├── ToolDefinitionError         a tool declared wrongly (signature, options)
    │   ├── InvalidToolNameError    a name the model API would refuse
    │   └── ToolSchemaError         an explicit schema that is not a valid object schema
    ├── DuplicateToolError          a second tool registered under a taken name
    ├── ToolCallError               one tool call refused or failed (becomes a ToolResult)
    │   ├── UnknownToolError        no tool of that name is registered
    │   ├── ToolDisabledError       the tool is not enabled for the run
    │   ├── ToolDeniedError         its policy or the application's decision refused it
    │   ├── ToolArgumentsError      arguments too big, too deep, not JSON, or off-schema
    │   ├── ToolTimeoutError        the body outlived its timeout (also a TimeoutError)
    │   ├── ToolOutputError         the body returned something that is not JSON
    │   └── SubAgentError           a sub-agent's child run failed (any way)
    ├── ToolRoundError              a tool round asked for with inconsistent inputs
    ├── MCPServerError              an MCP server failed: listing, protocol, transport, output
    │   └── MCPConnectionError      the server could not be reached or went away mid-call
    ├── MCPToolError                an MCP tool answered with an error result (isError)
    ├── HookMessageError            a hook added a message where the lifecycle forbids it
    ├── HookFailedError             a hook handler raised (the cause is chained)
    ├── ReentrantCallError          a call into a run from inside one of its own steps
    ├── ModelError                  a model call failed for good (after any retries)
    │   ├── ModelCallError          the request failed: status, connection or timeout
    │   └── ModelResponseError      the response cannot be used (cut off, filtered, empty)
    ├── ModelConfigError            a model that cannot be built: unknown spec, no API key
    ├── OutputRejectedError         an output validator sends the answer back to the model
    ├── DiagramRenderError          a diagram that cannot be written: no `dot`, unknown suffix
    ├── ReplayError                 an event log that cannot be replayed into a run
    ├── ForkError                   a fork that cannot be made: no such run, bad seq, bad edit
    ├── ActionError                 an operator action of the live view refused (HTTP status)
    └── StoreError                  a run store refused or failed an operation
        ├── SnapshotConflictError   the stored version is not the one the save expected
        ├── InvalidSaveError        a save that does not continue the stored run (seq gap…)
        ├── StoreWriteError         a save failed in the database (disk full, I/O error)
        ├── StoreCorruptError       the store's file is not a readable database of runs
        ├── SchemaVersionError      a stored snapshot or file of an unknown schema version
        └── StoreURLError           a store URL that names no store agentfsm can open

    AssertionError
    └── InvariantError              the testing kit found an invariant of the contract broken
    RuntimeError
    └── InjectedError               a fault the testing kit injected (an Exception)
    BaseException
    └── InjectedInterrupt           a fault the testing kit injected (any other escape)

    RuntimeError
    └── InjectedError               a fault the testing kit's FaultInjector armed (an Exception)
    BaseException
    └── InjectedInterrupt           a fault the FaultInjector armed (not an Exception)

The roots an application usually catches are `AgentFSMError` itself,
`IllegalTransitionError` (an event refused: nothing changed), `ToolCallError` (inside a tool
round they become error tool results, not exceptions), `ModelError` and `StoreError`; those
five are also importable from ``agentfsm``. `InvariantError` is an ``AssertionError``, not
an `AgentFSMError`: it is a test failure of the testing kit, never raised by a run; the
two ``Injected`` errors are raised only by faults a test arms.

Each error carries structured fields as well as a message, so an application can react
without parsing text; messages quote identifiers with ``!r`` and say what is allowed.
"""

from __future__ import annotations


class AgentFSMError(Exception):
    """The root of every error agentfsm raises."""


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(repr(name) for name in names) or "none"


def _plain(value: str) -> str:
    """A str enum member as its plain value; anything else as it is."""
    return str.__str__(value) if isinstance(value, str) else value


def _call(tool_name: str, call_id: str | None) -> str:
    if call_id is None:
        return f"tool {tool_name!r}"
    return f"call {call_id!r} to tool {tool_name!r}"


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


class ToolDefinitionError(AgentFSMError):
    """A tool was declared in a way that cannot work; raised when it is built.

    Attributes:
        tool_name: The name the tool has or would have had.
    """

    def __init__(self, tool_name: str, problem: str) -> None:
        self.tool_name = tool_name
        super().__init__(f"tool {tool_name!r} cannot be declared: {problem}")


class InvalidToolNameError(ToolDefinitionError):
    """A tool name that the chat completions API would refuse.

    Attributes:
        tool_name: The refused name.
        pattern: The pattern a name must match.
    """

    def __init__(self, tool_name: str, pattern: str) -> None:
        self.pattern = pattern
        super().__init__(
            tool_name,
            f"its name must match {pattern!r} (1 to 64 letters, digits, '_' or '-')",
        )


class ToolSchemaError(ToolDefinitionError):
    """An explicit JSON Schema for a tool's arguments is not a valid object schema.

    Attributes:
        tool_name: The tool the schema was given for.
        pointer: JSON pointer, inside the schema, of the offending part ('' for the root).
        detail: What is wrong there.
    """

    def __init__(self, tool_name: str, pointer: str, detail: str) -> None:
        self.pointer = pointer
        self.detail = detail
        super().__init__(
            tool_name,
            f"its parameters schema is invalid at {pointer!r}: {detail} (it must be a "
            "JSON Schema, draft 2020-12, describing an object)",
        )


class DuplicateToolError(AgentFSMError):
    """A tool was registered under a name another registered tool already has.

    Attributes:
        tool_name: The name both tools share.
        registered: Every name registered so far.
    """

    def __init__(self, tool_name: str, registered: tuple[str, ...]) -> None:
        self.tool_name = tool_name
        self.registered = registered
        super().__init__(
            f"a tool named {tool_name!r} is already registered; give the new one another "
            f"name (with @tool(name=...)); registered: {_names(registered)}"
        )


class ToolCallError(AgentFSMError):
    """One tool call was refused or failed.

    These are not raised out of a tool round: the round turns each into an error
    `ToolResult` (its ``error.type`` is the class name and ``error.message`` this message),
    so the model can read what went wrong. `UnknownToolError` is also raised by a registry
    lookup, where ``call_id`` is None.

    Attributes:
        tool_name: The tool the call named.
        call_id: The id of the call, or None outside a round.
    """

    def __init__(self, tool_name: str, call_id: str | None, message: str) -> None:
        self.tool_name = tool_name
        self.call_id = call_id
        super().__init__(message)


class UnknownToolError(ToolCallError):
    """No tool of that name is registered.

    Attributes:
        available: The names that are available (registered, and enabled in a round).
    """

    def __init__(
        self, tool_name: str, available: tuple[str, ...], call_id: str | None = None
    ) -> None:
        self.available = available
        super().__init__(
            tool_name,
            call_id,
            f"no tool named {tool_name!r} is registered; available tools: {_names(available)}",
        )


class ToolDisabledError(ToolCallError):
    """The tool is not enabled for this run, so it may not run (and is never offered).

    Attributes:
        enabled: The tools that are enabled for the run.
    """

    def __init__(self, tool_name: str, call_id: str, enabled: tuple[str, ...]) -> None:
        self.enabled = enabled
        super().__init__(
            tool_name,
            call_id,
            f"{_call(tool_name, call_id)} refused: the tool is not enabled for this run; "
            f"enabled tools: {_names(enabled)}",
        )


class ToolDeniedError(ToolCallError):
    """The tool's policy, or the application's decision, did not permit the call.

    Attributes:
        reason: Why, and what would have been needed.
    """

    def __init__(self, tool_name: str, call_id: str, reason: str) -> None:
        self.reason = reason
        super().__init__(tool_name, call_id, f"{_call(tool_name, call_id)} denied: {reason}")


class ToolArgumentsError(ToolCallError):
    """The call's arguments are too large, too deep, not a JSON object, or off-schema.

    Attributes:
        pointer: JSON pointer of the first offending value ('' for the whole arguments).
        detail: What is wrong and what is expected.
    """

    def __init__(self, tool_name: str, call_id: str, pointer: str, detail: str) -> None:
        self.pointer = pointer
        self.detail = detail
        where = f" at {pointer!r}" if pointer else ""
        super().__init__(
            tool_name,
            call_id,
            f"invalid arguments for {_call(tool_name, call_id)}{where}: {detail}",
        )


class ToolTimeoutError(ToolCallError, TimeoutError):
    """The tool body did not finish within its timeout.

    It is also a `TimeoutError`, so a tool declaring ``TimeoutError`` retryable retries
    its timeouts too (when it is idempotent).

    Attributes:
        timeout: The timeout, in seconds.
    """

    def __init__(self, tool_name: str, call_id: str, timeout: float) -> None:
        self.timeout = timeout
        super().__init__(
            tool_name,
            call_id,
            f"{_call(tool_name, call_id)} timed out after {timeout:g} s",
        )


class ToolOutputError(ToolCallError):
    """The tool body returned a value that cannot be sent to the model as JSON.

    Attributes:
        output_type: The type name of the value returned.
        detail: Why it could not be serialised.
    """

    def __init__(self, tool_name: str, call_id: str, output_type: str, detail: str) -> None:
        self.output_type = output_type
        self.detail = detail
        super().__init__(
            tool_name,
            call_id,
            f"{_call(tool_name, call_id)} returned {_article(output_type)} {output_type} that "
            "is not JSON "
            f"({detail}); return str, int, float, bool, None, lists and dicts of them, "
            "or a pydantic model",
        )


def _article(noun: str) -> str:
    return "an" if noun[:1].lower() in "aeiou" else "a"


class SubAgentError(ToolCallError):
    """A sub-agent's child run ended without an answer.

    Its turn failed (an error, a cancel, an expired wait), or an exception escaped it.

    Like every `ToolCallError`, it is not raised out of the parent's round: it is the error
    tool result of the call that ran the sub-agent, so the parent's model reads it.

    Attributes:
        child_run_id: The child run.
        reason: Why its turn ended (``error``, ``cancelled``, ``expired``), or the type of
            the exception that escaped it.
    """

    def __init__(
        self, tool_name: str, call_id: str, child_run_id: str, reason: str, detail: str
    ) -> None:
        self.child_run_id = child_run_id
        self.reason = reason
        super().__init__(
            tool_name,
            call_id,
            f"{_call(tool_name, call_id)} ran the sub-agent run {child_run_id!r}, which "
            f"ended without an answer ({reason}): {detail}",
        )


class ToolRoundError(AgentFSMError):
    """A tool round was asked for with inconsistent inputs; nothing in it ran.

    Attributes:
        call_ids: The call ids at fault.
    """

    def __init__(self, problem: str, call_ids: tuple[str, ...] = ()) -> None:
        self.call_ids = call_ids
        at_fault = f": {_names(call_ids)}" if call_ids else ""
        super().__init__(f"cannot run the tool round: {problem}{at_fault}")


class MCPServerError(AgentFSMError):
    """An MCP server could not be used: its tool list, a protocol error, or a bad result.

    Raised when a server's tools are listed (a name clash, a name or schema agentfsm cannot
    offer, a server that does not answer). Inside a tool round it becomes the call's error
    `ToolResult`, so the model reads it and the run goes on.

    Attributes:
        server: The prefix the application gave the server.
        problem: What went wrong, and what is allowed.
    """

    def __init__(self, server: str, problem: str) -> None:
        self.server = server
        self.problem = problem
        super().__init__(f"MCP server {server!r}: {problem}")


class MCPConnectionError(MCPServerError):
    """An MCP server could not be reached, or went away during a request.

    The one MCP failure an idempotent tool's call is retried after.
    """


class MCPToolError(AgentFSMError):
    """An MCP tool answered a call with an error result (``isError``); the model reads it.

    Attributes:
        tool_name: The tool's name as offered to the model (with its server's prefix).
        detail: The text the server gave with the error.
    """

    def __init__(self, tool_name: str, detail: str) -> None:
        self.tool_name = tool_name
        self.detail = detail
        super().__init__(f"tool {tool_name!r} reported an error: {detail}")


class HookMessageError(AgentFSMError):
    """A hook handler added a message in a hook that may not add messages.

    The message was not added: the conversation is as it was. Per-call hooks run between
    an assistant message and its tool messages, where any other message would break the
    order of tool messages (the contract's I7).

    Attributes:
        hook: The hook the handler ran in.
        handler: The handler's name.
        allowed: The hooks whose handlers may add messages.
    """

    def __init__(
        self, hook: str, handler: str, allowed: tuple[str, ...], role: str | None = None
    ) -> None:
        self.hook = hook
        self.handler = handler
        self.allowed = allowed
        self.role = role
        if role is None:
            text = (
                f"hook handler {handler!r} may not add a message in {hook!r} (it would break "
                f"the order of tool messages); hooks that may add messages: {_names(allowed)}"
            )
        else:
            text = (
                f"hook handler {handler!r} may not add {role} in {hook!r}: only the model "
                "asks for tool calls and only the tools answer them (invariant I7); a "
                "hook may add user, system, or assistant messages without tool calls"
            )
        super().__init__(text)


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


class HookFailedError(AgentFSMError):
    """A hook handler raised; the original exception is the ``__cause__``.

    Attributes:
        hook: The hook the handler ran in.
        handler: The handler's name.
    """

    def __init__(self, hook: str, handler: str, cause: Exception) -> None:
        self.hook = hook
        self.handler = handler
        super().__init__(
            f"hook handler {handler!r} failed in {hook!r}: {type(cause).__name__}: {cause}"
        )


class ModelError(AgentFSMError):
    """A model call failed for good: transient failures were already retried.

    Attributes:
        model: The model's name.
        reason: A short machine-readable reason, e.g. ``"status"``, ``"length"``.
        attempts: How many attempts were made.
    """

    def __init__(self, message: str, *, model: str, reason: str, attempts: int = 1) -> None:
        self.model = model
        self.reason = reason
        self.attempts = attempts
        super().__init__(message)


class ModelCallError(ModelError):
    """The request failed: an HTTP error status, a connection error or a timeout.

    Attributes:
        status_code: The HTTP status, or None when no response arrived.
        retryable: Whether the failure was of a transient kind: the call may be tried again
            later (after ``retry_after`` seconds, when that is set).
        retry_after: The wait, in seconds, the server asked for before a retry, when the
            call failed at once rather than retry early (longer than the policy's
            ``max_retry_after`` or than the call's deadline leaves); else None.
    """

    def __init__(
        self,
        message: str,
        *,
        model: str,
        reason: str,
        attempts: int = 1,
        status_code: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        self.status_code = status_code
        self.retryable = retryable
        self.retry_after = retry_after
        super().__init__(message, model=model, reason=reason, attempts=attempts)


class ModelResponseError(ModelError):
    """A response arrived but cannot be used.

    It was cut off (``length``), filtered (``content_filter``), had no choices, was
    malformed, or was a stream that ended without a finish reason.
    """


class ModelConfigError(AgentFSMError):
    """A model cannot be built as asked: an unknown model spec, or no API key.

    Raised when the model is made, before any call, so a misconfiguration fails early.

    Attributes:
        spec: The model spec or name asked for.
    """

    def __init__(self, spec: str, problem: str) -> None:
        self.spec = spec
        super().__init__(f"model {spec!r} cannot be used: {problem}")


class OutputRejectedError(AgentFSMError):
    """Raised by an output validator to send the model's answer back with ``message``.

    An Agent with an ``output_type`` runs its ``output_validators`` on an answer that
    validated against the type. One that raises this error makes the answer invalid: the
    loop records ``output_invalid`` with ``message`` as the error, and the model gets
    ``message`` to correct its answer while the turn's ``output_retries`` last (then the
    turn fails with reason ``output_invalid``). Any other exception a validator raises
    fails the turn with reason ``error``.

    Attributes:
        message: What is wrong with the answer, for the model to read.
    """

    def __init__(self, message: str) -> None:
        if not isinstance(message, str) or not message.strip():
            raise TypeError(
                f"OutputRejectedError needs a message for the model (a non-empty str), "
                f"not {message!r}"
            )
        self.message = message
        super().__init__(message)


class StoreError(AgentFSMError):
    """A run store refused or failed an operation; what was stored before is unchanged."""


class SnapshotConflictError(StoreError):
    """A save expected another stored version of the run (optimistic concurrency).

    Another writer saved the run since ``expected`` was read (or the run already exists,
    or no longer does). Nothing was written: reload the run and decide again.

    Attributes:
        run_id: The run that was saved.
        expected: The version the save expected (None: the run must not exist yet).
        actual: The version stored (None: there is no such run).
    """

    def __init__(self, run_id: str, expected: int | None, actual: int | None) -> None:
        self.run_id = run_id
        self.expected = expected
        self.actual = actual
        want = "no stored run" if expected is None else f"version {expected}"
        have = "none is stored" if actual is None else f"version {actual} is stored"
        super().__init__(
            f"cannot save run {run_id!r}: the save expected {want} but {have}; nothing was "
            "written (load the run again and retry with its version)"
        )


class InvalidSaveError(StoreError):
    """A save whose snapshot and events do not continue the stored run; nothing was written.

    For example the first new event's ``seq`` is not the stored ``seq + 1``, the events are
    not contiguous, belong to another run, or the snapshot's ``seq`` or ``version`` do not
    follow from them.

    Attributes:
        run_id: The run that was saved.
        problem: What does not fit, and what was expected.
    """

    def __init__(self, run_id: str, problem: str) -> None:
        self.run_id = run_id
        self.problem = problem
        super().__init__(f"cannot save run {run_id!r}: {problem}; nothing was written")


class StoreWriteError(StoreError):
    """The database failed a save (disk full, I/O error, locked too long).

    The transaction was rolled back: the previous snapshot and events still load. The
    database's own exception is the ``__cause__``.

    Attributes:
        run_id: The run that was saved.
        path: The store's file.
        detail: What the database reported.
    """

    def __init__(self, run_id: str, path: str, detail: str) -> None:
        self.run_id = run_id
        self.path = path
        self.detail = detail
        super().__init__(
            f"cannot save run {run_id!r} to {path!r}: {detail}; the transaction was rolled "
            "back and the previous snapshot is intact"
        )


class StoreCorruptError(StoreError):
    """The store's file, or a record in it, cannot be read as agentfsm's run database.

    Nothing was written to it. The database's own exception, if any, is the ``__cause__``.

    Attributes:
        path: The store's file.
        detail: What is wrong, and what was expected.
        run_id: The run whose record is unreadable, or None for the whole file.
    """

    def __init__(self, path: str, detail: str, run_id: str | None = None) -> None:
        self.path = path
        self.detail = detail
        self.run_id = run_id
        where = f"run {run_id!r} in {path!r}" if run_id is not None else f"{path!r}"
        super().__init__(f"cannot read {where}: {detail}; nothing was overwritten")


class SchemaVersionError(StoreError):
    """A stored snapshot, or the store's file, has a schema version this agentfsm cannot read.

    It was written by another (probably newer) agentfsm; nothing was overwritten.

    Attributes:
        path: The store's file.
        run_id: The run whose snapshot has that version, or None for the file's format.
        found: The schema version found.
        expected: The schema versions this agentfsm reads.
    """

    def __init__(
        self, path: str, run_id: str | None, found: int, expected: tuple[int, ...]
    ) -> None:
        self.path = path
        self.run_id = run_id
        self.found = found
        self.expected = expected
        what = f"the snapshot of run {run_id!r}" if run_id is not None else "the file format"
        readable = ", ".join(str(v) for v in expected)
        older = bool(expected) and found < min(expected)
        advice = (
            "it was written by an older agentfsm: read it with that version, or start a new store"
            if older
            else "upgrade agentfsm to read it"
        )
        super().__init__(
            f"{what} in {path!r} has schema version {found}, but this agentfsm reads only "
            f"{readable}; {advice} (nothing was overwritten)"
        )


class StoreURLError(StoreError, ValueError):
    """A store URL (``open_store``, a CLI's ``--store``) that names no store agentfsm can open.

    Nothing was opened or created.

    Attributes:
        url: The URL given, its password (if any) already replaced by ``***`` by the caller.
        problem: What is wrong with it.
        allowed: The URL forms accepted.
    """

    def __init__(self, url: str, problem: str, allowed: tuple[str, ...]) -> None:
        self.url = url
        self.problem = problem
        self.allowed = allowed
        super().__init__(
            f"cannot open the store {self.url!r}: {problem}; a store is named by "
            f"{', '.join(allowed)}… or a plain path to a SQLite file"
        )


class ReplayError(AgentFSMError):
    """An event log cannot be replayed into a run: it is not one an Agent recorded.

    A gap or repeat in ``seq``, an event of another run, a transition the machines do not
    take from where the replay is, a record whose data is not what its kind carries: the
    first such event is named.

    Attributes:
        run_id: The run the log is of.
        seq: The ``seq`` of the first event that does not fit (0 for an empty log).
        problem: What does not fit, and what was expected.
    """

    def __init__(self, run_id: str, seq: int, problem: str) -> None:
        self.run_id = run_id
        self.seq = seq
        self.problem = problem
        super().__init__(f"cannot replay run {run_id!r} at event {seq}: {problem}")


class ForkError(AgentFSMError, ValueError):
    """A run cannot be forked as asked; nothing was stored.

    No such run, a ``seq`` outside its log or before its first rest point, or an edit that
    does not fit the run at the fork point (no user message to replace, a call that is not
    pending, a message that would break the conversation's order).

    Attributes:
        run_id: The run that was to be forked.
        problem: What is wrong, with what was given and what is allowed.
    """

    def __init__(self, run_id: str, problem: str) -> None:
        self.run_id = run_id
        self.problem = problem
        super().__init__(f"cannot fork run {run_id!r}: {problem}")


class DiagramRenderError(AgentFSMError):
    """A diagram cannot be written as asked.

    Graphviz's ``dot`` program is not installed (DOT and Mermaid text still work without
    it), ``dot`` failed, or the file's suffix names no format agentfsm writes.

    Attributes:
        path: The file that was asked for.
        format: The format asked for (the suffix without its dot).
        problem: What went wrong.
    """

    def __init__(self, path: str, format: str, problem: str) -> None:
        self.path = path
        self.format = format
        self.problem = problem
        super().__init__(f"cannot write diagram {path!r} as {format!r}: {problem}")


class ActionError(AgentFSMError):
    """An operator action of the live view (`agentfsm.serve`) was refused.

    It carries the HTTP status of the answer, a kind and the message the page shows.

    Args:
        status: The HTTP status of the answer (400 bad request, 404 no such run, 409
            refused, 500 failed).
        kind: What went wrong: the error class's name (``IllegalTransitionError``…).
        message: The message the page shows.
    """

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        """The HTTP status."""
        self.kind = kind
        """What went wrong."""
        self.message = message
        """The message shown."""

    def as_json(self) -> dict[str, str]:
        """The error as the API answers it."""
        return {"error": self.kind, "message": self.message}


class InvariantError(AssertionError):
    """An invariant of the contract does not hold (raised by `agentfsm.testing`'s checks).

    Attributes:
        invariant: Which one (``"I7"``…).
    """

    def __init__(self, invariant: str, message: str) -> None:
        self.invariant = invariant
        super().__init__(f"{invariant} violated: {message}")


class InjectedError(RuntimeError):
    """The `Exception` a fault armed by the testing kit raises (`agentfsm.testing.faults`).

    Like `InvariantError`, it belongs to tests: a run never raises it on its own.
    """


class InjectedInterrupt(BaseException):
    """The `BaseException` a fault armed by the testing kit raises.

    It is neither an `Exception`, a `KeyboardInterrupt` nor a `SystemExit`, so it stands for
    any other escape a step must survive (I12).
    """


__all__ = [
    "ActionError",
    "AgentFSMError",
    "DiagramRenderError",
    "DuplicateToolError",
    "EventArgumentsError",
    "ForkError",
    "GuardFailedError",
    "HookFailedError",
    "HookMessageError",
    "IllegalTransitionError",
    "InjectedError",
    "InjectedInterrupt",
    "InvalidSaveError",
    "InvalidToolNameError",
    "InvariantError",
    "MCPConnectionError",
    "MCPServerError",
    "MCPToolError",
    "MachineDefinitionError",
    "ModelCallError",
    "ModelConfigError",
    "ModelError",
    "ModelResponseError",
    "OutputRejectedError",
    "ReentrantCallError",
    "ReplayError",
    "SchemaVersionError",
    "SnapshotConflictError",
    "StoreCorruptError",
    "StoreError",
    "StoreURLError",
    "StoreWriteError",
    "SubAgentError",
    "ToolArgumentsError",
    "ToolCallError",
    "ToolDefinitionError",
    "ToolDeniedError",
    "ToolDisabledError",
    "ToolOutputError",
    "ToolRoundError",
    "ToolSchemaError",
    "ToolTimeoutError",
    "UnknownToolError",
]
