"""The agents the Temporal tests run, in-process and on workers (importable as factories).

The model is a pure function of the conversation (a `ScriptedModel` whose fallback
answers every call), so any worker, any process and the in-process Agent answer alike.
The user's words pick the script:

- ``weather <city>``: one idempotent tool call, then the answer;
- ``pay <n>``: a non-idempotent ``pay`` call that needs approval, then the answer;
- ``ask``: the ``ask_user`` tool, then the answer echoes the user's reply;
- ``slow``: a non-idempotent ``slow_pay`` call (sleeps; the crash tests kill it mid-call);
- ``hold``: a ``held_pay`` call that runs until the test releases it (`make_held_agent`);
- ``loop``: the weather tool again and again (until max_iterations);
- ``boom``: a tool whose body raises;
- ``fail``: the model call fails for good (a non-retryable model error);
- anything else: a plain answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Sequence

from agentfsm import Agent
from agentfsm.errors import ModelCallError
from agentfsm.llm.base import ModelResponse
from agentfsm.llm.scripted import ScriptedModel
from agentfsm.states.content import ContentPart
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message, ToolCall
from agentfsm.tools.content import ToolContent
from agentfsm.tools.context import ToolContext
from agentfsm.tools.spec import tool

LEDGER_VARIABLE = "AGENTFSM_TEST_LEDGER"
"""Where the non-idempotent tools append a line per execution (their idempotency key)."""


def _ledger(context: ToolContext, what: str) -> None:
    path = os.environ.get(LEDGER_VARIABLE)
    if path:
        with open(path, "a", encoding="utf-8") as ledger:
            ledger.write(f"{context.idempotency_key} {what}\n")
            ledger.flush()
            os.fsync(ledger.fileno())


@tool(idempotent=True)
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool(policy="require_approval")
def pay(amount: int, context: ToolContext) -> dict[str, object]:
    """Pay an amount (not idempotent: it writes to the ledger)."""
    _ledger(context, f"pay {amount}")
    return {"paid": amount, "key": context.idempotency_key}


@tool
def slow_pay(amount: int, context: ToolContext) -> str:
    """Pay slowly (a crash test kills its worker mid-call)."""
    _ledger(context, f"slow_pay {amount}")
    time.sleep(float(os.environ.get("AGENTFSM_TEST_SLOW", "0.5")))
    return f"paid {amount}"


HELD = threading.Event()
"""Set by ``held_pay`` once its body runs (a step of the run is then mid-call)."""
RELEASE = threading.Event()
"""Set by the test to let ``held_pay`` return (clear both before a run uses it)."""
HOLD_SECONDS = 60.0
"""How long ``held_pay`` waits for `RELEASE` before it fails (a test that never sets it)."""


@tool
def held_pay(amount: int) -> str:
    """Pay once the test sets `RELEASE`: a step that lasts exactly as long as a test needs."""
    HELD.set()
    if not RELEASE.wait(HOLD_SECONDS):
        raise TimeoutError(f"held_pay was not released in {HOLD_SECONDS:g}s")
    return f"paid {amount}"


@tool
def boom() -> str:
    """Always fails."""
    raise RuntimeError("the tool broke")


def _call(messages: Sequence[Message], name: str, **arguments: object) -> ModelResponse:
    call = ToolCall(id=f"call_{len(messages)}", name=name, arguments=json.dumps(arguments))
    return ModelResponse(tool_calls=(call,))


def _last_user(messages: Sequence[Message]) -> str:
    for message in reversed(messages):
        if message.role == "user":
            return message.content or ""
    return ""


def _amount(words: list[str]) -> int:
    return int(words[1]) if len(words) > 1 else 1


_COMMANDS = {
    "weather": lambda m, w: _call(m, "get_weather", city=w[1] if len(w) > 1 else "Paris"),
    "pay": lambda m, w: _call(m, "pay", amount=_amount(w)),
    "slow": lambda m, w: _call(m, "slow_pay", amount=_amount(w)),
    "hold": lambda m, w: _call(m, "held_pay", amount=_amount(w)),
    "ask": lambda m, w: _call(m, "ask_user", question="Which city?"),
    "loop": lambda m, w: _call(m, "get_weather", city="Oslo"),
    "boom": lambda m, w: _call(m, "boom"),
    "sleepy": lambda m, w: _call(m, "sleepy"),
}


def respond(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
    """The scripted answer to ``messages``."""
    last = messages[-1]
    words = _last_user(messages).split()
    command = words[0] if words else ""
    if last.role == "tool":
        if command == "loop":
            return _call(messages, "get_weather", city="Oslo")
        return ModelResponse(content=f"done: {last.content}")
    if command == "fail":
        raise ModelCallError("HTTP 400: bad request", model="scripted", reason="http_status")
    answer = _COMMANDS.get(command)
    if answer is not None:
        return answer(messages, words)
    return ModelResponse(content=f"you said: {' '.join(words)}")


def make_agent(**options: object) -> Agent:
    """The test agent (``tests.temporal.agents:make_agent`` for a worker)."""
    return Agent(
        ScriptedModel(fallback=respond),
        [get_weather, pay, slow_pay, boom, sleepy],
        system_prompt="You are a test agent.",
        max_iterations=3,
        ask_user=True,
        **options,  # type: ignore[arg-type]
    )


def make_held_agent() -> Agent:
    """The test agent with ``held_pay`` too (``hold <n>``: a call held until released)."""
    return Agent(
        ScriptedModel(fallback=respond),
        [get_weather, pay, slow_pay, boom, sleepy, held_pay],
        system_prompt="You are a test agent.",
        max_iterations=3,
    )


@tool(timeout=0.3)
def sleepy() -> str:
    """Takes longer than its timeout."""
    time.sleep(1.0)
    return "woke up"


class FlakyModel:
    """Fails each conversation's first attempt with a retryable error, then answers.

    It has an agentfsm `RetryPolicy` (as `OpenAIModel` does), so Temporal retries it.
    """

    def __init__(self) -> None:
        from agentfsm.llm.retry import RetryPolicy

        self._retry = RetryPolicy(max_attempts=3, initial_wait=0.05, max_wait=0.1)
        self.attempts: dict[int, int] = {}

    @property
    def name(self) -> str:
        """The model's name."""
        return "flaky"

    @property
    def retry(self) -> object:
        """Its retry policy."""
        return self._retry

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[JSONObject], **_: object
    ) -> ModelResponse:
        """Fail the first attempt for this conversation, answer the next."""
        count = self.attempts[len(messages)] = self.attempts.get(len(messages), 0) + 1
        if count == 1:
            raise ModelCallError("HTTP 503", model="flaky", reason="http_status", retryable=True)
        return ModelResponse(content=f"attempt {count}")


