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
from collections.abc import Callable, Sequence

from agentfsm._checks import given
from agentfsm._compat import StrEnum
from agentfsm.errors import HookFailedError, HookMessageError
from agentfsm.states.messages import Message, ToolCall
from agentfsm.tools.results import ToolResult


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
    """A tool call (``result`` is set) or a model call failed; no messages."""
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
    """

    __slots__ = (
        "_added",
        "_handler",
        "_messages",
        "iteration",
        "kind",
        "pending_tool",
        "result",
        "run_id",
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


HookHandler = Callable[[HookContext], object]
"""A hook handler: ``handler(context)``, sync or async; its return value is ignored."""


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
        self._handlers: dict[HookKind, list[HookHandler]] = {}

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
        self._handlers.setdefault(hook, []).append(handler)

    def handlers(self, kind: HookKind) -> tuple[HookHandler, ...]:
        """The handlers of ``kind``, in call order."""
        return tuple(self._handlers.get(kind, ()))

    def __contains__(self, kind: object) -> bool:
        return bool(self._handlers.get(kind)) if isinstance(kind, HookKind) else False

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
