from __future__ import annotations

import dataclasses
import doctest
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

import agentfsm.tools.context
import agentfsm.tools.hooks
import agentfsm.tools.spec
from agentfsm.tools import ToolContext
from agentfsm.tools.context import context_of


def test_a_context_bound_to_a_call_keys_it_for_idempotency() -> None:
    round_context = ToolContext(run_id="run-9", turn=4, iteration=1, user_id="u")

    bound = round_context.for_call("call-2")

    assert bound == ToolContext(run_id="run-9", turn=4, iteration=1, call_id="call-2", user_id="u")
    assert bound.idempotency_key == "run-9:call-2"
    assert round_context.call_id == ""


def test_a_context_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        ToolContext(run_id="r").turn = 2  # type: ignore[misc]


@pytest.mark.parametrize(
    "module",
    [agentfsm.tools.context, agentfsm.tools.hooks, agentfsm.tools.spec],
    ids=lambda m: m.__name__,
)
def test_docstring_examples_run(module: object) -> None:
    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)  # type: ignore[arg-type]

    assert tried > 0
    assert failures == 0


@given(
    st.text(max_size=5),
    st.integers(min_value=0),
    st.integers(min_value=0),
    st.text(max_size=5),
    st.none() | st.text(max_size=5),
    st.none() | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
def test_a_context_built_directly_is_the_one_the_constructor_builds(
    run_id: str,
    turn: int,
    iteration: int,
    call_id: str,
    user_id: str | None,
    resume: dict[str, int] | None,
) -> None:
    built = context_of(run_id, turn, iteration, call_id, user_id, resume)  # type: ignore[arg-type]
    made = ToolContext(run_id, turn, iteration, call_id, user_id, resume)  # type: ignore[arg-type]

    assert type(built) is ToolContext
    assert built == made
    assert repr(built) == repr(made)
    assert (built.run_id, built.turn, built.iteration, built.call_id) == (
        run_id,
        turn,
        iteration,
        call_id,
    )
    assert (built.user_id, built.resume) == (user_id, resume)
    assert context_of(run_id, turn, iteration) == ToolContext(run_id, turn, iteration)
    # Built as an unfrozen twin and then given the class: as frozen as the constructor's.
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.turn = turn + 1  # type: ignore[misc]
    assert built.turn == turn
    assert pickle.loads(pickle.dumps(built)) == made
    assert dataclasses.replace(built, call_id="x") == dataclasses.replace(made, call_id="x")


@pytest.mark.parametrize(
    ("fields", "error", "words"),
    [
        ({"run_id": 5}, TypeError, "run_id must be a string, not 5 (int)"),
        ({"turn": -1}, ValueError, "turn must be a whole number >= 0, not -1 (int)"),
        ({"iteration": "2"}, TypeError, "iteration must be a whole number >= 0, not '2' (str)"),
        ({"call_id": None}, TypeError, "call_id must be a string, not None (NoneType)"),
        ({"user_id": 3}, TypeError, "user_id must be a string or None, not 3 (int)"),
        ({"resume": "yes"}, TypeError, "resume must be a dict (a JSON object) or None"),
    ],
)
def test_a_context_built_with_a_bad_field_is_refused_naming_it(
    fields: dict[str, object], error: type[Exception], words: str
) -> None:
    arguments: dict[str, object] = {"run_id": "run-1", **fields}
    with pytest.raises(error) as raised:
        ToolContext(**arguments)  # type: ignore[arg-type]
    assert str(raised.value).startswith(words)
