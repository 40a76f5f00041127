"""`Tool` and `@tool`: a function (sync or async) declared as something the model may call."""

from __future__ import annotations

import copy
import inspect
import json
import math
import re
from collections.abc import Callable
from typing import Generic, Literal, ParamSpec, TypeVar, overload

from agentfsm import _checks as checks
from agentfsm.errors import InvalidToolNameError, ToolDefinitionError
from agentfsm.states.json import JSONObject
from agentfsm.tools.arguments import ArgumentParser
from agentfsm.tools.policy import ToolPolicy
from agentfsm.tools.schema import (
    Signature,
    description_of,
    empty_signature,
    explicit_signature,
    generated_signature,
)

P = ParamSpec("P")
R = TypeVar("R", covariant=True)

NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"
"""What a tool name must match (the chat completions API's rule)."""
_NAME = re.compile(NAME_PATTERN)

PolicyName = Literal["allow", "require_approval", "deny"]
"""A `ToolPolicy` by its value, as ``@tool(policy="require_approval")`` may spell it."""


class Tool(Generic[P, R]):
    """A function the model may call, with its name, description, schema and options.

    Calling the tool object calls the function directly (no checks), so a decorated
    function stays usable and testable as a function.

    Args:
        function: The body, sync or async. Optional for a client-side tool, whose result
            the application supplies; its signature, if given, still defines the schema.
        name: The name the model calls it by; the function's name by default. It must
            match ``^[a-zA-Z0-9_-]{1,64}$``.
        description: What the tool does, for the model; the docstring (up to its
            ``Args:`` section) by default.
        parameters: An explicit JSON Schema (draft 2020-12) for the arguments object,
            checked against the metaschema now. By default the schema is generated from
            the function's type hints with pydantic, with ``additionalProperties: false``.
        policy: Whether calls run freely, need the application's approval, or never run.
        client_side: The application runs the tool and supplies its result with
            `Decision.output`; the body, if any, never runs.
        idempotent: Running a call twice has the same effect as once: it may be retried,
            and re-run after a crash (the contract's I11).
        timeout: Seconds a call may take before it ends with status ``timeout``; None for
            no limit. A sync body with a timeout runs in a worker thread, which cannot be
            killed: after its timeout it runs on, and its result is discarded.
        retry_on: Exception types after which an idempotent tool's call is tried again
            (``TimeoutError`` includes its timeouts). Ignored unless ``idempotent``.

    Raises:
        InvalidToolNameError: The name does not match the pattern.
        ToolSchemaError: The explicit schema is not a valid object schema.
        ToolDefinitionError: The signature cannot be described as JSON Schema, or an
            option is out of range.
    """

    __slots__ = (
        "_offered",
        "_parser",
        "_plain_parser",
        "_schema_text",
        "_signature",
        "client_side",
        "description",
        "function",
        "idempotent",
        "is_async",
        "name",
        "policy",
        "retry_on",
        "timeout",
    )

    def __init__(
        self,
        function: Callable[P, R] | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: JSONObject | None = None,
        policy: ToolPolicy | PolicyName = ToolPolicy.ALLOW,
        client_side: bool = False,
        idempotent: bool = False,
        timeout: float | None = None,
        retry_on: tuple[type[Exception], ...] = (),
    ) -> None:
        if function is not None and not callable(function):
            raise TypeError(
                f"function must be a callable (or None for a client-side tool), not "
                f"{checks.given(function)}"
            )
        self.function = function
        """The body (None for a client-side tool declared without one)."""
        self.name = _name_of(function, name)
        _check_options(
            self.name, description, parameters, policy, client_side, idempotent, timeout, retry_on
        )
        """The name the model calls the tool by."""
        self.description = (
            description
            if description is not None
            else (description_of(function) if function is not None else "")
        )
        """What the tool does, as the model is told."""
        self.policy = ToolPolicy(policy)
        """Whether its calls run freely, need approval, or never run."""
        self.client_side = client_side
        """The application supplies its results; no body runs."""
        self.idempotent = idempotent
        """Safe to retry and to re-run after a crash."""
        self.timeout = _check_timeout(self.name, timeout)
        """Seconds a call may take; None for no limit."""
        self.retry_on = _check_retry_on(self.name, retry_on)
        """Exception types that make an idempotent tool's call run again."""
        if function is None and not client_side:
            raise ToolDefinitionError(
                self.name, "only a client-side tool may be declared without a function"
            )
        self.is_async = function is not None and _is_async(function)
        """Whether the body is a coroutine function (awaited rather than called)."""
        self._signature = _signature_of(self.name, function, parameters)
        self._parser = ArgumentParser(self.name, self._signature)
        # The parser, for the ToolSystem's straight-line call path, when the body takes no
        # context (None: the general path binds it).
        self._plain_parser = self._parser if self._signature.context_parameter is None else None
        self._schema_text = _json_copyable(self._signature.schema)
        self._offered: tuple[str, str, JSONObject] | None = None

    @property
    def parameters(self) -> JSONObject:
        """The JSON Schema of the arguments (a copy: changing it changes nothing)."""
        # The schema is offered to the model at every iteration: parsing its JSON text is
        # a deep copy about 20 times cheaper than copy.deepcopy.
        if self._schema_text is None:
            return copy.deepcopy(self._signature.schema)
        copied: JSONObject = json.loads(self._schema_text)
        return copied

    @property
    def context_parameter(self) -> str | None:
        """The parameter that receives the `ToolContext`, if the body declares one."""
        return self._signature.context_parameter

    @property
    def arguments(self) -> ArgumentParser:
        """The checks that turn a call's argument text into the body's keyword arguments."""
        return self._parser

    def to_openai(self) -> JSONObject:
        """The tool in the chat completions form: ``{"type": "function", "function": …}``."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def offered(self) -> JSONObject:
        """`to_openai`, built once and shared: by every registry and run offering the tool.

        Treat it as read-only. Built again if the tool's name or description changed.
        """
        cached = self._offered
        if cached is None or cached[0] != self.name or cached[1] != self.description:
            cached = (self.name, self.description, self.to_openai())
            self._offered = cached
        return cached[2]

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the function directly: no checks, no timeout, no retries.

        Raises:
            ToolDefinitionError: The tool is client-side and has no function.
        """
        if self.function is None:
            raise ToolDefinitionError(self.name, "it is client-side and has no function to call")
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        options = f"policy={self.policy.value!r}"
        if self.client_side:
            options += ", client_side=True"
        if self.idempotent:
            options += ", idempotent=True"
        if self.timeout is not None:
            options += f", timeout={self.timeout!r}"
        return f"Tool({self.name!r}, {options})"


