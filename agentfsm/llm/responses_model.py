"""`OpenAIResponsesModel`: OpenAI's Responses API, over the official ``openai`` client.

The same retries, deadline, streaming deltas and error mapping as `OpenAIModel` (the call
loop of `agentfsm.llm._calling`), the same constructor; only the wire differs. The run's
log is the history: every call sends the whole conversation as input items, with
``store=False`` and no ``previous_response_id``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from agentfsm import _checks as checks
from agentfsm.llm._calling import Offer, Told
from agentfsm.llm._openai_convert import Origin
from agentfsm.llm._responses_convert import (
    REASONING_MODELS,
    ResponsesStream,
    check_settings,
    from_response,
    input_items,
    reasoning_items,
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

_CARRIED = 1024
"""How many tool calls' reasoning items a model keeps (the oldest are dropped first)."""


class OpenAIResponsesModel(OpenAIModel):
    """A model behind OpenAI's Responses API (``client.responses``).

    Takes `OpenAIModel`'s arguments. Tools, structured output (``text.format``), streaming
    of text and tool-argument deltas, and usage are supported; of the `ModelSettings`,
    ``stop`` and ``seed`` are refused (the API has neither), ``max_tokens`` is sent as
    ``max_output_tokens`` and ``reasoning_effort`` as ``reasoning.effort``.

    A reasoning model's reasoning items (``o1``/``o3``/``o4``/``gpt-5`` ids, or
    ``reasoning=True``) are asked for encrypted (``include=["reasoning.encrypted_content"]``)
    and sent back before the tool calls they led to, as the API requires with
    ``store=False``. They are kept by this model object, by tool call id (the last 1,024):
    not in the run's log, so a run restored in another process sends its calls without
    them, which the API accepts (the model reasons again).

    Args:
        model: As `OpenAIModel`.
        reasoning: Whether to carry reasoning items; None (the default) decides by the
            model id (`REASONING_MODELS`).
        **options: `OpenAIModel`'s other arguments.
    """

    def __init__(self, model: str, *, reasoning: bool | None = None, **options: object) -> None:
        super().__init__(model, **cast("dict[str, Any]", options))
        if reasoning is not None:
            checks.flag("reasoning", reasoning)
        self._reasons = model.startswith(REASONING_MODELS) if reasoning is None else reasoning
        self._carried: OrderedDict[str, tuple[JSONObject, ...]] = OrderedDict()

    def _carry(self, carried: dict[str, tuple[JSONObject, ...]]) -> None:
        for call_id, items in carried.items():
            self._carried[call_id] = items
            self._carried.move_to_end(call_id)
        while len(self._carried) > _CARRIED:
            self._carried.popitem(last=False)

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
            "input": input_items(list(offer.messages), self._carried if self._reasons else None),
            "tools": tools or openai.omit,
            "text": text or openai.omit,
            "store": False,
            **asked,
        }
        if self._reasons:
            common["include"] = ["reasoning.encrypted_content"]
        if not self._stream:
            response = await client.responses.create(**common)
            answer = from_response(origin, response)
        else:
            stream = await client.responses.create(stream=True, **common)
            assembly = ResponsesStream(origin, told)
            async with stream:
                async for event in stream:
                    assembly.add(event)
            answer = assembly.response()
            response = assembly.final
        if self._reasons:  # (only an answer that is used: a refused one raised above)
            self._carry(reasoning_items(response))
        return answer
