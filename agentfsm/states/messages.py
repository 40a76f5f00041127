"""Conversation messages in the OpenAI chat format, and the tool calls they carry."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentfsm.states.content import ContentPart
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.unchecked import (
    inline_fields,
    new,
    put,
    put_extra,
    put_fields_set,
    put_private,
    sealed,
    twin,
)

Role = Literal["system", "user", "assistant", "tool"]
"""Who a message is from: the system prompt, the user, the model, or a tool's result."""

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class ToolCall(BaseModel):
    """A function call the model asked for, exactly as it sent it."""

    model_config = _FROZEN

    id: str = Field(min_length=1)
    """The call's id, unique within its assistant message; its tool message answers it."""
    name: str
    """The name of the tool the model asked for (it may not exist: that is checked later)."""
    arguments: str = "{}"
    """The arguments as the JSON text the model produced (it may be malformed)."""

    @property
    def parsed_arguments(self) -> JSONObject:
        """The arguments as a dict (``arguments`` is the JSON text the model sent).

        Example:
            >>> ToolCall(id="c1", name="refund", arguments='{"order": "A-7"}').parsed_arguments
            {'order': 'A-7'}

        Raises:
            ValueError: ``arguments`` is not the JSON text of an object (the model sent
                malformed arguments; the run answers such a call with an error result).
        """
        try:
            parsed = json.loads(self.arguments or "{}")
        except ValueError as error:
            raise ValueError(
                f"the arguments of tool call {self.id!r} ({self.name!r}) are not JSON: "
                f"{self.arguments!r} ({error})"
            ) from None
        if not isinstance(parsed, dict):
            raise ValueError(
                f"the arguments of tool call {self.id!r} ({self.name!r}) are not a JSON "
                f"object: {self.arguments!r}"
            )
        return parsed

    def to_openai(self) -> JSONObject:
        """This call in the form of the chat completions API."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


_CALL_GIVEN = {"id", "name", "arguments"}
"""The fields `tool_call` gives (shared: see `agentfsm.states.unchecked.sealed`)."""
_ToolCallTwin = twin(ToolCall)
"""`ToolCall`'s layout with plain attribute stores (see `agentfsm.states.unchecked.twin`)."""


def tool_call(call_id: str, name: str, arguments: str) -> ToolCall:
    """``ToolCall(id=call_id, name=name, arguments=arguments)``, unvalidated when it may be.

    A model's client makes one per call it is asked for, and a run keeps each in its
    assistant message: pydantic's validated call (its dict, and a set of the fields given of
    its own) is about 480 bytes, this one about 190. Values that are not plain text (or an
    empty id) go through the validated constructor: the same call, or the same refusal.

    Raises:
        pydantic.ValidationError: As ``ToolCall(...)`` would.
    """
    if type(call_id) is not str or not call_id or type(name) is not str:
        return ToolCall(id=call_id, name=name, arguments=arguments)
    if type(arguments) is not str:
        return ToolCall(id=call_id, name=name, arguments=arguments)
    # An instance of the twin, each field and slot a plain store, in field order (see
    # agentfsm.states.unchecked), made a `ToolCall` (which gives it a ``__dict__``).
    call = _ToolCallTwin()
    call.id = call_id
    call.name = name
    call.arguments = arguments
    call.__pydantic_fields_set__ = _CALL_GIVEN
    call.__pydantic_extra__ = None
    call.__pydantic_private__ = None
    call.__class__ = ToolCall
    made: ToolCall = call
    return made


@inline_fields
class Message(BaseModel):
    """One message of a conversation: system, user, assistant (maybe with tool calls) or tool.

    Build them with the constructors `system`, `user`, `assistant` and `tool`; a message whose
    fields do not fit its role (tool calls on a user message, a tool message without the id
    of the call it answers) is refused with a `pydantic.ValidationError`.
    """

    model_config = _FROZEN

    role: Role
    """Who the message is from."""
    content: str | None = None
    """The text; None only for an assistant message that carries tool calls instead."""
    tool_calls: tuple[ToolCall, ...] = ()
    """The calls an assistant message asks for, in order (empty for other roles)."""
    tool_call_id: str | None = None
    """For a tool message: the id of the call it answers."""
    name: str | None = None
    """For a tool message: the tool's name (optional, for readability of logs)."""
    parts: tuple[ContentPart, ...] = Field(default=(), exclude_if=lambda parts: not parts)
    """For a tool message: the media its tool returned besides its text (images, audio,
    files), in order; each model client sends them in its API's own form (see
    `agentfsm.states.content`). Left out of the JSON when there are none."""

    @model_validator(mode="after")
    def _fits_its_role(self) -> Message:
        if self.tool_calls and self.role != "assistant":
            raise ValueError(f"only assistant messages carry tool_calls, not {self.role!r}")
        if (self.tool_call_id is None) != (self.role != "tool"):
            raise ValueError("a tool message, and only a tool message, has a tool_call_id")
        if self.content is None and not (self.role == "assistant" and self.tool_calls):
            raise ValueError(
                f"a {self.role!r} message needs content (only an assistant message with "
                "tool calls may omit it)"
            )
        if self.parts and (self.role != "tool" or any(part.type == "text" for part in self.parts)):
            raise ValueError("only a tool message carries parts, and only media parts")
        ids = [call.id for call in self.tool_calls]
        if len(set(ids)) != len(ids):
            raise ValueError(f"tool call ids must be unique within a message, got {ids!r}")
        return self

    @classmethod
    def system(cls, content: str) -> Message:
        """A system prompt."""
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str) -> Message:
        """A user's input."""
        return cls(role="user", content=content)

    @classmethod
    def assistant(
        cls, content: str | None = None, tool_calls: tuple[ToolCall, ...] = ()
    ) -> Message:
        """A model response: text, tool calls, or both."""
        return cls(role="assistant", content=content, tool_calls=tool_calls)

    @classmethod
    def tool(
        cls,
        tool_call_id: str,
        content: str,
        name: str | None = None,
        parts: tuple[ContentPart, ...] = (),
    ) -> Message:
        """The result of one tool call, answering ``tool_call_id`` (with its media, if any)."""
        if parts:
            return cls(
                role="tool", tool_call_id=tool_call_id, content=content, name=name, parts=parts
            )
        return cls(role="tool", tool_call_id=tool_call_id, content=content, name=name)

    def to_openai(self) -> JSONObject:
        """This message in the form of the chat completions API, its text only.

        A tool message's ``parts`` are not in it: the API's tool messages take text only
        (`agentfsm.OpenAIModel` sends the images in a user message after the round).
        """
        out: JSONObject = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out


