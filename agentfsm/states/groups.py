"""The names of the state groups the diagrams draw, declared beside the transition tables.

The groups themselves are not declared: `agentfsm.diagrams.grouping` finds them in
`RUN_TABLE` and `LOOP_TABLE` (the states that an event, under the same guard, takes to the
same target). Only their names are given here, each with the exact set of states it names,
so a reader of a diagram sees ``waiting`` rather than a made-up name. A group the tables
produce that has no name here is drawn under a name made from its first event; a test
checks that every group of the default drawings is named here and every name is used.
"""

from __future__ import annotations

from agentfsm.states.names import LoopState, MachineName, RunState

_R, _L = RunState, LoopState

GROUP_NAMES: dict[MachineName, dict[frozenset[str], str]] = {
    MachineName.RUN: {
        frozenset(
            {_R.READY, _R.BUSY, _R.REQUIRES_ACTION, _R.INPUT_REQUIRED, _R.COMPLETED, _R.FAILED}
        ): "active",
        frozenset(
            {_R.READY, _R.REQUIRES_ACTION, _R.INPUT_REQUIRED, _R.COMPLETED, _R.FAILED}
        ): "at_rest",
        frozenset({_R.READY, _R.COMPLETED, _R.FAILED}): "idle",
        frozenset({_R.REQUIRES_ACTION, _R.INPUT_REQUIRED}): "waiting",
    },
    MachineName.LOOP: {
        frozenset(
            {
                _L.THINKING,
                _L.ACTING,
                _L.AWAITING_ACTION,
                _L.AWAITING_INPUT,
                _L.DELEGATING,
                _L.VALIDATING,
            }
        ): "working",
        frozenset({_L.AWAITING_ACTION, _L.AWAITING_INPUT}): "waiting",
    },
}
"""Each machine's group names, by the states they name. RunLifecycle: ``active`` (the states
`pause` may leave and `resume` returns to, its history H), ``at_rest`` (active but not
``busy``: nothing runs), ``idle`` (between turns: a ``submit`` starts one) and ``waiting``
(for the application or the user). TurnLoop: ``working`` (every state that is not final)
and ``waiting``."""
