"""`resolve_model`: a model from a short spec such as ``"scripted:demo"``."""

from __future__ import annotations

from agentfsm.errors import ModelConfigError
from agentfsm.llm.base import Model
from agentfsm.llm.openai_model import OpenAIModel
from agentfsm.llm.scripted import ScriptedModel

DEMO_SPEC = "scripted:demo"
"""The spec of the built-in demo model, the embedded default."""


def resolve_model(spec: str | Model) -> Model:
    """The model a spec names; a `Model` is returned as it is.

    ``"scripted:demo"`` is `ScriptedModel.demo` (no network, no key);
    ``"openai:<model id>"`` is ``OpenAIModel("<model id>")`` (chat completions), and
    ``"openai-responses:<model id>"`` ``OpenAIResponsesModel("<model id>")`` (the Responses
    API), their key from ``OPENAI_API_KEY``; ``"anthropic:<model id>"`` is
    ``AnthropicModel("<model id>")`` (the ``anthropic`` extra), its key from
    ``ANTHROPIC_API_KEY``.

    Raises:
        ModelConfigError: The spec names no known model, or the OpenAI key is missing.
    """
    if not isinstance(spec, str):
        return spec
    if spec == DEMO_SPEC:
        return ScriptedModel.demo()
    provider, _, model_id = spec.partition(":")
    if provider == "openai" and model_id.strip():
        return OpenAIModel(model_id.strip())
    if provider == "openai-responses" and model_id.strip():
        from agentfsm.llm.responses_model import OpenAIResponsesModel

        return OpenAIResponsesModel(model_id.strip())
    if provider == "anthropic" and model_id.strip():
        from agentfsm.llm.anthropic_model import AnthropicModel

        return AnthropicModel(model_id.strip())
    raise ModelConfigError(
        spec,
        f"unknown model spec; use {DEMO_SPEC!r}, 'openai:<model id>' (e.g. "
        "'openai:gpt-4o-mini'), 'openai-responses:<model id>', 'anthropic:<model id>' or a "
        "Model instance such as OpenAIModel(..., base_url=...)",
    )
