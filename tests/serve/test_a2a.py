"""End to end: agentfsm runs served over A2A, driven by the SDK's own client over real HTTP."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from pathlib import Path

import httpx
import pytest
from a2a.client import Client
from a2a.helpers.proto_helpers import get_data_parts, get_text_parts
from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)

from agentfsm import MemoryStore, SQLiteStore
from agentfsm.serve.a2a import RunExecutor, a2a_app
from tests.serve.a2a_support import (
    BLOCK,
    PNG,
    SCRIPTS,
    Served,
    client,
    collect,
    factory,
    run,
    script_for,
    serving,
    text_message,
)

COMPLETED, INPUT_REQUIRED = TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_INPUT_REQUIRED


@pytest.fixture
def run_id() -> str:
    return f"run-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def server(tmp_path: Path) -> Served:
    with serving(tmp_path / "runs.db") as served:
        yield served


def final_task(responses: list[StreamResponse]) -> Task:
    (response,) = responses
    assert response.HasField("task")
    return response.task


def stored(server: Served, run_id: str) -> tuple[str, str | None, int]:
    snapshot = server.store.load(run_id)
    assert snapshot is not None
    return snapshot.state, snapshot.reason, snapshot.turn


def test_the_agent_card_lists_each_tool_as_a_skill(server: Served) -> None:
    card = httpx.get(f"{server.url}/.well-known/agent-card.json").json()
    assert sorted(skill["id"] for skill in card["skills"]) == [
        "chart",
        "slow",
        "transfer",
        "weather",
    ]
    assert card["capabilities"]["streaming"] is True
    bindings = {i["protocolBinding"]: i["url"] for i in card["supportedInterfaces"]}
    assert bindings == {"JSONRPC": server.url, "HTTP+JSON": server.url}


def test_a_tool_round_completes_the_task_with_the_reply_as_an_artifact(
    server: Served, run_id: str
) -> None:
    script_for(run_id).tool_call("weather", city="Oslo").text("Sunny in Oslo.")

    async def talk() -> tuple[Task, Task]:
        a2a = await client(server.url)
        task = final_task(await collect(a2a, text_message("Weather?", context_id=run_id)))
        return task, await a2a.get_task(GetTaskRequest(id=task.id))

    task, fetched = run(talk())
    assert task.status.state == COMPLETED
    assert task.context_id == run_id
    assert [get_text_parts(a.parts) for a in task.artifacts] == [["Sunny in Oslo."]]
    assert fetched.status.state == COMPLETED
    assert [a.name for a in fetched.artifacts] == ["reply"]
    assert stored(server, run_id) == ("completed", "answered", 1)
    messages = server.store.load(run_id).messages  # type: ignore[union-attr]
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[2].content == "sunny in Oslo"


def test_streaming_reports_every_transition_then_the_artifact_then_the_end(
    server: Served, run_id: str
) -> None:
    script_for(run_id).tool_call("weather", city="Oslo").text("Sunny.")

    async def talk() -> list[StreamResponse]:
        a2a = await client(server.url, streaming=True)
        return await collect(a2a, text_message("Hi", context_id=run_id))

    responses = run(talk())
    kinds = [r.WhichOneof("payload") for r in responses]
    assert kinds[0] == "task"
    assert kinds[-2:] == ["artifact_update", "status_update"]
    updates = [r.status_update for r in responses if r.HasField("status_update")]
    reported = [int(u.metadata["agentfsm"]["seq"]) for u in updates]
    log = [
        e.seq
        for e in server.store.events(run_id)
        if e.machine != "conversation" and e.event != "start"
    ]
    assert reported == log  # every transition of the turn, in order, once
    assert [u.status.state for u in updates[:-1]] == [TaskState.TASK_STATE_WORKING] * (
        len(updates) - 1
    )
    assert updates[-1].status.state == COMPLETED
    assert updates[-1].metadata["agentfsm"]["event"] == "complete"
    assert get_text_parts(responses[-2].artifact_update.artifact.parts) == ["Sunny."]


def test_a_tools_content_for_the_user_reaches_the_caller_as_an_artifact(
    server: Served, run_id: str
) -> None:
    # Never the model's (its tool message has the summary only): the caller gets it, text as
    # text and the image as raw bytes with its media type, before the reply.
    script_for(run_id).tool_call("chart", city="Oslo").text("Here is Oslo.")

    async def talk() -> list[StreamResponse]:
        a2a = await client(server.url, streaming=True)
        return await collect(a2a, text_message("Draw Oslo", context_id=run_id))

    responses = run(talk())
    artifacts = [r.artifact_update.artifact for r in responses if r.HasField("artifact_update")]
    assert [a.name for a in artifacts] == ["user_content", "reply"]
    shown = artifacts[0]
    assert shown.metadata["tool"] == "chart"
    assert get_text_parts(shown.parts) == ["Weather in Oslo"]
    (image,) = [part for part in shown.parts if part.HasField("raw")]
    assert (image.media_type, image.raw) == ("image/png", base64.b64decode(PNG))
    assert get_text_parts(artifacts[1].parts) == ["Here is Oslo."]
    messages = server.store.load(run_id).messages  # type: ignore[union-attr]
    assert [m.content for m in messages if m.role == "tool"] == ["drew Oslo"]


def test_an_approval_round_trip(server: Served, run_id: str) -> None:
    script_for(run_id).tool_call("transfer", amount=5).text("Moved.")

    async def talk() -> tuple[Task, Task, Task]:
        a2a = await client(server.url)
        waiting = final_task(await collect(a2a, text_message("Pay", context_id=run_id)))
        (pending,) = get_data_parts(waiting.status.message.parts)[0]["pending"]
        wrong = final_task(await collect(a2a, text_message("yes", task_id=waiting.id)))
        decision = {"decisions": {pending["id"]: "approve"}}
        done = final_task(await collect(a2a, text_message("", task_id=waiting.id, data=decision)))
        return waiting, wrong, done

    waiting, wrong, done = run(talk())
    assert waiting.status.state == INPUT_REQUIRED
    data = get_data_parts(waiting.status.message.parts)[0]
    assert data["state"] == "requires_action"
    assert [(c["name"], c["arguments"]) for c in data["pending"]] == [
        ("transfer", '{"amount": 5}')
    ]
    # A message with no decisions changes nothing: the task still waits, and says why.
    assert wrong.status.state == INPUT_REQUIRED
    assert "the run awaits decisions" in get_text_parts(wrong.status.message.parts)[0]
    assert done.status.state == COMPLETED
    assert stored(server, run_id) == ("completed", "answered", 1)
    tool_message = server.store.load(run_id).messages[2]  # type: ignore[union-attr]
    assert tool_message.content == "moved 5"


def test_an_ask_user_round_trip(server: Served, run_id: str) -> None:
    script_for(run_id).tool_call("ask_user", question="Which city?")
    script_for(run_id).tool_call("weather", city="Oslo").text("Sunny in Oslo.")

    async def talk() -> tuple[Task, Task]:
        a2a = await client(server.url)
        asked = final_task(await collect(a2a, text_message("Weather?", context_id=run_id)))
        done = final_task(await collect(a2a, text_message("Oslo", task_id=asked.id)))
        return asked, done

    asked, done = run(talk())
    assert asked.status.state == INPUT_REQUIRED
    assert get_text_parts(asked.status.message.parts) == ["Which city?"]
    assert get_data_parts(asked.status.message.parts)[0]["question"] == "Which city?"
    assert done.status.state == COMPLETED
    assert done.id == asked.id
    assert stored(server, run_id) == ("completed", "answered", 1)


def test_cancelling_a_waiting_task_cancels_the_runs_turn(server: Served, run_id: str) -> None:
    script_for(run_id).tool_call("transfer", amount=5)

    async def talk() -> tuple[Task, Task]:
        a2a = await client(server.url)
        waiting = final_task(await collect(a2a, text_message("Pay", context_id=run_id)))
        await a2a.cancel_task(CancelTaskRequest(id=waiting.id))
        return waiting, await a2a.get_task(GetTaskRequest(id=waiting.id))

    waiting, after = run(talk())
    assert waiting.status.state == INPUT_REQUIRED
    assert after.status.state == TaskState.TASK_STATE_CANCELED
    assert stored(server, run_id) == ("failed", "cancelled", 1)
    assert server.store.load(run_id).messages[-1].role == "tool"  # type: ignore[union-attr]


def test_cancelling_a_working_task_cancels_the_turn_at_its_next_boundary(
    server: Served, run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    script_for(run_id).tool_call("slow").text("never said")
    cancel = RunExecutor.cancel

    async def cancel_then_let_the_tool_finish(
        self: RunExecutor, context: RequestContext, event_queue: EventQueue
    ) -> None:
        # The tool is running when the cancel comes: the boundary is after it, once the
        # cancel (asked for at once, without waiting) lets it finish.
        asyncio.get_running_loop().call_soon(BLOCK.set)
        await cancel(self, context, event_queue)

    monkeypatch.setattr(RunExecutor, "cancel", cancel_then_let_the_tool_finish)

    async def talk() -> tuple[Task, list[StreamResponse]]:
        a2a = await client(server.url, streaming=True)
        BLOCK.clear()
        seen: list[StreamResponse] = []

        async def send() -> None:
            async for response in a2a.send_message(text_message("Go", context_id=run_id)):
                seen.append(response)

        sending = asyncio.ensure_future(send())
        while "acting" not in {
            r.status_update.metadata["agentfsm"]["target"]
            for r in seen
            if r.HasField("status_update")
        }:
            await asyncio.sleep(0.01)
        other = await client(server.url)
        cancelled = await other.cancel_task(CancelTaskRequest(id=seen[0].task.id))
        await asyncio.wait_for(sending, 10)
        return cancelled, seen

    try:
        task, seen = run(talk())
    finally:
        BLOCK.set()
    assert task.status.state == TaskState.TASK_STATE_CANCELED
    # The stream ends at the terminal state, as the protocol says: canceled, not working.
    last = seen[-1]
    assert last.HasField("status_update"), seen[-1]
    assert last.status_update.status.state == TaskState.TASK_STATE_CANCELED
    snapshot = server.store.load(run_id)
    assert snapshot is not None
    assert (snapshot.state, snapshot.reason) == ("failed", "cancelled")
    assert [m.role for m in snapshot.messages] == ["user", "assistant", "tool"]
    assert snapshot.messages[-1].content == "done"  # the running call finished; none after


def test_a_subscriber_sees_a_waiting_task_go_on(server: Served, run_id: str) -> None:
    script_for(run_id).tool_call("ask_user", question="Which city?").text("Oslo it is.")

    async def talk() -> list[StreamResponse]:
        a2a = await client(server.url, streaming=True)
        first = await collect(a2a, text_message("Weather?", context_id=run_id))
        task_id = first[0].task.id
        watcher = await client(server.url, streaming=True)
        watched: list[StreamResponse] = []
        started = asyncio.Event()

        async def watch() -> None:
            async for response in watcher.subscribe(SubscribeToTaskRequest(id=task_id)):
                watched.append(response)
                started.set()

        watching = asyncio.ensure_future(watch())
        await asyncio.wait_for(started.wait(), 10)
        await collect(a2a, text_message("Oslo", task_id=task_id))
        await asyncio.wait_for(watching, 10)
        return watched

    watched = run(talk())
    assert watched[0].task.status.state == INPUT_REQUIRED
    assert watched[-1].status_update.status.state == COMPLETED
    assert any(r.HasField("artifact_update") for r in watched)


def test_a_restarted_server_goes_on_with_the_task_from_the_store(
    tmp_path: Path, run_id: str
) -> None:
    script_for(run_id).tool_call("ask_user", question="Which city?")
    script_for(run_id).text("Sunny in Oslo.")
    path = tmp_path / "runs.db"

    async def ask(url: str) -> Task:
        return final_task(await collect(await client(url), text_message("Hi", context_id=run_id)))

    async def answer(url: str, task_id: str) -> Task:
        a2a = await client(url)
        return final_task(await collect(a2a, text_message("Oslo", task_id=task_id)))

    with serving(path) as first:
        asked = run(ask(first.url))
    with serving(path) as second:
        assert not first.thread.is_alive()  # the first server is gone: only the files remain
        done = run(answer(second.url, asked.id))
        assert stored(second, run_id) == ("completed", "answered", 1)
        messages = second.store.load(run_id).messages  # type: ignore[union-attr]
    assert asked.status.state == INPUT_REQUIRED
    assert done.status.state == COMPLETED
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[2].content == "Oslo"


def test_the_next_task_of_a_context_is_the_runs_next_turn(server: Served, run_id: str) -> None:
    script_for(run_id).text("One.").text("Two.")

    async def talk() -> tuple[Task, Task]:
        a2a = await client(server.url)
        first = final_task(await collect(a2a, text_message("a", context_id=run_id)))
        second = final_task(await collect(a2a, text_message("b", context_id=run_id)))
        return first, second

    first, second = run(talk())
    assert first.id != second.id
    assert get_text_parts(second.artifacts[0].parts) == ["Two."]
    assert stored(server, run_id) == ("completed", "answered", 2)


def test_an_empty_first_message_is_rejected_and_changes_nothing(
    server: Served, run_id: str
) -> None:
    async def talk() -> Task:
        a2a = await client(server.url)
        return final_task(await collect(a2a, text_message("", context_id=run_id, data={})))

    task = run(talk())
    assert task.status.state == TaskState.TASK_STATE_REJECTED
    assert "GuardFailedError" in get_text_parts(task.status.message.parts)[0]
    assert stored(server, run_id) == ("ready", None, 0)


def test_a_new_task_is_refused_while_the_run_waits_in_another(server: Served, run_id: str) -> None:
    script_for(run_id).tool_call("transfer", amount=5)

    async def talk() -> tuple[Task, Task]:
        a2a = await client(server.url)
        waiting = final_task(await collect(a2a, text_message("Pay", context_id=run_id)))
        other = final_task(await collect(a2a, text_message("Hello?", context_id=run_id)))
        return waiting, other

    waiting, other = run(talk())
    assert waiting.status.state == INPUT_REQUIRED
    assert other.status.state == TaskState.TASK_STATE_REJECTED
    assert "waiting in the task that asked" in get_text_parts(other.status.message.parts)[0]
    assert stored(server, run_id) == ("requires_action", None, 1)


def test_a_turn_that_fails_in_a_hook_fails_its_task_with_the_error(server: Served) -> None:
    run_id = f"hooked-{uuid.uuid4().hex[:8]}"
    script_for(run_id).text("never said")

    async def talk() -> Task:
        a2a = await client(server.url)
        return final_task(await collect(a2a, text_message("Hi", context_id=run_id)))

    task = run(talk())
    assert task.status.state == TaskState.TASK_STATE_FAILED
    text = get_text_parts(task.status.message.parts)[0]
    assert "hook handler 'broken_hook' failed in 'before_llm'" in text
    assert get_data_parts(task.status.message.parts) == [{"reason": "error"}]
    assert stored(server, run_id) == ("failed", "error", 1)


@pytest.mark.parametrize("streaming", [True, False], ids=["stream", "send"])
def test_a_model_error_fails_the_task_and_its_text_stays_in_the_servers_log(
    server: Served, run_id: str, streaming: bool, caplog: pytest.LogCaptureFixture
) -> None:
    script_for(run_id).fail(RuntimeError("cannot reach db password=hunter2 host=db.internal"))

    async def talk() -> list[StreamResponse]:
        a2a = await client(server.url, streaming=streaming)
        return await collect(a2a, text_message("Hi", context_id=run_id))

    with caplog.at_level("ERROR", logger="agentfsm.serve.a2a"):
        responses = run(talk())
    last = responses[-1]
    status = last.status_update.status if last.HasField("status_update") else last.task.status
    assert status.state == TaskState.TASK_STATE_FAILED  # the stream ends at it
    text = get_text_parts(status.message.parts)[0]
    assert "hunter2" not in text
    assert "db.internal" not in text
    assert text.startswith("internal error (id ")
    ref = text.split("(id ")[1].split(")")[0]
    [record] = [r for r in caplog.records if ref in r.getMessage()]
    assert record.exc_info is not None
    assert "hunter2" in str(record.exc_info[1])  # the details are in the server's log
    assert stored(server, run_id) == ("failed", "error", 1)


def test_a_failing_factory_fails_the_task_without_its_text(tmp_path: Path) -> None:
    def broken(run_id: str, store: object) -> object:
        if run_id == "agent-card":
            return factory(run_id, MemoryStore())
        raise RuntimeError("secret=s3cr3t")

    url = "http://127.0.0.1:9"
    app = a2a_app(broken, MemoryStore(), url)  # type: ignore[arg-type]
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Hi"}]}},
    }

    async def send() -> dict[str, object]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=url) as http:
            answer = await http.post("/", json=body, headers={"A2A-Version": "1.0"})
            return dict(answer.json())

    answer = asyncio.run(send())
    assert "s3cr3t" not in str(answer)
    assert "internal error (id " in str(answer)


def test_the_rest_binding_serves_the_same_runs(server: Served, run_id: str) -> None:
    script_for(run_id).text("Over REST.")

    async def talk() -> Task:
        a2a: Client = await client(server.url, rest=True)
        return final_task(await collect(a2a, text_message("Hi", context_id=run_id)))

    task = run(talk())
    assert task.status.state == COMPLETED
    assert get_text_parts(task.artifacts[0].parts) == ["Over REST."]


def test_the_factory_must_build_the_run_it_is_asked_for() -> None:
    executor = RunExecutor(lambda run_id, store: factory("other", store), MemoryStore())
    with pytest.raises(TypeError, match="must return an Agent with run_id='mine'"):
        asyncio.run(executor.settle_cancel("mine"))


def test_a_run_is_held_while_requests_use_it_and_let_go_after() -> None:
    executor = RunExecutor(factory, MemoryStore())

    async def use() -> tuple[bool, bool, str]:
        seen = []

        async def request(delay: float) -> None:
            async with executor.holding("held") as agent:
                seen.append(agent)
                await asyncio.sleep(delay)

        await asyncio.gather(request(0.01), request(0))  # the second waits for the first
        async with executor.holding("held") as later:
            state = later.state
        return seen[0] is seen[1], later is seen[0], state

    shared, same_later, state = asyncio.run(use())
    assert shared  # requests that overlap share one Agent, one at a time
    assert not same_later  # the last one let it go; the next restores the run from the store
    assert state == "ready"


def test_a2a_app_wants_an_http_url(tmp_path: Path) -> None:
    with (
        SQLiteStore(tmp_path / "runs.db") as store,
        pytest.raises(ValueError, match="url must be an http:// or https:// URL, not 'x'"),
    ):
        a2a_app(factory, store, "x")


@pytest.fixture(autouse=True)
def _forget_scripts() -> None:
    SCRIPTS.clear()


def test_a_client_of_protocol_0_3_is_served_through_the_compatibility_layer(
    server: Served, run_id: str
) -> None:
    script_for(run_id).text("Hello, 0.3.")
    message = {
        "messageId": "m-03",
        "role": "user",
        "parts": [{"kind": "text", "text": "Hi"}],
        "contextId": run_id,
        "kind": "message",
    }
    body = {"jsonrpc": "2.0", "id": 7, "method": "message/send", "params": {"message": message}}
    card = httpx.get(server.url + "/.well-known/agent-card.json", timeout=10).json()
    assert card["url"] == server.url  # the 0.3 fields, beside the 1.0 ones
    assert card["protocolVersion"].startswith("0.3")
    answer = httpx.post(server.url + "/", json=body, timeout=30).json()  # no A2A-Version
    task = answer["result"]
    assert task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"][0]["text"] == "Hello, 0.3."
    # A request of 1.0 must say so; without the header it is refused, not misread.
    body10 = {**body, "method": "SendMessage", "params": {"message": {"messageId": "x"}}}
    refused = httpx.post(server.url + "/", json=body10, timeout=30).json()
    assert refused["error"]["code"] == -32009


def test_whole_numbers_of_the_metadata_are_sent_as_integers(server: Served, run_id: str) -> None:
    script_for(run_id).tool_call("weather", city="Oslo").text("Sunny.")
    message = {"messageId": "m-int", "role": "ROLE_USER", "parts": [{"text": "Hi"}]}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendStreamingMessage",
        "params": {"message": {**message, "contextId": run_id}},
    }
    headers = {"A2A-Version": "1.0"}
    seqs: list[object] = []
    with httpx.stream("POST", server.url + "/", json=body, headers=headers, timeout=30) as sse:
        for line in sse.iter_lines():
            if line.startswith("data: "):
                update = json.loads(line[6:])["result"].get("statusUpdate")
                if update is not None:
                    seqs.append(update["metadata"]["agentfsm"]["seq"])
    assert seqs
    assert all(type(seq) is int for seq in seqs), seqs  # 5, not 5.0
    assert seqs == sorted(seqs)
