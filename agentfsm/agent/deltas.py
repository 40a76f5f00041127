"""`Delta`: a piece of a model's answer as the Agent tells it, beside the transition events.

Deltas are not transitions: they are not numbered, not stored and not in the trace. The
assembled message is, as without streaming. Only listeners that ask for them
(``add_listener(listener, deltas=True)``) and `Agent.stream` get them, and only from a
model that streams (`agentfsm.llm.base.StreamingModel`, e.g. ``OpenAIModel(stream=True)``
or ``ScriptedModel(chunk_size=...)``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from agentfsm.agent.vocabulary import AgentEvent
from agentfsm.llm.base import DeltaKind, Model, ModelDelta


@dataclass(frozen=True, slots=True)
class Delta:
    """A piece of the answer of a turn's model call, told as it arrives.

    The ``text`` of the ``text`` deltas of one model call since its last ``reset``
    concatenate to the reply's content, and those of its ``tool_call`` deltas with the same
    ``index`` to that call's arguments. A ``reset`` says that the attempt that sent the
    deltas before it failed (it is retried, or the call fails): drop them.
    """

    run_id: str
    """The run."""
    turn: int
    """The turn the model call belongs to."""
    iteration: int
    """The model call's iteration in its turn (as in its ``llm_call`` trace entry)."""
    kind: DeltaKind
    """``text``, ``tool_call`` or ``reset``."""
    text: str = ""
    """The piece: of the content (``text``) or of a call's arguments (``tool_call``)."""
    index: int = 0
    """For ``tool_call``: the call's position among the reply's tool calls."""
    call_id: str | None = None
    """For ``tool_call``: the call's id, in the piece that brings it."""
    name: str | None = None
    """For ``tool_call``: the tool's name, in the piece that brings it."""
    attempt: int = 1
    """The attempt of the model call that sent it (1 for the first)."""

    @classmethod
    def of(cls, run_id: str, turn: int, iteration: int, delta: ModelDelta) -> Delta:
        """The model's ``delta``, placed in its run, turn and iteration."""
        return cls(
            run_id,
            turn,
            iteration,
            delta.kind,
            delta.text,
            delta.index,
            delta.call_id,
            delta.name,
            delta.attempt,
        )


StreamItem = AgentEvent | Delta
"""What `Agent.stream` yields, and a listener added with ``deltas=True`` is told."""
StreamListener = Callable[[StreamItem], object]
"""Told of every transition, trace entry and delta, in order."""


def takes_deltas(model: Model) -> bool:
    """Whether ``model.complete`` takes an ``on_delta`` argument (or any keyword)."""
    try:
        parameters = inspect.signature(model.complete).parameters
    except (TypeError, ValueError):  # no signature to read: do not risk a TypeError
        return False
    return "on_delta" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )
