"""`ModelSettings`: what a model call asks of the model besides the conversation.

Sampling (``temperature``, ``top_p``, ``seed``), length (``max_tokens``, ``stop``), tool
use (``tool_choice``, ``parallel_tool_calls``), reasoning (``reasoning_effort``) and the
request's ``extra_headers`` / ``extra_body``. An `Agent` takes them for every call of its
run, and each turn may override some (``submit(text, settings=...)``): the turn's override
is merged over the Agent's, field by field, and is forgotten when the turn ends.

Settings are checked when they are made (`ModelSettings.of`): a temperature of 7 or a
``tool_choice`` that is no tool name is a `ModelSettingsError` naming the field and what it
accepts. Each model call's settings are recorded in its ``llm_call`` trace entry and in its
``model_replied`` event, so ``inspect`` and replay show what was asked.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentfsm.errors import ModelSettingsError
from agentfsm.llm.base import Model
from agentfsm.states.events import Event
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.states.names import MachineName

ToolChoiceMode = Literal["auto", "required", "none"]
"""``auto``: the model decides; ``required``: it must call a tool; ``none``: it must not."""

ReasoningEffort = Literal["minimal", "low", "medium", "high"]
"""How hard a reasoning model thinks before it answers."""

TOOL_CHOICE_MODES: tuple[str, ...] = ("auto", "required", "none")
"""The ``tool_choice`` words; any other value must name one offered tool."""

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")

_ALLOWED = {
    "temperature": "a number from 0 to 2",
    "top_p": "a number from 0 to 1",
    "max_tokens": "a whole number of tokens, at least 1",
    "stop": "a string or a list of 1 to 4 non-empty strings",
    "seed": "a whole number",
    "tool_choice": "'auto', 'required', 'none' or the name of one offered tool",
    "parallel_tool_calls": "True or False",
    "reasoning_effort": "'minimal', 'low', 'medium' or 'high'",
    "extra_headers": "a mapping of header names to string values",
    "extra_body": "a JSON object merged into the request body",
}
"""What each field accepts, for the errors."""


class ModelSettings(BaseModel):
    """What a model call asks for besides the conversation; None leaves the model's default.

    Example:
        >>> base = ModelSettings.of({"temperature": 0.2, "max_tokens": 500})
        >>> turn = ModelSettings.of({"temperature": 0.0, "tool_choice": "required"})
        >>> base.merged(turn).to_json()
        {'temperature': 0.0, 'max_tokens': 500, 'tool_choice': 'required'}
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    temperature: float | None = Field(default=None, ge=0, le=2, allow_inf_nan=False)
    """Sampling temperature, 0 (most deterministic) to 2."""
    top_p: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    """Nucleus sampling: the probability mass to sample from, 0 to 1."""
    max_tokens: int | None = Field(default=None, ge=1)
    """The most tokens the answer may have (an answer cut there fails with ``length``)."""
    stop: str | tuple[str, ...] | None = None
    """Up to 4 sequences at which the model stops."""
    seed: int | None = None
    """Ask for deterministic sampling (best effort, where the provider has it)."""
    tool_choice: str | None = None
    """``auto``, ``required``, ``none``, or the name of the one tool the model must call."""
    parallel_tool_calls: bool | None = None
    """Whether the model may ask for several tool calls in one reply."""
    reasoning_effort: ReasoningEffort | None = None
    """For reasoning models: ``minimal``, ``low``, ``medium`` or ``high``."""
    extra_headers: dict[str, str] | None = None
    """HTTP headers added to the request (never recorded: they may hold secrets)."""
    extra_body: JSONObject | None = None
    """Fields merged into the request's JSON body, for options this class does not name."""

    if not TYPE_CHECKING:  # (type checkers keep pydantic's signature of the fields)

        def __init__(self, **data: object) -> None:
            """Checked like `of`: a wrong value is a `ModelSettingsError` naming the field."""
            try:
                super().__init__(**data)
            except ValidationError as error:
                raise _settings_error(error, data) from None

    @field_validator("stop")
    @classmethod
    def _stops(cls, value: str | tuple[str, ...] | None) -> str | tuple[str, ...] | None:
        stops = (value,) if isinstance(value, str) else value or ()
        if value is not None and (not 1 <= len(stops) <= 4 or not all(stops)):
            raise ValueError("give 1 to 4 non-empty stop sequences")
        return value

    @field_validator("tool_choice")
    @classmethod
    def _choice(cls, value: str | None) -> str | None:
        if value is not None and value not in TOOL_CHOICE_MODES and not _TOOL_NAME.match(value):
            raise ValueError("not a tool name")
        return value

    @classmethod
    def of(cls, settings: ModelSettings | Mapping[str, object] | None) -> ModelSettings | None:
        """``settings`` as checked `ModelSettings` (None stays None; a mapping is read).

        A list given for ``stop`` is taken as a tuple.

        Raises:
            ModelSettingsError: An unknown field, or a value a field does not accept (the
                message names the field, the value and what it accepts).
            TypeError: ``settings`` is neither `ModelSettings`, a mapping nor None.
        """
        if settings is None or isinstance(settings, ModelSettings):
            return settings
        if not isinstance(settings, Mapping):
            raise TypeError(
                "settings must be a ModelSettings, a mapping of its fields (e.g. "
                f"{{'temperature': 0.2}}) or None; got {type(settings).__name__}"
            )
        given: dict[str, Any] = dict(settings)
        stop = given.get("stop")
        if isinstance(stop, list):
            given["stop"] = tuple(stop)
        return cls(**given)  # (its __init__ names a wrong field)

    def merged(self, override: ModelSettings | None) -> ModelSettings:
        """These settings with each field ``override`` sets replacing this one's."""
        if override is None or not override.model_fields_set:
            return self
        if not self.model_fields_set:
            return override
        fields = {name: getattr(self, name) for name in self.model_fields_set}
        fields.update({name: getattr(override, name) for name in override.model_fields_set})
        return ModelSettings.model_validate(fields)

    def without_tool_choice(self) -> ModelSettings:
        """These settings without a ``tool_choice`` (the model's default then holds)."""
        fields = {name: getattr(self, name) for name in self.model_fields_set}
        fields.pop("tool_choice", None)
        return ModelSettings.model_validate(fields)

    def to_json(self) -> JSONObject:
        """The fields set (to a value other than None), as JSON, in field order.

        ``extra_headers`` is left out (headers may carry credentials, and the log is
        persisted); its header names are recorded instead, as ``extra_header_names``.
        """
        dumped: dict[str, JSONValue] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if value is None:
                continue
            if name == "extra_headers":
                dumped["extra_header_names"] = sorted(value)
            elif isinstance(value, tuple):
                dumped[name] = list(value)
            else:
                dumped[name] = value
        return dumped

    def __bool__(self) -> bool:
        """Whether any field is set to a value."""
        return any(getattr(self, name) is not None for name in type(self).model_fields)


