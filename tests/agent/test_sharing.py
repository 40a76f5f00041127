"""Agents built from one configuration share what they can, and nothing of their runs.

An Agent per run shares its tools' table (and the schemas offered of them) with the other
Agents built from the same list of tools; what one Agent adds (``ask_user``, a typed run's
``final_answer``, a tool source's listing, a hook handler) is its own.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Sequence

import pytest
from pydantic import BaseModel

from agentfsm import Message, ModelResponse, ScriptedModel
from agentfsm.agent import Agent
from agentfsm.fsm import Emitter
from agentfsm.states.json import JSONObject
from agentfsm.states.names import MachineName
from agentfsm.tools import HookContext, HookKind, Tool, tool
from tests.agent.agent_support import answer, calls


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


TOOLS = [lookup]


class Verdict(BaseModel):
    ok: bool


def offered(model: ScriptedModel) -> list[str]:
    """The names of the tools the model was offered in its last call."""
    return [str(schema["function"]["name"]) for schema in model.requests[-1].tools]  # type: ignore[index, call-overload]


class Source:
    """A tool source listing one tool of its own."""

    prefix = "extra"

    async def listing(self) -> tuple[JSONObject, ...]:
        return ({"name": "extra_tool"},)

    def tools_of(self, listing: Sequence[JSONObject]) -> tuple[Tool[..., object], ...]:
        return tuple(Tool(lambda: "ok", name=str(item["name"])) for item in listing)

    def take_changed(self) -> bool:
        return False


def test_agents_from_one_tool_list_offer_each_only_what_they_add() -> None:
    models = [ScriptedModel([answer("hi")]) for _ in range(4)]
    typed_model = ScriptedModel([calls(("c1", "final_answer", {"ok": True}))])
    agents = [
        Agent(models[0], TOOLS, ask_user=True),
        Agent(models[1], TOOLS, ask_user=False),
        Agent(typed_model, TOOLS, ask_user=False, output_type=Verdict),
        Agent(models[2], TOOLS, ask_user=False, mcp_servers=[Source()]),
        Agent(models[3], TOOLS, ask_user=False),
    ]
    for agent in agents:
        agent.start()
        agent.submit("go")

    assert offered(models[0]) == ["lookup", "ask_user"]
    assert offered(models[1]) == ["lookup"]
    assert offered(typed_model) == ["lookup", "final_answer"]
    assert offered(models[2]) == ["lookup", "extra_tool"]
    assert offered(models[3]) == ["lookup"]  # built last: nothing of the others leaked in
    assert agents[4].tools.registry.names == ("lookup",)
    assert agents[3].tools.registry.names == ("lookup", "extra_tool")


def test_a_hook_handler_added_to_one_agent_is_not_anothers() -> None:
    seen: list[str] = []
    first = Agent(ScriptedModel([answer("one")]), TOOLS)
    second = Agent(ScriptedModel([answer("two")]), TOOLS)

    @first.on(HookKind.BEFORE_LLM)
    def before(context: HookContext) -> None:
        seen.append(context.run_id)

    for agent in (first, second):
        agent.start()
        agent.submit("go")

    assert seen == [first.run_id]
    assert HookKind.BEFORE_LLM in first.hooks
    assert HookKind.BEFORE_LLM not in second.hooks
    assert second.hooks.handlers(HookKind.BEFORE_LLM) == ()


def test_two_agents_sharing_tools_keep_their_runs_apart() -> None:
    first = Agent(ScriptedModel([calls(("c1", "lookup", {"query": "a"})), answer("A")]), TOOLS)
    second = Agent(ScriptedModel([answer("B")]), TOOLS)
    for agent in (first, second):
        agent.start()

    assert first.submit("first").reply == "A"
    assert second.submit("second").reply == "B"

    assert [m.content for m in second.messages] == ["second", "B"]
    assert len(first.messages) == 4  # the user's, the call, its answer, the reply
    assert [entry.kind for entry in second.trace] == ["user_input", "llm_call"]


def test_an_agent_nobody_holds_is_freed_at_once_and_its_emitter_then_tells_nobody() -> None:
    async def run() -> tuple[weakref.ref[Agent], Emitter]:
        agent = Agent(ScriptedModel([answer("hi")]), TOOLS, listeners=[seen.append])
        await agent.astart()
        await agent.asubmit("go")
        return weakref.ref(agent), agent._emitter

    seen: list[object] = []
    gc.disable()  # freed by reference counting alone: no cycle through the emitter
    try:
        ref, emitter = asyncio.run(run())
        assert ref() is None
    finally:
        gc.enable()
    told = len(seen)
    emitter.emit(MachineName.CONVERSATION, "reset", "ready", "ready", {})

    assert told > 0
    assert len(seen) == told  # the run is gone: its listeners hear nothing more


def test_a_runs_messages_keep_their_fields_inline_with_no_dict_each() -> None:
    round_ = calls(("c1", "lookup", {"query": "a"}), ("c2", "lookup", {}))
    agent = Agent(
        ScriptedModel([round_, answer("A")]),
        TOOLS,
        listeners=[lambda event: None],
    )
    agent.start()

    assert agent.submit("first").reply == "A"

    assert [message.role for message in agent.messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    user_input = agent.trace[0]
    for record in [*agent.messages, user_input]:
        # Each keeps its fields in its inline values: the garbage collector sees them one by
        # one, and no dict object (64 bytes) per message.
        assert not any(type(part) is dict for part in gc.get_referents(record)), record


class _Waiting:
    """A model that answers once ``go`` is set: a run waiting on it stays at its peak."""

    name = "waiting"

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.waiting = asyncio.Event()

    async def complete(
        self, messages: Sequence[object], tools: Sequence[JSONObject], *, on_retry: object = None
    ) -> object:
        self.waiting.set()
        await self.go.wait()
        return answer("A")


def test_a_run_waiting_on_its_model_keeps_no_copy_of_its_call_arguments() -> None:
    async def run() -> tuple[set[str], str | None]:
        model = _Waiting()
        agent = Agent(model, TOOLS, ask_user=False)  # type: ignore[arg-type]
        await agent.astart()
        task = asyncio.ensure_future(agent.asubmit("first"))
        await model.waiting.wait()
        step = task.get_coro()  # the step's own coroutine, awaiting the turn
        held = set(step.cr_frame.f_locals)  # type: ignore[union-attr]
        model.go.set()
        return held, (await task).reply

    held, reply = asyncio.run(run())

    assert reply == "A"
    assert "self" in held
    # the positional tuple and the keyword dict of the call were handed to the method's
    # coroutine and freed (112 bytes per waiting run), as was that finished coroutine
    assert not held & {"args", "kwargs", "call"}


class _Fresh:
    """A model that builds each response anew (as a real one does), keeping what it was given.

    It asks for one round of ``lookup``, then waits for ``go`` before answering.
    """

    name = "fresh"

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.waiting = asyncio.Event()
        self.given: list[Sequence[object]] = []
        self.replies: list[weakref.ref[ModelResponse]] = []

    async def complete(
        self, messages: Sequence[object], tools: Sequence[JSONObject], *, on_retry: object = None
    ) -> ModelResponse:
        self.given.append(messages)
        if len(self.given) == 1:
            reply = calls(("c1", "lookup", {"query": "a"}))
        else:
            self.waiting.set()
            await self.go.wait()
            reply = answer("A")
        self.replies.append(weakref.ref(reply))
        return reply


def test_a_waiting_run_holds_neither_its_last_response_nor_a_copy_of_its_messages() -> None:
    async def run() -> tuple[bool, tuple[object, ...], str | None, tuple[Message, ...]]:
        model = _Fresh()
        agent = Agent(model, TOOLS, ask_user=False)  # type: ignore[arg-type]
        await agent.astart()
        task = asyncio.ensure_future(agent.asubmit("first"))
        await model.waiting.wait()
        gc.disable()  # (freed by reference counting alone)
        try:
            first_freed = model.replies[0]() is None
        finally:
            gc.enable()
        # what the model was given is the run's conversation itself, not a copy of it
        given = model.given[-1]
        assert given is agent._messages
        view = tuple(given)
        model.go.set()
        reply = (await task).reply
        assert model.given[-1] is given  # what the model holds did not change meanwhile
        return first_freed, view, reply, agent.messages

    first_freed, view, reply, messages = asyncio.run(run())

    assert reply == "A"
    # the first response is not kept while the second call waits (a response a model
    # builds, with its fields-set set and its dict, is some 500 bytes)
    assert first_freed
    assert [message.role for message in view] == ["user", "assistant", "tool"]
    assert messages[:3] == view
    assert [message.role for message in messages] == ["user", "assistant", "tool", "assistant"]


def test_a_step_given_bad_arguments_refuses_them_and_changes_nothing() -> None:
    agent = Agent(ScriptedModel([answer("A")]), TOOLS, ask_user=False)
    agent.start()
    before = (agent.state, agent.turn, agent.messages, agent.trace)

    async def bad() -> None:
        await agent.asubmit()  # type: ignore[call-arg]

    with pytest.raises(TypeError, match="text"):
        asyncio.run(bad())
    assert (agent.state, agent.turn, agent.messages, agent.trace) == before
    assert agent.submit("hi").reply == "A"
