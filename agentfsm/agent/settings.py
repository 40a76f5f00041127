"""Model settings in a run: the Agent's, a turn's override, and what each call asks for.

The Agent's settings hold for every model call of its run; ``submit(text, settings=...)``
(or ``start(text, settings=...)``) overrides some of them for that turn only: the override
is merged over the Agent's when the turn opens, and the next turn starts from the Agent's
again. The override is recorded in the ``submit`` event (``settings``), so a run restored
mid-turn goes on with it; each call's merged settings are recorded in its ``llm_call``
trace entry and ``model_replied`` (or ``model_failed``) event.
"""

from __future__ import annotations

from agentfsm.agent.turn import TurnDriver
from agentfsm.llm.settings import (
    ModelSettings,
    SettingsLike,
    call_settings,
    checked,
    tool_names,
    turn_override,
)
from agentfsm.states.names import RunState

_MID_TURN = frozenset(
    {RunState.BUSY, RunState.REQUIRES_ACTION, RunState.INPUT_REQUIRED, RunState.PAUSED}
)
"""The states a run may be restored in with a turn to go on with."""


class SettingsControl(TurnDriver):
    """The Agent's model settings, and each turn's override of them."""

    __slots__ = ()

    @property
    def settings(self) -> ModelSettings | None:
        """The model settings of every call of the run (a turn may override some)."""
        return self._settings

    def _offered(self) -> frozenset[str]:
        """The names of the tools offered to the model now."""
        return tool_names(self.tools.registry.offered_tools(self.enabled_tools))

    def _override(self, settings: SettingsLike | None) -> ModelSettings | None:
        """Settings given to the Agent or a turn, checked for its model and tools.

        The ``tool_choice`` is checked against the tools offered now, unless tool sources
        list theirs when a turn starts (then when each call is made).

        Raises:
            ModelSettingsError: As `checked`.
        """
        if settings is None:
            return None
        return checked(settings, self.model, None if self._sources else self._offered())

    def _resume_settings(self) -> None:
        """For a run just restored mid-turn: the turn asks what it asked before (its log)."""
        store = self.store
        data = self._data
        if store is not None and data.loop_state is not None and data.state in _MID_TURN:
            override = turn_override(store.events(data.run_id))
            self._call_settings = call_settings(self._settings, override)
