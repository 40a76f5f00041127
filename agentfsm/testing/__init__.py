"""Helpers for testing agents built with agentfsm.

`LoopbackOpenAIServer` is an OpenAI-compatible chat completions server on 127.0.0.1 that
answers from a script of `Reply` steps and faults, for end-to-end tests with no network.
"""

from __future__ import annotations

from agentfsm.testing.openai_server import (
    Disconnect,
    EmptyChoices,
    ErrorResponse,
    LoopbackOpenAIServer,
    MalformedBody,
    RecordedRequest,
    Reply,
    Step,
    TruncatedStream,
)

__all__ = [
    "Disconnect",
    "EmptyChoices",
    "ErrorResponse",
    "LoopbackOpenAIServer",
    "MalformedBody",
    "RecordedRequest",
    "Reply",
    "Step",
    "TruncatedStream",
]
