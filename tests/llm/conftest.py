"""Fixtures for the model tests: a loopback server, a fake sleep, and a model pointed at it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pytest

from agentfsm.llm import ModelResponse, OpenAIModel, RetryNotice, RetryPolicy
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message
from agentfsm.stores.leases import settle
from agentfsm.testing import LoopbackOpenAIServer

API_KEY = "test-key"
POLICY = RetryPolicy(max_attempts=4, random=lambda: 0.0)
"""Four attempts, no jitter: computed waits are exactly 0.5, 1 and 2 s."""
QUESTION = (Message.system("Be brief."), Message.user("Weather in Paris?"))
WEATHER_TOOL: JSONObject = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@dataclass
class Harness:
    """A loopback server, and what the model under test did against it."""

    server: LoopbackOpenAIServer
    waits: list[float] = field(default_factory=list)
    """Every wait the model's retries asked its (fake) sleep for."""
    notices: list[RetryNotice] = field(default_factory=list)
    """Every retry reported to ``on_retry``."""
    now: float = 1000.0
    """The fake monotonic clock: only the fake sleep moves it."""

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now

    def model(
        self,
        *,
        stream: bool = False,
        timeout: float = 5.0,
        retry: RetryPolicy = POLICY,
        deadline: float | None = 120.0,
        api_key: str = API_KEY,
    ) -> OpenAIModel:
        return OpenAIModel(
            "gpt-test",
            base_url=self.server.url,
            api_key=api_key,
            timeout=timeout,
            retry=retry,
            stream=stream,
            sleep=self.sleep,
            deadline=deadline,
            clock=self.clock,
        )

    def complete(
        self,
        messages: Sequence[Message] = QUESTION,
        tools: Sequence[JSONObject] = (),
        *,
        stream: bool = False,
        timeout: float = 5.0,
        retry: RetryPolicy = POLICY,
        deadline: float | None = 120.0,
    ) -> ModelResponse:
        model = self.model(stream=stream, timeout=timeout, retry=retry, deadline=deadline)
        return asyncio.run(model.complete(messages, tools, on_retry=self.notices.append))


@pytest.fixture
def harness() -> Iterator[Harness]:
    with LoopbackOpenAIServer() as server:
        yield Harness(server)


@pytest.fixture(autouse=True)
def no_thread_outlives_the_test() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    settle()  # (the leases' renewing thread ends by itself once idle; now, for this check)
    # The stores' shared worker threads (agentfsm.stores.base) start on a store's first use
    # in the process and live as long as it, by design: the first test to use a store makes
    # them, which made this check fail whenever tests/llm ran without earlier store tests.
    leaked = [
        thread
        for thread in threading.enumerate()
        if thread not in before and not thread.name.startswith("agentfsm-store")
    ]
    assert leaked == []
