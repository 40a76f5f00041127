"""Models: the `Model` protocol and its implementations.

`OpenAIModel` talks to the chat completions API (OpenAI or any compatible server) with
transient failures retried under a `RetryPolicy`.
"""

from __future__ import annotations

from agentfsm.llm.base import (
    FinishReason,
    Model,
    ModelResponse,
    RetryListener,
    RetryNotice,
    Usage,
)
from agentfsm.llm.openai_model import API_KEY_VARIABLE, OpenAIModel, Sleep
from agentfsm.llm.retry import RetryPolicy, is_transient_status, retry_after

__all__ = [
    "API_KEY_VARIABLE",
    "FinishReason",
    "Model",
    "ModelResponse",
    "OpenAIModel",
    "RetryListener",
    "RetryNotice",
    "RetryPolicy",
    "Sleep",
    "Usage",
    "is_transient_status",
    "retry_after",
]
