"""Hypothesis strategies for event arguments: well-formed, empty and malformed alike."""

from __future__ import annotations

from hypothesis import strategies as st

from agentfsm.states import InputPolicy, LoopState

texts = st.sampled_from(["hello", "", "   ", "Paris", None, 7])
call_lists = st.sampled_from([[], ["c1"], ["c1", "c2"], ["c1", "c1"], "c1", None, [""]])
decision_maps = st.sampled_from(
    [{}, {"c1": "approve"}, {"c1": "deny", "c2": "approve"}, {"c9": "x"}, ["c1"]]
)
times = st.sampled_from([None, 0.0, 50.0, 100.0, 1e9, True])
counts = st.integers(min_value=-1, max_value=4)

event_args = st.fixed_dictionaries(
    {},
    optional={
        "text": texts,
        "calls": call_lists,
        "decisions": decision_maps,
        "question": texts,
        "now": times,
        "deadline": times,
        "tool_calls": counts,
        "needing_action": counts,
        "asking_user": counts,
        "reason": st.sampled_from(["cancelled", "hook failed"]),
    },
)
"""Arguments for any event of either machine, many of them wrong for that event."""

policies = st.sampled_from(list(InputPolicy))
loop_outcomes = st.sampled_from([None, *LoopState])

_optional = st.fixed_dictionaries
_RELEVANT = {
    "submit": _optional({"text": texts}),
    "need_action": _optional({"calls": call_lists}, optional={"deadline": times}),
    "resolve_action": _optional({"decisions": decision_maps}),
    "resolved": _optional({"decisions": decision_maps}),
    "need_input": _optional(
        {"question": texts, "calls": call_lists}, optional={"deadline": times}
    ),
    "provide_input": _optional({"text": texts}),
    "expire": _optional({"now": times}),
    "model_replied": _optional(
        {"tool_calls": counts}, optional={"needing_action": counts, "asking_user": counts}
    ),
    "fail": _optional({"error_type": st.just("RuntimeError"), "message": st.just("boom")}),
    "abort": _optional({"reason": st.sampled_from(["cancelled", "expired", "hook failed"])}),
}


def args_for(event: str) -> st.SearchStrategy[dict[str, object]]:
    """Arguments that mostly fit ``event``, and sometimes any arguments at all."""
    return st.one_of(
        _RELEVANT.get(event, st.just({})), _RELEVANT.get(event, st.just({})), event_args
    )


def sends_for(events: tuple[str, ...]) -> st.SearchStrategy[tuple[str, dict[str, object]]]:
    """An event of ``events`` (or an unknown one) with arguments that mostly fit it."""
    return st.sampled_from([*events, "teleport"]).flatmap(
        lambda event: st.tuples(st.just(event), args_for(event))
    )
