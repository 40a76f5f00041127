"""The tree verifier: a parent and its sub-agent's child run explored together (I14, I6)."""

from __future__ import annotations

import doctest

import pytest

from agentfsm.verify import tree, verify_tree


@pytest.mark.parametrize("max_iterations", [1, 2])
def test_the_tree_keeps_i14_and_takes_every_sub_agent_row(max_iterations: int) -> None:
    report = tree.verify_tree(max_iterations)

    assert report.ok, report.findings
    assert report.taken == tree.SUB_AGENT_ROWS
    assert len(tree.SUB_AGENT_ROWS) == 5  # delegated, child_returned, child_asked x2, abort
    assert report.configurations > 50
    assert report.moves >= report.configurations - 1


def test_a_parent_that_leaves_its_waiting_child_behind_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tree, "_close_child", lambda pair: None)

    report = verify_tree(1)

    [finding] = [f for f in report.findings if f.prop == "I14"]
    assert "turn is over" in finding.message
    assert finding.path[-1] in {"the application cancels", "the application shuts down"}


def test_a_result_recorded_twice_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    at_rest = tree._child_at_rest

    def twice(pair: tree._Pair) -> None:
        at_rest(pair)
        if pair.consumed:
            pair.consumed = (*pair.consumed, pair.consumed[-1])

    monkeypatch.setattr(tree, "_child_at_rest", twice)

    report = verify_tree(1)

    assert any("recorded 2 times" in f.message for f in report.findings)


def test_a_parent_waiting_on_the_wrong_address_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    at_rest = tree._child_at_rest

    def local_id(pair: tree._Pair) -> None:
        at_rest(pair)
        if pair.parent.pending:
            pair.parent.pending = (tree.CHILD_CALL,)  # the child's own id, not its path

    monkeypatch.setattr(tree, "_child_at_rest", local_id)

    report = verify_tree(1)

    assert any(f.prop == "I6" for f in report.findings)


def test_a_move_that_strands_the_tree_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    gone = {"the application resumes", "the application shuts down"}
    moves = {k: v for k, v in tree.PARENT_MOVES.items() if k not in gone}
    monkeypatch.setattr(tree, "PARENT_MOVES", moves)

    report = verify_tree(1)

    assert any(f.prop == "can-end" for f in report.findings)


def test_verify_tree_refuses_a_bound_below_one() -> None:
    with pytest.raises(ValueError, match="max_iterations must be a whole number >= 1, not 0"):
        verify_tree(0)


def test_the_docstring_example_holds() -> None:
    assert doctest.testmod(tree).failed == 0


def test_a_child_whose_factory_fails_is_an_error_result_and_a_mistaken_answer_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    report = verify_tree(1)
    assert report.ok, report.findings
    assert "the child's factory fails" in tree.PARENT_MOVES

    def as_an_answer(pair: tree._Pair) -> None:
        tree._never_made(pair)
        pair.consumed = ("answer",)  # a recorder that took it for the child's answer

    moves = {**tree.PARENT_MOVES, "the child's factory fails": as_an_answer}
    monkeypatch.setattr(tree, "PARENT_MOVES", moves)

    report = verify_tree(1)

    [finding] = [f for f in report.findings if f.prop == "I14"]
    assert finding.message == "the child ended created but its result is an answer"
    assert finding.path[-1] == "the child's factory fails"