FLAKY = FlakyModel()


def make_flaky_agent() -> Agent:
    """An agent whose model fails once per call before answering."""
    return Agent(FLAKY, [])


class SlowModel:
    """Sleeps far past the run's ``model_timeout`` on every attempt, counting attempts.

    Args:
        retry: Its agentfsm `RetryPolicy` (None: none, so its errors are final).
        stuck: Ignore the cancellation at the deadline, as a stuck call does, and sleep on.
    """

    def __init__(self, retry: object = None, *, stuck: bool = False) -> None:
        self._retry = retry
        self._stuck = stuck
        self.calls: list[int] = []
        """One item per attempt (a list: the worker's one-attempt copy shares it)."""

    @property
    def name(self) -> str:
        """The model's name."""
        return "slow"

    @property
    def retry(self) -> object:
        """Its retry policy (None: none)."""
        return self._retry

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[JSONObject], **_: object
    ) -> ModelResponse:
        """Sleep (the deadline cancels it; a stuck one sleeps on), then answer."""
        self.calls.append(len(messages))
        try:
            await asyncio.sleep(30.0)
        except asyncio.CancelledError:
            if not self._stuck:
                raise
            await asyncio.sleep(1.5)
        return ModelResponse(content="too late")


def _slow_retry() -> object:
    from agentfsm.llm.retry import RetryPolicy

    return RetryPolicy(max_attempts=3, initial_wait=0.05, max_wait=0.1, jitter=0.0)


