"""`OpenAIResponsesModel`: OpenAI's Responses API, over the official ``openai`` client.

The same retries, deadline, streaming deltas and error mapping as `OpenAIModel` (the call
loop of `agentfsm.llm._calling`), the same constructor; only the wire differs. The run's
log is the history: every call sends the whole conversation as input items, with
``store=False`` and no ``previous_response_id``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agentfsm.llm._calling import Offer, Told
from agentfsm.llm._openai_convert import Origin
from agentfsm.llm._responses_convert import (
    ResponsesStream,
    check_settings,
    from_response,
    input_items,
    responses_settings,
    responses_tools,
    text_format,
)
from agentfsm.llm.base import DeltaListener, ModelResponse, RetryListener
from agentfsm.llm.openai_model import OpenAIModel
from agentfsm.llm.settings import ModelSettings
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message

if TYPE_CHECKING:
    import openai


class OpenAIResponsesModel(OpenAIModel):
    """A model behind OpenAI's Responses API (``client.responses``).

    Takes `OpenAIModel`'s arguments. Tools, structured output (``text.format``), streaming
    of text and tool-argument deltas, and usage are supported; of the `ModelSettings`,
    ``stop`` and ``seed`` are refused (the API has neither), ``max_tokens`` is sent as
    ``max_output_tokens`` and ``reasoning_effort`` as ``reasoning.effort``.

    Reasoning items are not carried from one call to the next: the conversation has no
    place for them yet, and tool calls are sent back as plain ``function_call`` items (no
    item ids), which the API accepts without them.
    """

    def __repr__(self) -> str:
        return "OpenAIResponsesModel" + super().__repr__().removeprefix("OpenAIModel")

    def check_settings(self, settings: ModelSettings) -> None:
        """Refuse the settings this API cannot honour (``stop``, ``seed``).

        Raises:
            ModelSettingsError: Naming the setting.
        """
        check_settings(settings)

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[JSONObject],
        *,
        on_retry: RetryListener | None = None,
        on_delta: DeltaListener | None = None,
        response_format: JSONObject | None = None,
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        """Answer ``messages``, offering ``tools``; as `OpenAIModel.complete`.

        Raises:
            ModelCallError: As `OpenAIModel.complete`.
            ModelResponseError: As `OpenAIModel.complete`; ``truncated`` for a stream
                that ended before ``response.completed`` (retried), ``failed`` for a
                response the API failed.
        """
        offer = Offer(messages, tools, response_format, settings)
        return await self._call(offer, on_retry, on_delta)

    async def _request(
        self, client: openai.AsyncOpenAI, offer: Offer, origin: Origin, told: Told | None
    ) -> ModelResponse:
        import openai

        tools = responses_tools(list(offer.tools))
        text = text_format(offer.response_format)
        asked: dict[str, Any] = responses_settings(offer.settings, bool(tools))
        common: dict[str, Any] = {
            "model": self._model,
            "input": input_items(list(offer.messages)),
            "tools": tools or openai.omit,
            "text": text or openai.omit,
            "store": False,
            **asked,
        }
        if not self._stream:
            response = await client.responses.create(**common)
            return from_response(origin, response)
        stream = await client.responses.create(stream=True, **common)
        assembly = ResponsesStream(origin, told)
        async with stream:
            async for event in stream:
                assembly.add(event)
        return assembly.response()
