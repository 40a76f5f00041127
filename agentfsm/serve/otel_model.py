"""What the GenAI conventions want to know of the model an Agent calls, read once from it.

`model_facts` reads the request side of a chat span from the model object, by duck typing
(no model class is imported): its name (``gen_ai.request.model``), the provider
(``gen_ai.provider.name``: a ``provider`` attribute if the model has one, else known from its
class), where it is served (``server.address`` and ``server.port``, from a ``base_url``),
whether it streams (``gen_ai.request.stream``) and the request settings it sends
(``gen_ai.request.temperature``… from a ``settings`` mapping or object, or attributes of
those names).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from opentelemetry.util.types import AttributeValue

__all__ = ["ModelFacts", "model_facts"]

_PROVIDERS = {
    "OpenAIModel": "openai",
    "OpenAIResponsesModel": "openai",
    "AnthropicModel": "anthropic",
    "ScriptedModel": "agentfsm.scripted",
}
"""Providers known by the model's class (the conventions' well-known values where one fits)."""

_OPENAI = "https://api.openai.com/v1"

_FLOATS = {
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "top_k": "gen_ai.request.top_k",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
}
_INTS = {
    "max_tokens": "gen_ai.request.max_tokens",
    "max_output_tokens": "gen_ai.request.max_tokens",
    "max_completion_tokens": "gen_ai.request.max_tokens",
    "seed": "gen_ai.request.seed",
}
_STOPS = ("stop", "stop_sequences")
_CHOICES = ("n", "choice_count")


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """The request side of a model's chat spans."""

    request_model: str | None = None
    """``gen_ai.request.model``: the model asked for (None: not known)."""
    provider: str = "_OTHER"
    """``gen_ai.provider.name``."""
    stream: bool = False
    """``gen_ai.request.stream``: set on the spans only when True."""
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    """The other request attributes: server address and port, settings."""

    def request(self) -> dict[str, AttributeValue]:
        """The attributes every chat and agent span of this model carries."""
        found: dict[str, AttributeValue] = {"gen_ai.provider.name": self.provider}
        if self.request_model:
            found["gen_ai.request.model"] = self.request_model
        found.update(self.attributes)
        return found


def _provider(model: object) -> str:
    given = getattr(model, "provider", None)
    if isinstance(given, str) and given:
        return given
    known = _PROVIDERS.get(type(model).__name__)
    if known is not None:
        return known
    return type(model).__module__.partition(".")[0] or "_OTHER"


def _server(model: object, provider: str) -> dict[str, AttributeValue]:
    base = getattr(model, "base_url", None) or getattr(model, "_base_url", None)
    if base is None and provider == "openai":
        base = os.environ.get("OPENAI_BASE_URL") or _OPENAI
    if not isinstance(base, str) or not base:
        return {}
    where = urlsplit(base)
    if not where.hostname:
        return {}
    port = where.port or (443 if where.scheme == "https" else 80)
    return {"server.address": where.hostname, "server.port": port}


def _setting(settings: object, name: str) -> object:
    if isinstance(settings, Mapping):
        return settings.get(name)
    return getattr(settings, name, None)


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _stops(value: object) -> tuple[str, ...] | None:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def _from(source: object) -> dict[str, AttributeValue]:
    found: dict[str, AttributeValue] = {}
    for name, key in _FLOATS.items():
        value = _setting(source, name)
        if _number(value):
            found.setdefault(key, float(value))  # type: ignore[arg-type]  # _number checked
    for name, key in _INTS.items():
        value = _setting(source, name)
        if _number(value) and isinstance(value, int):
            found.setdefault(key, value)
    for name in _STOPS:
        stops = _stops(_setting(source, name))
        if stops is not None:
            found.setdefault("gen_ai.request.stop_sequences", stops)
    for name in _CHOICES:
        value = _setting(source, name)
        if _number(value) and isinstance(value, int) and value != 1:
            found.setdefault("gen_ai.request.choice.count", value)
    return found


def _settings(model: object) -> dict[str, AttributeValue]:
    """The request settings: the model's ``settings`` first, then its own attributes."""
    settings = getattr(model, "settings", None)
    found = _from(settings) if settings is not None else {}
    for key, value in _from(model).items():
        found.setdefault(key, value)
    return found


def model_facts(model: object, provider: str | None = None) -> ModelFacts:
    """What the chat spans of ``model`` say of the request (see the module).

    Args:
        model: The Agent's model.
        provider: ``gen_ai.provider.name`` if the model's own is not the right one (a
            compatible server of another provider behind ``OpenAIModel``).
    """
    name = getattr(model, "name", None)
    chosen = provider or _provider(model)
    stream = getattr(model, "stream", None)
    if not isinstance(stream, bool):
        stream = getattr(model, "_stream", False)
    return ModelFacts(
        request_model=name if isinstance(name, str) and name else None,
        provider=chosen,
        stream=stream is True,
        attributes={**_server(model, chosen), **_settings(model)},
    )
