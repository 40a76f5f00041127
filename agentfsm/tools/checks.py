"""The argument checks of `ToolRegistry` and `ToolSystem`: bad input refused where it enters.

Each raises `TypeError` or `ValueError` naming the argument, what was given and what is
allowed, before the registry or the round changes anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from agentfsm import _checks as checks
from agentfsm.states.messages import Message, ToolCall
from agentfsm.tools.arguments import ArgumentLimits
from agentfsm.tools.context import ToolContext
from agentfsm.tools.hooks import Hooks
from agentfsm.tools.policy import Decision


def tool_items(name: str, value: object) -> None:
    """Check the tools given to a registry: an iterable of tools or functions, not a str.

    Raises:
        TypeError: A string (it would be read letter by letter), a single tool, or
            something that is not iterable.
    """
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        checks.refuse_type(name, value, "an iterable of tools or functions (a list or tuple)")


def enabled_names(value: object) -> None:
    """Check ``enabled``: None, or a collection of tool names (a str is refused).

    Raises:
        TypeError: A string, or not a collection of str.
    """
    checks.names("enabled", value, optional=True)


def tool_item(name: str, value: object) -> None:
    """Check one tool to register: a `Tool` or a plain function.

    Raises:
        TypeError: Not callable.
    """
    if not callable(value):
        checks.refuse_type(name, value, "a Tool or a function")


def system_options(
    hooks: object,
    observer: object,
    limits: object,
    max_attempts: object,
    sleep: object,
    cancel_grace: object,
    clocks: Mapping[str, object],
) -> None:
    """Check `ToolSystem`'s options (all but ``tools``, which its registry checks).

    Raises:
        TypeError: An option of the wrong type.
        ValueError: ``max_attempts`` < 1 or ``cancel_grace`` negative.
    """
    if hooks is not None and not isinstance(hooks, Hooks):
        checks.refuse_type("hooks", hooks, "a Hooks or None")
    checks.callable_or_none("observer", observer)
    if limits is not None and not isinstance(limits, ArgumentLimits):
        checks.refuse_type("limits", limits, "an ArgumentLimits or None")
    checks.whole("max_attempts", max_attempts, minimum=1)
    checks.callable_or_none("sleep", sleep)
    checks.seconds("cancel_grace", cancel_grace, zero=True)
    for name, clock in clocks.items():
        if not callable(clock):
            checks.refuse_type(name, clock, "a callable returning seconds")


def _sequence_of(name: str, value: object, kind: type) -> None:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        checks.refuse_type(name, value, f"a sequence of {kind.__name__}")
    for item in value:
        if not isinstance(item, kind):
            raise TypeError(
                f"{name} must be a sequence of {kind.__name__}; it holds {checks.given(item)}"
            )


def _decisions(value: object) -> None:
    if value is None:
        return
    if not isinstance(value, Mapping):
        checks.refuse_type("decisions", value, "a mapping of call id to Decision")
    for key, decision in value.items():
        if not isinstance(key, str) or not isinstance(decision, Decision):
            raise TypeError(
                "decisions must be a mapping of call id (str) to Decision; it maps "
                f"{checks.given(key)} to {checks.given(decision)}"
            )


def round_inputs(
    calls: Sequence[ToolCall],
    context: object,
    decisions: object,
    enabled: object,
    messages: object,
) -> tuple[ToolCall, ...]:
    """Check the inputs of one round; returns the calls as a tuple.

    Raises:
        TypeError: ``calls`` is not a sequence of `ToolCall`, ``context`` not a
            `ToolContext`, ``decisions`` not a mapping of call id to `Decision`, ``enabled``
            not a collection of names, or ``messages`` not a sequence of `Message`.
    """
    _sequence_of("calls", calls, ToolCall)
    if not isinstance(context, ToolContext):
        checks.refuse_type("context", context, "a ToolContext")
    _decisions(decisions)
    enabled_names(enabled)
    _sequence_of("messages", messages, Message)
    return tuple(calls)