SettingsLike = ModelSettings | Mapping[str, object]
"""Model settings, or a mapping of their fields (``{"temperature": 0.2}``)."""

NO_SETTINGS = ModelSettings()
"""Settings that ask for nothing: each model's defaults."""


def _settings_error(error: ValidationError, given: Mapping[str, object]) -> ModelSettingsError:
    first = error.errors()[0]
    field = str(first["loc"][0]) if first["loc"] else "settings"
    if first["type"] == "extra_forbidden":
        known = ", ".join(ModelSettings.model_fields)
        return ModelSettingsError(field, f"is not a model setting; known: {known}")
    allowed = _ALLOWED.get(field, "a valid value")
    return ModelSettingsError(field, f"is {given.get(field)!r}; expected {allowed}")


def tool_names(tools: Sequence[JSONObject]) -> frozenset[str]:
    """The names of tool schemas in the OpenAI ``tools=[...]`` form."""
    names = set()
    for schema in tools:
        function = schema.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if isinstance(name, str):
            names.add(name)
    return frozenset(names)


def check_tool_choice(settings: ModelSettings | None, offered: set[str] | frozenset[str]) -> None:
    """Refuse a ``tool_choice`` that names no tool of ``offered``, or any tool when none is.

    Raises:
        ModelSettingsError: The named tool is not offered to the model (``required`` with
            no tool offered too).
    """
    choice = settings.tool_choice if settings is not None else None
    if choice is None or choice in ("auto", "none"):
        return
    if choice == "required":
        if not offered:
            raise ModelSettingsError(
                "tool_choice", "is 'required' but no tool is offered to the model"
            )
        return
    if choice not in offered:
        names = ", ".join(sorted(offered)) or "none"
        raise ModelSettingsError(
            "tool_choice",
            f"is {choice!r}, which names no offered tool; expected 'auto', 'required', "
            f"'none' or one of the offered tools: {names}",
        )