_USER_GIVEN = {"role", "content"}
"""The fields `Message.user` gives (shared: see `sealed`)."""
_TOOL_GIVEN = {"role", "tool_call_id", "content", "name"}
"""The fields `Message.tool` gives (shared: see `sealed`)."""
_ASSISTANT_GIVEN = {"role", "content", "tool_calls"}
"""The fields `Message.assistant` gives."""


def user_message(content: str) -> Message:
    """`Message.user`, built without validation: for text already checked to be a str."""
    message: Message = new(Message)
    put(message, "role", "user")  # (in the class's field order: see agentfsm.states.unchecked)
    put(message, "content", content)
    put(message, "tool_calls", ())
    put(message, "tool_call_id", None)
    put(message, "name", None)
    put(message, "parts", ())
    return sealed(message, _USER_GIVEN)


def tool_message(tool_call_id: str, content: str, name: str | None = None) -> Message:
    """`Message.tool`, built without validation: for the answer to a validated `ToolCall`.

    The caller guarantees the types (``tool_call_id`` and ``content`` are str, ``name`` a
    str or None), which is all a tool message's validation checks.
    """
    message: Message = new(Message)
    put(message, "role", "tool")  # (in the class's field order: see agentfsm.states.unchecked)
    put(message, "content", content)
    put(message, "tool_calls", ())
    put(message, "tool_call_id", tool_call_id)
    put(message, "name", name)
    put(message, "parts", ())
    put_fields_set(message, _TOOL_GIVEN)  # (`sealed`, inlined: one call less)
    put_extra(message, None)
    put_private(message, None)
    return message


def assistant_message(content: str | None, tool_calls: tuple[ToolCall, ...]) -> Message:
    """`Message.assistant`, validated by hand: the same message, or the same refusal.

    A model's reply becomes one of these every iteration; its role rules are checked here
    directly (content or calls, unique call ids), and anything unusual (calls that are not
    a tuple of `ToolCall`) goes through the validated constructor.

    Raises:
        pydantic.ValidationError: As `Message.assistant` would.
    """
    if (
        type(tool_calls) is not tuple
        or (content is None and not tool_calls)
        or (content is not None and type(content) is not str)
        or not _distinct_calls(tool_calls)
    ):
        return Message.assistant(content, tool_calls)
    message: Message = new(Message)
    put(message, "role", "assistant")  # (in field order: see agentfsm.states.unchecked)
    put(message, "content", content)
    put(message, "tool_calls", tool_calls)
    put(message, "tool_call_id", None)
    put(message, "name", None)
    put(message, "parts", ())
    return sealed(message, _ASSISTANT_GIVEN)


def _distinct_calls(tool_calls: tuple[object, ...]) -> bool:
    """Whether every one of ``tool_calls`` is a `ToolCall`, each with an id of its own."""
    ids = set()
    for call in tool_calls:  # (a loop, not any() over a generator: no call per item)
        if type(call) is not ToolCall:
            return False
        ids.add(call.id)
    return len(ids) == len(tool_calls)


def message_json(message: Message) -> JSONObject:
    """``message.model_dump(mode="json")``, built directly (a test pins them equal).

    A run records every message it adds as JSON; this is a third of pydantic's cost.
    """
    if type(message) is not Message:  # a subclass may serialise differently
        return message.model_dump(mode="json")
    calls: list[JSONValue] = []
    # (a loop, not a comprehension: that costs a call; a `ToolCall`'s fields are its
    # ``__dict__``, all text, in field order: copied at once)
    for call in message.tool_calls:
        if type(call) is ToolCall:
            calls.append(call.__dict__.copy())
        else:  # a subclass: only the declared fields, as pydantic dumps it
            calls.append({"id": call.id, "name": call.name, "arguments": call.arguments})
    dumped: JSONObject = {
        "role": message.role,
        "content": message.content,
        "tool_calls": calls,
        "tool_call_id": message.tool_call_id,
        "name": message.name,
    }
    if message.parts:  # (left out when empty, as pydantic leaves it out)
        dumped["parts"] = [part.model_dump(mode="json") for part in message.parts]
    return dumped
