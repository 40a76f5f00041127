"""The context window: how full the last model call left it (`Agent.context_usage`).

When it is getting full, compact the history (`Agent.compact`, or ``context.compact`` in a
``before_llm`` handler).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentfsm.agent.turn import TurnDriver
from agentfsm.errors import IllegalTransitionError, ReentrantCallError
from agentfsm.fsm.trace import last_llm_call
from agentfsm.states.messages import Message
from agentfsm.states.names import RunState
from agentfsm.tools.hooks import compaction_end, summary_message

CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
}
"""Context windows, in tokens, of the usual OpenAI models, by name prefix (the longest
prefix that matches wins: ``gpt-4o-mini`` is a ``gpt-4o``)."""


def context_window(model: str) -> int | None:
    """The context window of the model named ``model``, if `CONTEXT_WINDOWS` knows it."""
    name = model.rsplit(":", 1)[-1].rsplit("/", 1)[-1]
    matches = [prefix for prefix in CONTEXT_WINDOWS if name.startswith(prefix)]
    return CONTEXT_WINDOWS[max(matches, key=len)] if matches else None


@dataclass(frozen=True, slots=True)
class ContextUsage:
    """How much of the model's context window the last model call used."""

    tokens: int
    """Tokens of the last model call (its prompt and its reply), as the provider counted."""
    window: int | None
    """The model's context window in tokens, when known (or configured)."""

    @property
    def fraction(self) -> float | None:
        """``tokens / window`` (1.0 is full), or None when the window is not known."""
        return None if not self.window else self.tokens / self.window


class ContextControl(TurnDriver):
    """The `Agent`'s context window: its usage, and compacting the history at rest."""

    __slots__ = ()

    context_window: int | None

    @property
    def context_usage(self) -> ContextUsage | None:
        """Tokens of the last model call against the model's context window.

        None before a model call whose provider reported usage.
        The window is the ``context_window`` given to the Agent, else the model's own
        ``context_window`` attribute, else `CONTEXT_WINDOWS` for the usual OpenAI models.
        """
        call = last_llm_call(self._trace)
        if call is None or call.usage is None:
            return None
        window = self.context_window
        if window is None:
            own = getattr(self.model, "context_window", None)
            window = own if isinstance(own, int) else context_window(self.model.name)
        return ContextUsage(call.usage.total_tokens, window)

    def compact(self, summary: str | Message, *, keep: int = 0) -> None:
        """Replace the conversation after the system prompt with ``summary``, at rest.

        The last ``keep`` messages stay (a few more if the first of them would be a tool
        message: a call is never separated from its tool messages, I7); the system prompt
        stays. It is recorded as a ``compacted`` conversation record, so replay reproduces
        it (I10). A ``str`` summary becomes a system message. Before a model call, a
        ``before_llm`` handler does the same with ``context.compact(...)``.

        Raises:
            TypeError: ``summary`` is not a str or a `Message`.
            ValueError: An empty summary, a tool message or an assistant message with tool
                calls; a bad ``keep``, or nothing to compact.
            ReentrantCallError: Called while a step of the run is running.
            IllegalTransitionError: The run is not ready, completed or failed.
        """
        message = summary_message(summary)
        self._at_rest("compact")
        end = compaction_end(self._messages, len(self._system), keep)
        self._store_failed = False
        self._depth = 1  # its listeners run inside this step
        try:
            self._compact(message, end)
        except BaseException:
            if self._store_failed:  # the store refused: the run is what it holds
                self._reload()
            raise
        finally:
            self._depth = 0
        self._apply_requests()

    def _at_rest(self, call: str) -> None:
        if self._depth:
            raise ReentrantCallError(self._data.run_id, call, self._data.state)
        if self._unsure:  # see agentfsm.agent.rollback
            self._recheck()
        if self._data.state not in (RunState.READY, RunState.COMPLETED, RunState.FAILED):
            raise IllegalTransitionError(
                run_id=self._data.run_id,
                machine="run",
                state=self._data.state,
                event=call,
                allowed=self._run.allowed_events(),
                detail=f" ({call} only while ready, completed or failed)",
            )
