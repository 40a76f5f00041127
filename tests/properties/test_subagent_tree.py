"""Property: I14 and I6 hold for a tree of runs, whatever the children do and the user answers.

Hypothesis draws what each child does (answer, ask for an approval, ask a question, fail
its model call, have an exception escape it, delegate to a grandchild, or never exist: its
factory raises or returns no Agent or one with a store of its own), and at every wait
what the application does (answer, deny, cancel, pause then resume, or restart the
process: the tree rebuilt from the store by the root's run id). After every call into the
API the whole stored tree is checked: a child at rest whenever its parent is, no child
result recorded twice, every failure an error result (I14); the root's pending calls and
history valid (I6, I7); each run's log replays to its snapshot (I10).
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from agentfsm import Agent, MemoryStore, replay, tool
from agentfsm.agent import agent_tool
from agentfsm.errors import ModelCallError
from agentfsm.llm.scripted import ScriptedModel
from agentfsm.states import RUN_WAITING, RunState
from agentfsm.testing import assert_history_valid, assert_pending_valid, assert_tree_valid

BEHAVIOURS = (
    "answer",
    "approval",
    "question",
    "model_fails",
    "escapes",
    "grandchild",
    "factory_raises",
    "not_an_agent",
    "own_store",
)


@tool(policy="require_approval")
def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def _broken(context: object) -> None:
    raise RuntimeError("a hook of the child broke")


def _factory_raises() -> Agent:
    raise RuntimeError("the factory broke")


def _agent_of(behaviour: str, models: list[ScriptedModel]) -> Callable[[], Agent]:
    """A factory of a child run that does ``behaviour`` (its model made once, kept)."""
    model = ScriptedModel()
    if behaviour == "factory_raises":  # the child never exists
        return _factory_raises
    if behaviour == "not_an_agent":
        return lambda: "not an agent"  # type: ignore[return-value,return-value]
    if behaviour == "own_store":
        return lambda: Agent(model, store=MemoryStore())
    models.append(model)
    if behaviour == "approval":
        model.tool_call("delete", path="a.txt").text("Deleted, or not.")
    elif behaviour == "question":
        model.tool_call("ask_user", question="Which file?").text("Thanks.")
    elif behaviour == "model_fails":
        down = ModelCallError("down", model="scripted", reason="status", status_code=500)
        model.fail(down)
    elif behaviour == "grandchild":
        model.tool_call("helper", task="Go on").text("The grandchild is done.")
        grandchild = _agent_of("approval", models)
        tools = [agent_tool(grandchild, name="helper", description="Helps.")]
        return lambda: Agent(model, tools)
    else:
        model.text("Done.")
    hooks = {"before_llm": _broken} if behaviour == "escapes" else None
    return lambda: Agent(model, [delete], hooks=hooks)  # type: ignore[arg-type]


def _root(store: MemoryStore, model: ScriptedModel, child: Callable[[], Agent]) -> Agent:
    tools = [agent_tool(child, name="helper", description="Helps.")]
    root = Agent(model, tools, run_id="root", store=store)
    root.start()
    return root


def _check(store: MemoryStore, root: Agent) -> None:
    assert_tree_valid(store, "root")
    assert_pending_valid(root)
    holding = root.state in RUN_WAITING or root.state == RunState.PAUSED
    assert_history_valid(root.messages, open_round=holding)
    for summary in store.list_runs():
        stored = store.load(summary.run_id)
        assert stored is not None
        replay(store.events(summary.run_id), stored)


@given(
    behaviour=st.sampled_from(BEHAVIOURS),
    answers=st.lists(
        st.sampled_from(("answer", "deny", "cancel", "pause", "restart")), max_size=6
    ),
)
def test_the_tree_keeps_i14_whatever_the_children_do(behaviour: str, answers: list[str]) -> None:
    store = MemoryStore()
    models: list[ScriptedModel] = []
    child = _agent_of(behaviour, models)
    model = ScriptedModel().tool_call("helper", task="Tidy").text("All done.")
    root = _root(store, model, child)
    root.submit("Tidy my files")
    _check(store, root)
    for answer in [*answers, "answer", "answer", "answer"]:
        state = root.state
        if state not in RUN_WAITING:
            break
        if answer == "restart":
            root = _root(store, model, child)
        elif answer == "cancel":
            root.cancel()
        elif answer == "pause":
            root.pause()
            _check(store, root)
            root.resume()
        elif state == RunState.INPUT_REQUIRED:
            root.provide_input("a.txt")
        else:
            decision = "deny" if answer == "deny" else "approve"
            root.resolve_action({call.id: decision for call in root.pending})
        _check(store, root)
    assert root.state in (RunState.COMPLETED, RunState.FAILED)
    if root.state == RunState.COMPLETED:
        assert root.outcome().reply == "All done."
