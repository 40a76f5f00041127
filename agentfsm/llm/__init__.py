"""Models: the `Model` protocol and its implementations.

`OpenAIModel` talks to the chat completions API (OpenAI or any compatible server),
`OpenAIResponsesModel` to OpenAI's Responses API and `AnthropicModel` to Anthropic's
Messages API (the ``anthropic`` extra), each with transient failures retried under a
`RetryPolicy`; `ScriptedModel` replays a script, for
tests and the demo; `ModelSettings` are what a call asks for besides the conversation
(temperature, max_tokens, tool_choice…); `resolve_model` turns a spec such as
``"scripted:demo"`` into a model.
"""

from __future__ import annotations

from agentfsm.llm._calling import Sleep
from agentfsm.llm.anthropic_model import AnthropicModel
from agentfsm.llm.base import (
    DeltaKind,
    DeltaListener,
    FinishReason,
    Model,
    ModelDelta,
    ModelResponse,
    RetryListener,
    RetryNotice,
    StreamingModel,
    StructuredModel,
    Usage,
    check_finish,
)
from agentfsm.llm.openai_model import API_KEY_VARIABLE, OpenAIModel
from agentfsm.llm.resolve import DEMO_SPEC, resolve_model
from agentfsm.llm.responses_model import OpenAIResponsesModel
from agentfsm.llm.retry import RetryPolicy, is_transient_status, retry_after
from agentfsm.llm.scripted import Responder, ScriptedModel, ScriptedRequest, ScriptStep
from agentfsm.llm.settings import ModelSettings, SettingsLike

__all__ = [
    "API_KEY_VARIABLE",
    "DEMO_SPEC",
    "AnthropicModel",
    "DeltaKind",
    "DeltaListener",
    "FinishReason",
    "Model",
    "ModelDelta",
    "ModelResponse",
    "ModelSettings",
    "OpenAIModel",
    "OpenAIResponsesModel",
    "Responder",
    "RetryListener",
    "RetryNotice",
    "RetryPolicy",
    "ScriptStep",
    "ScriptedModel",
    "ScriptedRequest",
    "SettingsLike",
    "Sleep",
    "StreamingModel",
    "StructuredModel",
    "Usage",
    "check_finish",
    "is_transient_status",
    "resolve_model",
    "retry_after",
]
