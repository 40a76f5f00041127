"""Models: the `Model` protocol and its implementations."""

from __future__ import annotations

from agentfsm.llm.base import (
    FinishReason,
    Model,
    ModelResponse,
    RetryListener,
    RetryNotice,
    Usage,
)

__all__ = ["FinishReason", "Model", "ModelResponse", "RetryListener", "RetryNotice", "Usage"]