SLOW = SlowModel()
SLOW_RETRIED = SlowModel(_slow_retry())
SLOW_STUCK = SlowModel(stuck=True)


def make_slow_agent() -> Agent:
    """An agent whose model (no retry policy) sleeps past any small ``model_timeout``."""
    return Agent(SLOW, [])


def make_slow_retried_agent() -> Agent:
    """The same, with a model `RetryPolicy` of 3 attempts (a timeout is retried)."""
    return Agent(SLOW_RETRIED, [])


def make_slow_stuck_agent() -> Agent:
    """The same without a policy, stuck past its deadline (the activity's backstop fires)."""
    return Agent(SLOW_STUCK, [])


def make_timed_agent() -> Agent:
    """The test agent with approvals and answers that expire after a second."""
    return make_agent(action_timeout=1.0, input_timeout=1.0)


def make_hooked_agent() -> Agent:
    """The test agent with a ``before_llm`` hook that raises on the input ``explode``."""
    agent = make_agent()

    @agent.on("before_llm")
    def refuse(context: object) -> None:
        messages = getattr(context, "messages", [])
        if _last_user(messages) == "explode":
            raise ValueError("the hook refused")

    return agent


STARTS: dict[str, int] = {}
"""How many times each retry test tool's body started (cleared by the tests)."""


def _started(name: str) -> int:
    STARTS[name] = STARTS.get(name, 0) + 1
    return STARTS[name]


@tool(idempotent=True, retry_on=(ConnectionError,))
def flaky_fetch() -> str:
    """Fails with a listed error on its first try, then answers."""
    if _started("flaky_fetch") == 1:
        raise ConnectionError("the first try drops")
    return "fetched"


@tool(idempotent=True, retry_on=(ConnectionError,))
def down_fetch() -> str:
    """Always fails with a listed error (retried until the attempts run out)."""
    _started("down_fetch")
    raise ConnectionError("the server is down")


@tool(idempotent=True, retry_on=(ConnectionError,))
def bad_fetch() -> str:
    """Fails with an error its retry_on does not list (never retried)."""
    _started("bad_fetch")
    raise ValueError("a bad request")


@tool(idempotent=True, timeout=0.2, retry_on=(ConnectionError,))
def slow_fetch() -> str:
    """Idempotent, but its timeouts are not listed: a timeout is final."""
    _started("slow_fetch")
    time.sleep(0.6)
    return "too late"


@tool(idempotent=True, timeout=0.2, retry_on=(TimeoutError,))
def slow_retried_fetch() -> str:
    """Idempotent, and lists TimeoutError: its timeouts are retried."""
    _started("slow_retried_fetch")
    time.sleep(0.6)
    return "too late"


RETRY_TOOLS = (flaky_fetch, down_fetch, bad_fetch, slow_fetch, slow_retried_fetch)


def respond_call(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
    """``call <tool>`` calls that tool once, then answers with its result."""
    last = messages[-1]
    if last.role == "tool":
        return ModelResponse(content=f"done: {last.content}")
    words = _last_user(messages).split()
    return _call(messages, words[1])


def make_retry_agent(**options: object) -> Agent:
    """An agent whose idempotent tools fail, time out or succeed after a retry."""
    return Agent(
        ScriptedModel(fallback=respond_call),
        list(RETRY_TOOLS),
        **options,  # type: ignore[arg-type]
    )


@tool
def chart(region: str = "north") -> ToolContent:
    """A region's sales chart: an image for the model, a note for the user only."""
    return ToolContent(
        f"{region} is up 12%",
        parts=(ContentPart.media("image", "image/png", "iVBORw0KGgo="),),
        for_user=(ContentPart.of_text(f"{region} chart rendered for you"),),
    )


def make_chart_agent(**options: object) -> Agent:
    """``call chart``: a tool whose answer has media and content for the user only."""
    return Agent(
        ScriptedModel(fallback=respond_call),
        [chart],
        **options,  # type: ignore[arg-type]
    )
