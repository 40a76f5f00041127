"""Issue 17: the history-changing records replay strictly, and a refused save changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from agentfsm import Agent, MemoryStore, ScriptedModel
from agentfsm.errors import ReplayError, StoreWriteError
from agentfsm.states import Event
from agentfsm.states.names import RecordKind
from agentfsm.stores import replay

RUN_ID = "run-records"


def _compacted_run(store: MemoryStore) -> list[Event]:
    agent = Agent(
        ScriptedModel().text("One."), system_prompt="Be brief.", store=store, run_id=RUN_ID
    )
    agent.start()
    agent.submit("a")
    agent.compact("Summary.", keep=0)
    return store.events(RUN_ID)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"start": 2, "end": 1}, "0 <= start < end"),
        ({"start": "1", "end": 3}, "0 <= start < end"),
        ({"start": 1, "end": 99}, "past the conversation's end"),
        ({"start": 1, "end": 3, "summary": {"role": "nobody"}}, "valid Message"),
    ],
)
def test_a_tampered_compacted_record_is_refused(data: dict[str, Any], words: str) -> None:
    log = _compacted_run(MemoryStore())
    assert log[-1].event == RecordKind.COMPACTED
    tampered = log[-1].model_copy(update={"data": {**log[-1].data, **data}})
    with pytest.raises(ReplayError, match=words):
        replay([*log[:-1], tampered])


def test_a_tampered_tool_calls_edited_record_is_refused() -> None:
    log = _compacted_run(MemoryStore())
    record = log[-1].model_copy(
        update={"event": RecordKind.TOOL_CALLS_EDITED, "data": {"original": {}, "edited": {}}}
    )
    with pytest.raises(ReplayError, match="valid Message"):
        replay([*log[:-1], record])


class RefusingStore(MemoryStore):
    """Refuses every save once ``refuse`` is set."""

    refuse = False

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.refuse:
            raise StoreWriteError(RUN_ID, "memory", "disk full")
        super().save(*args, **kwargs)


def test_a_compaction_the_store_refuses_leaves_the_run_as_stored() -> None:
    store = RefusingStore()
    agent = Agent(
        ScriptedModel().text("One."), system_prompt="Be brief.", store=store, run_id=RUN_ID
    )
    agent.start()
    agent.submit("a")
    before = agent.messages
    store.refuse = True
    with pytest.raises(StoreWriteError):
        agent.compact("Summary.")
    assert agent.messages == before