def _json_copyable(schema: JSONObject) -> str | None:
    """The schema's JSON text, when parsing it gives back an equal schema; else None.

    A schema holding something JSON turns into something else (a tuple, a non-string key)
    is left to ``copy.deepcopy``, so that the copy stays equal to the original.
    """
    try:
        text = json.dumps(schema, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return text if json.loads(text) == schema else None  # [1] != (1,): tuples fall back


def _name_of(function: Callable[..., object] | None, name: str | None) -> str:
    if name is None:
        if function is None:
            raise ToolDefinitionError("?", "a tool without a function needs name=...")
        name = getattr(function, "__name__", type(function).__name__)
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidToolNameError(str(name), NAME_PATTERN)
    return name


def _check_options(
    name: str,
    description: object,
    parameters: object,
    policy: object,
    client_side: object,
    idempotent: object,
    timeout: object,
    retry_on: object,
) -> None:
    """Refuse a wrong option with a `ToolDefinitionError` naming it, before anything is built."""
    try:
        checks.text("description", description, empty=True, optional=True)
        if parameters is not None and not isinstance(parameters, dict):
            checks.refuse_type("parameters", parameters, "a JSON Schema object (a dict) or None")
        checks.choice("policy", policy, [p.value for p in ToolPolicy])
        checks.flag("client_side", client_side)
        checks.flag("idempotent", idempotent)
        checks.seconds("timeout", timeout, optional=True)
        if not isinstance(retry_on, tuple):
            checks.refuse_type("retry_on", retry_on, "a tuple of Exception subclasses")
    except (TypeError, ValueError) as problem:
        raise ToolDefinitionError(name, str(problem)) from None


def _check_timeout(name: str, timeout: float | None) -> float | None:
    if timeout is not None and not (timeout > 0 and math.isfinite(timeout)):
        raise ToolDefinitionError(
            name, f"timeout must be a positive number of seconds or None, not {timeout!r}"
        )
    return timeout


def _check_retry_on(
    name: str, retry_on: tuple[type[Exception], ...]
) -> tuple[type[Exception], ...]:
    for kind in retry_on:
        if not (isinstance(kind, type) and issubclass(kind, Exception)):
            raise ToolDefinitionError(
                name,
                f"retry_on may name only Exception subclasses, not {kind!r} (cancellation "
                "and interrupts are never retried)",
            )
    return tuple(retry_on)


def _is_async(function: Callable[..., object]) -> bool:
    call = getattr(function, "__call__", None)  # noqa: B004 - an async __call__ counts too
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(call)


def _signature_of(
    name: str, function: Callable[..., object] | None, parameters: JSONObject | None
) -> Signature:
    if parameters is not None:
        return explicit_signature(name, parameters, function)
    if function is None:
        return empty_signature()
    return generated_signature(name, function)


@overload
def tool(function: Callable[P, R], /) -> Tool[P, R]: ...


@overload
def tool(
    function: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: JSONObject | None = None,
    policy: ToolPolicy | PolicyName = ToolPolicy.ALLOW,
    client_side: bool = False,
    idempotent: bool = False,
    timeout: float | None = None,
    retry_on: tuple[type[Exception], ...] = (),
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...


def tool(
    function: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: JSONObject | None = None,
    policy: ToolPolicy | PolicyName = ToolPolicy.ALLOW,
    client_side: bool = False,
    idempotent: bool = False,
    timeout: float | None = None,
    retry_on: tuple[type[Exception], ...] = (),
) -> Tool[P, R] | Callable[[Callable[P, R]], Tool[P, R]]:
    """Declare a function as a tool: ``@tool`` bare, or ``@tool(option=...)``.

    The options are those of `Tool`; the schema is generated once, here.

    Example:
        >>> @tool(timeout=5.0)
        ... def add(a: int, b: int) -> int:
        ...     '''Add two integers.'''
        ...     return a + b
        >>> add.name, add.description, add(2, 3)
        ('add', 'Add two integers.', 5)
    """
    # The options are checked now, where they are written, not when a function arrives.
    _check_options(
        name if isinstance(name, str) else "?",
        description,
        parameters,
        policy,
        client_side,
        idempotent,
        timeout,
        retry_on,
    )

    def declare(body: Callable[P, R]) -> Tool[P, R]:
        return Tool(
            body,
            name=name,
            description=description,
            parameters=parameters,
            policy=policy,
            client_side=client_side,
            idempotent=idempotent,
            timeout=timeout,
            retry_on=retry_on,
        )

    if function is not None:
        return declare(function)
    return declare
