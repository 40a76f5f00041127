"""Hooks: application code called at the points of the contract §3, with a `HookContext`.

All nine hooks of the lifecycle are named here so that the Agent and the `ToolSystem` share
one vocabulary, one context type and one registry of handlers; the `ToolSystem` fires the
four tool hooks (``before_tools``, ``before_each_tool``, ``after_each_tool``,
``after_tools``) and ``on_error`` for calls that did not succeed.

A handler is a function, sync or async, taking the `HookContext`; its return value is
ignored. Whether it may add messages depends on the hook: per-call hooks run between an
assistant message and its tool messages, where another message would break the contract's I7,
so there `HookContext.add_message` raises `HookMessageError` and adds nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType

from agentfsm._checks import given
from agentfsm._compat import StrEnum
from agentfsm.errors import HookFailedError, HookMessageError
from agentfsm.states.messages import Message, ToolCall
from agentfsm.tools.results import ErrorDetails, ToolResult


class HookKind(StrEnum):
    """The hooks of the contract §3, in the order they fire within an iteration."""

    AFTER_USER_INPUT = "after_user_input"
    """A user input was recorded (submit / provide_input); may add messages."""
    BEFORE_LLM = "before_llm"
    """Entering thinking, each iteration; may add messages."""
    AFTER_LLM = "after_llm"
    """A model response was received; may add messages."""
    BEFORE_TOOLS = "before_tools"
    """A tool round starts; may add messages (placed after the round's tool messages)."""
    BEFORE_EACH_TOOL = "before_each_tool"
    """One call is about to be checked and run (``pending_tool`` is set); no messages."""
    AFTER_EACH_TOOL = "after_each_tool"
    """One call's tool message was recorded (``result`` is set); no messages."""
    AFTER_TOOLS = "after_tools"
    """Every call of the round is answered; may add messages."""
    ON_ERROR = "on_error"
    """A tool call (``result`` is set) or a model call failed (``error`` is set); no
    messages. For a tool call it fires after the call's tool message is recorded and before
    ``after_each_tool``."""
    ON_COMPLETE = "on_complete"
    """The turn completed; may add messages."""

    @property
    def may_add_messages(self) -> bool:
        """Whether a handler of this hook may add messages to the conversation."""
        return self in MESSAGE_HOOKS


MESSAGE_HOOKS = frozenset(
    {
        HookKind.AFTER_USER_INPUT,
        HookKind.BEFORE_LLM,
        HookKind.AFTER_LLM,
        HookKind.BEFORE_TOOLS,
        HookKind.AFTER_TOOLS,
        HookKind.ON_COMPLETE,
    }
)
"""The hooks whose handlers may add messages."""


class HookContext:
    """What a hook handler sees, and the one thing it may change: the messages it adds.

    Args:
        kind: The hook being fired.
        run_id: The run.
        messages: The conversation so far (in a tool round, with the tool messages of the
            calls answered so far).
        turn: The run's turn.
        iteration: The turn's iteration.
        pending_tool: The call about to run or just answered (per-call hooks, on_error).
        result: The call's result (``after_each_tool``, ``on_error``).
        error: What went wrong (``on_error``): the failed tool call's or model call's error.
        deps: The application's dependencies (the Agent's ``deps=``, or the turn's).
    """

    __slots__ = (
        "_added",
        "_handler",
        "_messages",
        "compaction",
        "deps",
        "error",
        "iteration",
        "kind",
        "pending_tool",
        "result",
        "run_id",
        "tool_calls",
        "turn",
    )

    def __init__(
        self,
        kind: HookKind,
        run_id: str,
        messages: Sequence[Message] = (),
        *,
        turn: int = 0,
        iteration: int = 0,
        pending_tool: ToolCall | None = None,
        result: ToolResult | None = None,
        error: ErrorDetails | None = None,
        deps: object = None,
    ) -> None:
        self.kind = kind
        """The hook being fired."""
        self.run_id = run_id
        """The run."""
        self.turn = turn
        """The run's turn."""
        self.iteration = iteration
        """The turn's iteration."""
        self.pending_tool = pending_tool
        """The call about to run or just answered, in per-call hooks and on_error."""
        self.result = result
        """The call's result, in after_each_tool and on_error."""
        self.deps = deps
        """The application's dependencies (the Agent's ``deps=``, or the turn's; None if
        none was given): never stored, never sent to the model."""
        self.error = error
        """What went wrong, in on_error: the type, message, whether it may be retried and
        the wait a server asked for, for a failed model call and a failed tool call alike."""
        self.tool_calls: tuple[ToolCall, ...] | None = None
        """The reply's tool calls as an ``after_llm`` handler edited them; None if unedited."""
        self.compaction: tuple[Message, int] | None = None
        """The compaction a ``before_llm`` handler asked for: the summary and where the
        compacted stretch ends (exclusive); None if none was asked for."""
        self._messages = tuple(messages)
        self._added: list[Message] = []
        self._handler = "?"

    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation so far, with the messages added by this hook's handlers."""
        return self._messages + tuple(self._added)

    @property
    def added(self) -> tuple[Message, ...]:
        """The messages this hook's handlers added, in order."""
        return tuple(self._added)

    def edit_tool_calls(self, calls: Sequence[ToolCall]) -> None:
        """Replace the model's tool calls before the loop acts on them (``after_llm`` only).

        Drop calls, or change their arguments: ``calls`` holds calls of the reply (by id, in
        the reply's order, each under its own tool name). The conversation records the
        edited reply, and the edit itself is recorded, so replay reproduces it; what remains
        is checked and run as any call is (I9). If several handlers edit, the last wins.

        Raises:
            ValueError: Not in ``after_llm``; a call that is not one of the reply's, a call
                under another tool name, a repeated id, or calls out of the reply's order.
            TypeError: An item that is not a `ToolCall`.
        """
        if self.kind is not HookKind.AFTER_LLM:
            raise ValueError(
                f"edit_tool_calls is allowed only in 'after_llm', not in {self.kind.value!r}"
            )
        reply = self._messages[-1].tool_calls if self._messages else ()
        self.tool_calls = checked_edit(reply, calls)

    def compact(self, summary: str | Message, *, keep: int = 0) -> None:
        """Replace the conversation after the system prompt with ``summary`` (``before_llm`` only).

        The last ``keep`` messages stay (a few more, if the first of them would be a tool
        message: a call is never separated from its tool messages). It is applied when the
        hook's handlers have run, before the model call, and recorded, so replay reproduces
        it. A ``str`` summary becomes a system message.

        Raises:
            ValueError: Not in ``before_llm``; an empty summary, a tool message or an
                assistant message with tool calls; a bad ``keep``, or nothing to compact.
            TypeError: ``summary`` is not a str or a `Message`.
        """
        if self.kind is not HookKind.BEFORE_LLM:
            raise ValueError(
                f"compact is allowed only in 'before_llm' (before a model call), not in "
                f"{self.kind.value!r}"
            )
        message = summary_message(summary)
        start = 1 if self._messages and self._messages[0].role == "system" else 0
        self.compaction = (message, compaction_end(self._messages, start, keep))

    def add_message(self, message: Message) -> None:
        """Add ``message`` to the conversation, where this hook allows it.

        Raises:
            HookMessageError: The hook may not add messages, or ``message`` is a tool
                message or an assistant message with tool calls (which only the model and
                the tools may add, docs/contract.md I7); nothing was added.
        """
        allowed = tuple(kind.value for kind in HookKind if kind.may_add_messages)
        if message.role == "tool" or (message.role == "assistant" and message.tool_calls):
            role = (
                "a tool message"
                if message.role == "tool"
                else "an assistant message with tool calls"
            )
            raise HookMessageError(self.kind.value, self._handler, allowed, role)
        if not self.kind.may_add_messages:
            raise HookMessageError(self.kind.value, self._handler, allowed)
        self._added.append(message)


def compaction_end(messages: Sequence[Message], start: int, keep: int) -> int:
    """Where a compaction that keeps the last ``keep`` messages ends (exclusive).

    The end moves earlier while the first kept message is a tool message, so an assistant
    message with tool calls is never separated from its tool messages (I7).

    Raises:
        ValueError: ``keep`` is not a whole number >= 0, or nothing is left to compact.
    """
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
        raise ValueError(f"keep must be a whole number >= 0, not {given(keep)}")
    end = len(messages) - keep
    while start < end < len(messages) and messages[end].role == "tool":
        end -= 1
    if end <= start:
        raise ValueError(
            f"keep={keep} leaves nothing to compact: the conversation has "
            f"{len(messages) - start} message(s) after the system prompt, and a compaction "
            "never separates tool messages from the call that asked for them"
        )
    return end


def summary_message(summary: object) -> Message:
    """``summary`` as the message that replaces the compacted stretch.

    Raises:
        TypeError: Not a str or a `Message`.
        ValueError: An empty text, a tool message, or an assistant message with tool calls.
    """
    if isinstance(summary, str):
        if not summary.strip():
            raise ValueError("summary must not be empty")
        return Message.system(summary)
    if not isinstance(summary, Message):
        raise TypeError(f"summary must be a str or a Message, not {given(summary)}")
    if summary.role == "tool" or summary.tool_calls:
        raise ValueError(
            "summary must not be a tool message or an assistant message with tool calls "
            "(only the model and the tools add those, I7)"
        )
    return summary


def checked_edit(reply: Sequence[ToolCall], calls: Sequence[ToolCall]) -> tuple[ToolCall, ...]:
    """``calls`` as an edit of the ``reply``'s tool calls (see `HookContext.edit_tool_calls`).

    Raises:
        ValueError: A call not of the reply, under another tool, repeated or out of order.
        TypeError: An item that is not a `ToolCall`.
    """
    names = {call.id: call.name for call in reply}
    order = [call.id for call in reply]
    edited = tuple(calls)
    for call in edited:
        if not isinstance(call, ToolCall):
            raise TypeError(f"calls must hold ToolCall objects, not {given(call)}")
        if call.id not in names:
            raise ValueError(
                f"call {call.id!r} is not a call of the reply; its calls are "
                f"{', '.join(map(repr, order)) or 'none'} (a hook may drop or change them, "
                "not add one)"
            )
        if call.name != names[call.id]:
            raise ValueError(
                f"call {call.id!r} asks for {names[call.id]!r}; an edit may change its "
                f"arguments, not its tool ({call.name!r})"
            )
    ids = [call.id for call in edited]
    if ids != [i for i in order if i in set(ids)] or len(set(ids)) != len(ids):
        raise ValueError(
            f"calls {ids!r} must be calls of the reply, each once, in its order {order!r}"
        )
    return edited


HookHandler = Callable[[HookContext], object]
"""A hook handler: ``handler(context)``, sync or async; its return value is ignored."""


_NO_HANDLERS: Mapping[HookKind, list[HookHandler]] = MappingProxyType({})
"""The handlers of a `Hooks` that has none yet: shared by all of them, immutable."""


class Hooks:
    """Handlers by hook, called in the order they were added.

    Example:
        >>> hooks = Hooks()
        >>> @hooks.on(HookKind.BEFORE_EACH_TOOL)
        ... def audit(context: HookContext) -> None:
        ...     print("about to run", context.pending_tool.name)
        >>> hooks.handlers(HookKind.BEFORE_EACH_TOOL) == (audit,)
        True
    """

    __slots__ = ("_handlers",)

    def __init__(self) -> None:
        # Most Hooks never get a handler (every Agent has one): the dict is made by the
        # first `add`, and until then all Hooks share one empty, immutable mapping.
        self._handlers: Mapping[HookKind, list[HookHandler]] = _NO_HANDLERS

    def on(self, kind: HookKind | str) -> Callable[[HookHandler], HookHandler]:
        """A decorator adding its function as a handler of ``kind``.

        Raises:
            ValueError: ``kind`` is not a hook; the message lists them.
        """
        hook = _hook_kind(kind)

        def add(handler: HookHandler) -> HookHandler:
            self.add(hook, handler)
            return handler

        return add

    def add(self, kind: HookKind | str, handler: HookHandler) -> None:
        """Add ``handler`` to the hook ``kind``, after its existing handlers.

        Raises:
            ValueError: ``kind`` is not a hook; the message lists them.
            TypeError: ``handler`` is not callable.
        """
        hook = _hook_kind(kind)
        if not callable(handler):
            raise TypeError(f"handler must be a callable, not {given(handler)}")
        handlers = self._handlers
        if not isinstance(handlers, dict):  # the first handler of these Hooks
            handlers = {}
            self._handlers = handlers
        handlers.setdefault(hook, []).append(handler)

    def handlers(self, kind: HookKind) -> tuple[HookHandler, ...]:
        """The handlers of ``kind``, in call order."""
        return tuple(self._handlers.get(kind, ()))

    def __contains__(self, kind: object) -> bool:
        if not self._handlers:  # no hook has a handler: the usual case on the hot path
            return False
        return bool(self._handlers.get(kind)) if isinstance(kind, HookKind) else False

    def has_any(self, kinds: Iterable[HookKind]) -> bool:
        """Whether any of ``kinds`` has a handler (cheap when no hook has any)."""
        handlers = self._handlers
        return bool(handlers) and any(handlers.get(kind) for kind in kinds)

    async def fire(self, context: HookContext) -> tuple[Message, ...]:
        """Call every handler of ``context.kind`` in order; return the messages they added.

        Raises:
            HookMessageError: A handler added a message where its hook may not.
            HookFailedError: A handler raised; its exception is the ``__cause__``.
        """
        for handler in self._handlers.get(context.kind, ()):
            context._handler = _name_of(handler)
            try:
                outcome = handler(context)
                if inspect.isawaitable(outcome):
                    await outcome
            except HookMessageError:
                raise
            except Exception as exc:
                raise HookFailedError(context.kind.value, context._handler, exc) from exc
        return context.added


def _name_of(handler: HookHandler) -> str:
    return getattr(handler, "__qualname__", None) or repr(handler)


def _hook_kind(kind: object) -> HookKind:
    """``kind`` as a `HookKind`, or a `ValueError` naming the hooks there are."""
    if isinstance(kind, str) and kind in {k.value for k in HookKind}:
        return HookKind(kind)
    hooks = ", ".join(repr(k.value) for k in HookKind)
    raise ValueError(f"kind must be one of the hooks {hooks}, not {given(kind)}")