"""Model settings, or a mapping of their fields (``{"temperature": 0.2}``)."""

CallSettings = tuple[ModelSettings, JSONObject]
"""A call's merged settings and their JSON (as recorded), or None for none."""


def takes_settings(model: Model) -> bool:
    """Whether ``model.complete`` takes a ``settings`` argument (or any keyword)."""
    declared = getattr(type(model), "complete", None)
    if inspect.isfunction(declared):  # (the usual case: read once per class)
        return _takes_settings(declared)
    return _takes_settings(model.complete)


@functools.lru_cache(maxsize=128)
def _takes_settings(complete: Callable[..., object]) -> bool:
    try:
        parameters = inspect.signature(complete).parameters
    except (TypeError, ValueError):
        return False
    return "settings" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


def checked(
    settings: SettingsLike | None, model: Model, offered: Collection[str] | None
) -> ModelSettings | None:
    """``settings`` checked for ``model`` and the tools ``offered`` (None: not known yet).

    Raises:
        ModelSettingsError: A field out of range, a ``tool_choice`` naming no offered tool,
            or settings for a model whose ``complete`` takes none.
        TypeError: ``settings`` is neither settings, a mapping nor None.
    """
    made = ModelSettings.of(settings)
    if not made:
        return None
    if not takes_settings(model):
        raise ModelSettingsError(
            next(iter(made.model_fields_set)),
            f"cannot be sent: model {model.name!r} ({type(model).__name__}) takes no "
            "settings (its complete() has no settings parameter)",
        )
    own_check = getattr(model, "check_settings", None)
    if callable(own_check):  # the settings this model's API cannot honour are refused
        own_check(made)
    if offered is not None:
        check_tool_choice(made, frozenset(offered))
    return made


def call_settings(agent: ModelSettings | None, turn: ModelSettings | None) -> CallSettings | None:
    """What each call of a turn asks for: ``turn`` merged over ``agent``, with its JSON."""
    merged = turn if agent is None else agent.merged(turn)
    if merged is None or not merged:
        return None
    return merged, merged.to_json()


def named_choice(settings: ModelSettings) -> str | None:
    """The tool a ``tool_choice`` names, if it names one."""
    choice = settings.tool_choice
    return None if choice is None or choice in TOOL_CHOICE_MODES else choice


def turn_override(events: Sequence[Event]) -> ModelSettings | None:
    """The override of the turn the log's last turn-opening ``submit`` carried, if any.

    Its ``extra_headers`` are not in the log (only their names): a restored turn goes on
    without them.
    """
    for event in reversed(events):
        if (
            event.machine == MachineName.RUN
            and event.event == "submit"
            and event.source != "busy"  # (not an input queued while busy)
        ):
            recorded = event.data.get("settings")
            if not isinstance(recorded, dict):
                return None
            fields = {k: v for k, v in recorded.items() if k != "extra_header_names"}
            return ModelSettings.of(fields)
    return None
