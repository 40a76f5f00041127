"""Spy tools for the tools tests: a body that records each run, in a sync and an async flavour."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Literal

from pydantic import Field

from agentfsm.states.json import JSONObject
from agentfsm.states.messages import ToolCall
from agentfsm.tools import Tool, ToolContext, ToolPolicy

Flavour = Literal["sync", "async"]


@dataclass
class Spy:
    """Records every run of a tool body; ``behaviour`` decides what the body does."""

    calls: list[dict[str, object]] = field(default_factory=list)
    behaviour: Callable[[dict[str, object]], object] | None = None

    def record(self, arguments: dict[str, object]) -> object:
        self.calls.append(arguments)
        if self.behaviour is not None:
            return self.behaviour(arguments)
        return {"city": arguments["city"], "days": arguments["days"]}


Days = Annotated[int, Field(ge=1, le=14, description="How many days ahead")]


def spy_tool(
    flavour: Flavour,
    *,
    name: str = "forecast",
    policy: ToolPolicy = ToolPolicy.ALLOW,
    client_side: bool = False,
    idempotent: bool = False,
    timeout: float | None = None,
    retry_on: tuple[type[Exception], ...] = (),
    parameters: JSONObject | None = None,
) -> tuple[Tool[..., object], Spy]:
    """A ``forecast(city: str, days: Days = 1)`` tool whose body records its calls.

    With ``parameters``, the schema is that explicit one and the body gets plain JSON.
    """
    spy = Spy()
    if flavour == "sync":

        def forecast(city: str, days: Days = 1, context: ToolContext | None = None) -> object:
            """Forecast the weather of a city."""
            return spy.record({"city": city, "days": days, "context": context})

        body: Callable[..., object] = forecast
    else:

        async def forecast_async(
            city: str, days: Days = 1, context: ToolContext | None = None
        ) -> object:
            """Forecast the weather of a city."""
            await asyncio.sleep(0)
            return spy.record({"city": city, "days": days, "context": context})

        body = forecast_async
    made = Tool(
        body,
        name=name,
        policy=policy,
        client_side=client_side,
        idempotent=idempotent,
        timeout=timeout,
        retry_on=retry_on,
        parameters=parameters,
    )
    return made, spy


def valid_arguments(city: str = "Paris", days: int = 2) -> str:
    return f'{{"city": "{city}", "days": {days}}}'


def call(call_id: str = "c1", name: str = "forecast", arguments: str | None = None) -> ToolCall:
    """A tool call; valid ``forecast`` arguments by default."""
    return ToolCall(
        id=call_id, name=name, arguments=valid_arguments() if arguments is None else arguments
    )
