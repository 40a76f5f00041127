"""`SQLiteTaskStore` keeps A2A tasks per owner across reopenings of its file."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.types import ListTasksRequest, Task, TaskState, TaskStatus

from agentfsm.serve.a2a_tasks import SQLiteTaskStore, task_store_path


class Named(User):
    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self.name


def task(task_id: str, context_id: str, state: TaskState = TaskState.TASK_STATE_WORKING) -> Task:
    return Task(id=task_id, context_id=context_id, status=TaskStatus(state=state))


def test_tasks_outlive_the_store_and_stay_with_their_owner(tmp_path: Path) -> None:
    alice = ServerCallContext(user=Named("alice"))
    bob = ServerCallContext(user=Named("bob"))
    path = task_store_path(tmp_path / "runs.db")
    assert path == tmp_path / "runs.a2a.db"

    async def write() -> None:
        store = SQLiteTaskStore(path)
        await store.save(task("t1", "c1"), alice)
        await store.save(task("t2", "c1"), alice)
        await store.save(task("t3", "c2"), alice)
        await store.save(task("t1", "c1", TaskState.TASK_STATE_COMPLETED), alice)  # replaced
        await store.delete("t2", alice)
        store.close()

    async def read() -> tuple[Task | None, Task | None, list[str], list[str]]:
        store = SQLiteTaskStore(path)
        try:
            mine = await store.get("t1", alice)
            theirs = await store.get("t1", bob)
            listed = await store.list(ListTasksRequest(context_id="c1"), alice)
            nothing = await store.list(ListTasksRequest(), bob)
            return mine, theirs, [t.id for t in listed.tasks], [t.id for t in nothing.tasks]
        finally:
            store.close()

    asyncio.run(write())
    mine, theirs, listed, nothing = asyncio.run(read())
    assert mine is not None
    assert mine.status.state == TaskState.TASK_STATE_COMPLETED
    assert theirs is None
    assert listed == ["t1"]
    assert nothing == []


def test_importing_agentfsm_imports_no_extra() -> None:
    code = (
        "import sys, agentfsm, agentfsm.serve, agentfsm.cli\n"
        "extras = {'a2a', 'opentelemetry', 'uvicorn', 'starlette'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in extras))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
