"""Errors of tools: definitions, registration, one call, a round, hooks."""

from __future__ import annotations

from agentfsm.errors._base import AgentFSMError, _call, _names


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
            "JSON Schema describing an object, of the draft its $schema names: draft-04, -06, "
            "-07, 2019-09 or 2020-12, the default)",
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


class SubAgentDepthError(ToolCallError):
    """A sub-agent call refused: its child run would nest deeper than the tool allows.

    The call's error tool result (the parent's model reads it, and its turn goes on); no
    child run is started. It stops a sub-agent that has itself (or an agent that calls it
    back) among its tools.

    Attributes:
        depth: The depth the child run would have (the top run is depth 0).
        max_depth: The agent tool's ``max_depth``.
    """

    def __init__(self, tool_name: str, call_id: str, depth: int, max_depth: int) -> None:
        self.depth = depth
        self.max_depth = max_depth
        super().__init__(
            tool_name,
            call_id,
            f"{_call(tool_name, call_id)} refused: its sub-agent run would be at depth {depth}, "
            f"past the max_depth of {max_depth} of agent tool {tool_name!r} (the top run is "
            "depth 0; does the sub-agent call itself?); answer without it, or give "
            "agent_tool a larger max_depth",
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
