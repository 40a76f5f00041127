"""fork: a new run from a rest point of a stored run; the origin untouched; edits recorded."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agentfsm import Agent, MemoryStore, ScriptedModel, SQLiteStore, tool
from agentfsm.errors import ForkError, ReplayError
from agentfsm.llm.base import FinishReason, ModelResponse
from agentfsm.states import Event, Message, ToolCall
from agentfsm.states.names import RecordKind
from agentfsm.stores import RunStore, Snapshot, open_store, replay
from agentfsm.stores.forking import (
    AddMessage,
    EditCall,
    ReplaceUserMessage,
    fork,
    replay_run,
    rest_points,
    state_at,
)
from agentfsm.tools import ToolPolicy
from agentfsm.verify import check_log

BOUGHT: list[str] = []


@tool(policy=ToolPolicy.REQUIRE_APPROVAL)
def buy(item: str) -> str:
    """Buy something (needs approval)."""
    BOUGHT.append(item)
    return f"bought {item}"


def calls(*pairs: tuple[str, str, str]) -> ModelResponse:
    return ModelResponse(
        tool_calls=tuple(ToolCall(id=i, name=n, arguments=a) for i, n, a in pairs),
        finish_reason=FinishReason.TOOL_CALLS,
    )


def recorded_run(store: RunStore) -> None:
    """A run of 22 events: an approval wait at 4, a question at 12, completed at 19."""
    model = ScriptedModel(
        [
            calls(("k0", "buy", '{"item": "tea"}')),
            calls(("k1", "ask_user", '{"question": "Which tea?"}')),
            ModelResponse(content="Done."),
        ]
    )
    agent = Agent(
        model, [buy], store=store, run_id="origin", system_prompt="Be brief.", ask_user=True
    )
    agent.start()
    agent.submit("Buy tea")
    agent.resolve_action({"k0": "approve"})
    agent.provide_input("green")
    agent.pause()
    agent.resume()
    agent.reset()


def taken_up(store: RunStore, run_id: str, *replies: ModelResponse) -> Agent:
    agent = Agent(ScriptedModel(list(replies)), [buy], store=store, run_id=run_id, ask_user=True)
    agent.start()
    return agent


@pytest.fixture
def store() -> MemoryStore:
    BOUGHT.clear()
    memory = MemoryStore()
    recorded_run(memory)
    return memory


def comparable(snapshot: Any) -> dict[str, Any]:
    return dict(snapshot.model_dump(exclude={"run_id", "seq", "version", "trace", "origin"}))


def test_rest_points_are_where_a_call_returned(store: MemoryStore) -> None:
    assert rest_points(store, "origin") == (1, 4, 12, 19, 20, 21, 22)


def test_a_fork_at_an_approval_wait_is_waiting_again_and_the_origin_is_untouched(
    store: MemoryStore,
) -> None:
    before = (store.load("origin"), store.events("origin"))

    forked = fork(store, "origin", at=7, nearest=True, new_run_id="f")

    assert (store.load("origin"), store.events("origin")) == before
    assert forked.origin is not None
    assert (forked.origin.run_id, forked.origin.seq) == ("origin", 4)
    assert comparable(forked) == comparable(state_at(store, "origin", 4))
    assert (forked.state, forked.pending) == ("requires_action", ("k0",))
    assert [(e.seq, e.event) for e in store.events("f")] == [(1, RecordKind.FORKED)]
    assert store.events("f")[0].data == {"origin": "origin", "seq": 4}
    agent = taken_up(store, "f", ModelResponse(content="Bought."))
    BOUGHT.clear()
    outcome = agent.resolve_action({"k0": "approve"})
    assert (outcome.state, outcome.reply, BOUGHT) == ("completed", "Bought.", ["tea"])
    assert replay_run(store, "f").state == "completed"
    assert store.load("f").origin == forked.origin  # kept by every save of the fork


def test_a_fork_at_a_question_asks_it_again(store: MemoryStore) -> None:
    forked = fork(store, "origin", at=12)

    agent = taken_up(store, forked.run_id, ModelResponse(content="Oolong it is."))
    assert (agent.state, agent.question) == ("input_required", "Which tea?")
    assert agent.provide_input("oolong").reply == "Oolong it is."
    assert agent.messages[-2].content == "oolong"
    replay_run(store, forked.run_id)


def test_an_edited_pending_call_runs_with_its_new_arguments(store: MemoryStore) -> None:
    forked = fork(store, "origin", at=4, edit=EditCall("k0", {"item": "coffee"}))

    assert forked.messages[-1].tool_calls[0].arguments == '{"item": "coffee"}'
    assert [e.event for e in store.events(forked.run_id)] == ["forked", "message_replaced"]
    agent = taken_up(store, forked.run_id, ModelResponse(content="Coffee."))
    BOUGHT.clear()
    agent.resolve_action({"k0": "approve"})
    assert BOUGHT == ["coffee"]
    assert replay_run(store, forked.run_id).messages == store.load(forked.run_id).messages


def test_replace_the_last_user_message_and_add_one(store: MemoryStore) -> None:
    forked = fork(
        store,
        "origin",
        at=19,
        edit=[ReplaceUserMessage("Buy coffee"), AddMessage("And be quick.")],
    )

    assert [m.content for m in forked.messages if m.role == "user"] == [
        "Buy coffee",
        "And be quick.",
    ]
    assert [e.event for e in store.events(forked.run_id)] == [
        "forked",
        "message_replaced",
        "message",
    ]
    assert replay_run(store, forked.run_id).messages == forked.messages


def test_a_message_added_while_a_round_is_open_waits_for_the_round(store: MemoryStore) -> None:
    forked = fork(store, "origin", at=4, edit=AddMessage(Message.system("Mind the budget.")))

    assert forked.deferred == (Message.system("Mind the budget."),)
    agent = taken_up(store, forked.run_id, ModelResponse(content="Ok."))
    agent.resolve_action({"k0": "deny"})
    roles = [m.role for m in agent.messages]
    assert roles[-3:] == ["tool", "system", "assistant"]  # after the round's tool message (I7)
    replay_run(store, forked.run_id)


def test_a_fork_of_a_fork_resolves_both_origins(store: MemoryStore) -> None:
    first = fork(store, "origin", at=4, edit=EditCall("k0", '{"item": "mate"}'))
    agent = taken_up(store, first.run_id, ModelResponse(content="Mate."))
    agent.resolve_action({"k0": "approve"})

    assert rest_points(store, first.run_id)[0] == 2
    second = fork(store, first.run_id)

    assert second.origin is not None
    assert second.origin.run_id == first.run_id
    assert comparable(second) == comparable(store.load(first.run_id))
    assert replay_run(store, second.run_id).messages == store.load(first.run_id).messages


def test_check_log_passes_on_a_fork_started_where_its_origin_was(store: MemoryStore) -> None:
    forked = fork(store, "origin", at=4, edit=EditCall("k0", {"item": "coffee"}))
    agent = taken_up(store, forked.run_id, ModelResponse(content="Coffee."))
    agent.resolve_action({"k0": "approve"})
    start = state_at(store, "origin", 4).model_copy(update={"run_id": forked.run_id})

    found = check_log(store.events(forked.run_id), data=lambda run_id: start.to_data())

    assert found.ok, str(found)
    assert found.data.state == "completed"


def test_the_origin_s_stored_bytes_do_not_change(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as store:
        recorded_run(store)

    def rows() -> list[Any]:
        with sqlite3.connect(path) as db:
            found = []
            for table in ("runs", "events", "items"):
                found += db.execute(
                    f"SELECT * FROM {table} WHERE run_no = "
                    "(SELECT run_no FROM runs WHERE run_id = 'origin') ORDER BY 2"
                ).fetchall()
            return found

    before = rows()
    with SQLiteStore(path) as store:
        forked = fork(store, "origin", at=4, edit=EditCall("k0", {"item": "coffee"}))
        taken_up(store, forked.run_id, ModelResponse(content="Ok.")).resolve_action(
            {"k0": "approve"}
        )
        replay_run(store, forked.run_id)
    assert rows() == before


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"run_id": "nope"}, "cannot fork run 'nope': no such run"),
        ({"at": 0}, "at=0 is no seq: allowed: 1 to 22"),
        ({"at": 23}, "at=23 is past its last event; allowed: 1 to 22"),
        ({"edit": EditCall("k9", {})}, "call 'k9' is not pending at seq 4; pending: 'k0'"),
        ({"edit": EditCall("k0", "[1]")}, "must be a JSON object"),
        ({"edit": EditCall("k0", "{nope")}, "must be a JSON object"),
        ({"edit": ReplaceUserMessage(" ")}, "non-empty str"),
        ({"edit": AddMessage(Message.tool("k0", "x"))}, "no tool message"),
        (
            {"edit": AddMessage(Message.assistant(tool_calls=(ToolCall(id="z", name="buy"),)))},
            "no tool call",
        ),
        ({"edit": AddMessage(" ")}, "must be non-empty text"),
        ({"new_run_id": "origin"}, "new_run_id='origin' is a stored run already"),
        ({"edit": AddMessage(7)}, "must be a Message or a str"),  # type: ignore[arg-type]
        ({"edit": EditCall("k0", {"x": {1}})}, "must be a JSON object"),  # type: ignore[dict-item]
        ({"edit": EditCall("k0", 5)}, "must be a JSON object"),  # type: ignore[arg-type]
    ],
)
def test_a_bad_fork_is_refused_and_stores_nothing(
    store: MemoryStore, arguments: dict[str, Any], words: str
) -> None:
    options: dict[str, Any] = {"run_id": "origin", "at": 4, **arguments}
    run_id = options.pop("run_id")
    runs = store.list_runs()

    with pytest.raises(ForkError, match=words.replace("[", r"\[")):
        fork(store, run_id, **options)

    assert store.list_runs() == runs


def test_edits_that_do_not_fit_the_fork_point_are_refused(store: MemoryStore) -> None:
    with pytest.raises(ForkError, match="is not pending at seq 19; pending: none"):
        fork(store, "origin", at=19, edit=EditCall("k0", {}))
    with pytest.raises(ForkError, match="the question the run asks is not a call to edit"):
        fork(store, "origin", at=12, edit=EditCall("k1", {}))
    with pytest.raises(ForkError, match="the run has no user message at seq 1"):
        fork(store, "origin", at=1, edit=ReplaceUserMessage("hi"))
    with pytest.raises(TypeError, match="edit must be a ReplaceUserMessage"):
        fork(store, "origin", at=4, edit="hi")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="at must be an int"):
        fork(store, "origin", at="4")  # type: ignore[arg-type]
    assert [run.run_id for run in store.list_runs()] == ["origin"]


def test_a_shut_down_run_is_not_forked_where_it_is_final() -> None:
    store = MemoryStore()
    agent = Agent(ScriptedModel([]), store=store, run_id="done")
    agent.start()
    agent.shutdown()

    with pytest.raises(ForkError, match="at seq 2 the run is shut down, which is final"):
        fork(store, "done")
    assert fork(store, "done", at=1).state == "ready"


def test_a_seq_before_the_first_rest_point_is_refused(store: MemoryStore) -> None:
    forked = fork(store, "origin", at=19, edit=AddMessage("More."))

    with pytest.raises(ForkError, match="at=1 is before the run's first rest point: its first"):
        fork(store, forked.run_id, at=1)


def test_a_fork_s_log_needs_its_origin_to_replay(store: MemoryStore) -> None:
    forked = fork(store, "origin", at=4, edit=EditCall("k0", {"item": "coffee"}))
    log = store.events(forked.run_id)

    with pytest.raises(ReplayError, match="fork of run 'origin' at seq 4: replay it with"):
        replay(log)
    store.delete("origin")
    with pytest.raises(ReplayError, match="has no event 4 in the store"):
        replay_run(store, forked.run_id)
    with pytest.raises(ReplayError, match="no such run"):
        replay_run(store, "origin")


def test_tampered_fork_records_are_refused(store: MemoryStore) -> None:
    forked = fork(store, "origin", at=4, edit=EditCall("k0", {"item": "coffee"}))
    first, edited = store.events(forked.run_id)
    origin = state_at(store, "origin", 4)

    def resolve(point: object) -> Any:
        return origin

    bad_index = edited.model_copy(update={"data": {**edited.data, "index": 99}})
    with pytest.raises(ReplayError, match="must carry the index of a message"):
        replay([first, bad_index], origin=resolve)
    bad_original = edited.model_copy(update={"data": {**edited.data, "index": 0}})
    with pytest.raises(ReplayError, match="is not the 'original'"):
        replay([first, bad_original], origin=resolve)
    moved = first.model_copy(update={"source": "ready", "target": "ready"})
    with pytest.raises(ReplayError, match="must stay in the origin's state"):
        replay([moved, edited], origin=resolve)
    late = first.model_copy(
        update={"seq": 2, "run_id": "origin", "source": "ready", "target": "ready"}
    )
    with pytest.raises(ReplayError, match="must be the first event"):
        replay([*store.events("origin")[:1], late])


def test_a_fork_works_the_same_on_every_durable_store(store_url: str) -> None:
    with open_store(store_url) as store:
        recorded_run(store)
        before = (store.load("origin"), store.events("origin"))
        forked = fork(store, "origin", at=4, edit=EditCall("k0", {"item": "coffee"}))
    with open_store(store_url) as store:  # another connection, as another process
        agent = taken_up(store, forked.run_id, ModelResponse(content="Coffee."))
        assert agent.pending[0].arguments == '{"item": "coffee"}'
        BOUGHT.clear()
        assert agent.resolve_action({"k0": "approve"}).state == "completed"
        assert BOUGHT == ["coffee"]
        assert replay_run(store, forked.run_id).messages == agent.messages
        assert (store.load("origin"), store.events("origin")) == before
        assert [run.run_id for run in store.list_runs()] == sorted(["origin", forked.run_id])


def test_a_turn_ended_with_a_queued_input_is_no_rest_point() -> None:
    store = MemoryStore()
    holder: list[Agent] = []

    @tool
    def note(text: str) -> str:
        """Take a note, and queue another input."""
        holder[0].submit("And again.")
        return "noted"

    model = ScriptedModel(
        [calls(("n", "note", '{"text": "x"}')), ModelResponse(content="One."),
         ModelResponse(content="Two.")]
    )  # fmt: skip
    agent = Agent(model, [note], store=store, run_id="q", input_policy="queue")
    holder.append(agent)
    agent.start()
    agent.submit("Note it.")
    log = store.events("q")
    ended = next(e.seq for e in log if e.event == "complete")

    assert agent.turn == 2
    assert log[ended].event == "submit"  # the queued input, in the same call
    assert ended not in rest_points(store, "q")
    assert rest_points(store, "q") == (1, log[-1].seq)


def test_forks_whose_origins_go_round_are_refused() -> None:
    store = MemoryStore()
    for run_id, other in (("a", "b"), ("b", "a")):
        record = Event(
            seq=1, run_id=run_id, machine="conversation", event="forked", source="ready",
            target="ready", at=0.0, data={"origin": other, "seq": 1},
        )  # fmt: skip
        snapshot = Snapshot(run_id=run_id, state="ready", seq=1)
        store.save(snapshot, [record], expected_version=None)

    with pytest.raises(ReplayError, match="go round in a circle"):
        replay_run(store, "a")
    late = store.events("a")[0].model_copy(update={"seq": 3})
    with pytest.raises(ReplayError, match="must be the first event of a fork's log"):
        replay([late])
