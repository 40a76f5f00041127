from __future__ import annotations

import pytest

from agentfsm.errors import HookFailedError, HookMessageError
from agentfsm.states.messages import Message, ToolCall
from agentfsm.tools import (
    MESSAGE_HOOKS,
    HookContext,
    HookKind,
    Hooks,
    ToolContext,
    ToolSystem,
)
from tests.tools.spies import Flavour, call, spy_tool

CONTEXT = ToolContext(run_id="run-1", turn=1, iteration=1)
ASSISTANT = Message.assistant(tool_calls=(ToolCall(id="a", name="forecast"),))
HISTORY = (Message.user("Weather in Paris?"), ASSISTANT)
MAY_ADD = (
    "'after_user_input', 'before_llm', 'after_llm', 'before_tools', 'after_tools', 'on_complete'"
)


def test_the_hook_table_matches_lifecycle_section_3() -> None:
    assert [kind.value for kind in HookKind] == [
        "after_user_input",
        "before_llm",
        "after_llm",
        "before_tools",
        "before_each_tool",
        "after_each_tool",
        "after_tools",
        "on_error",
        "on_complete",
    ]
    assert {kind for kind in HookKind if not kind.may_add_messages} == {
        HookKind.BEFORE_EACH_TOOL,
        HookKind.AFTER_EACH_TOOL,
        HookKind.ON_ERROR,
    }
    assert len(MESSAGE_HOOKS) == 6


@pytest.mark.parametrize(
    "kind",
    [HookKind.BEFORE_EACH_TOOL, HookKind.AFTER_EACH_TOOL, HookKind.ON_ERROR],
    ids=str,
)
def test_a_per_call_hook_may_not_add_a_message(flavour: Flavour, kind: HookKind) -> None:
    forecast, spy = spy_tool(flavour)

    def chatty(context: HookContext) -> None:
        context.add_message(Message.user("injected"))

    hooks = Hooks()
    hooks.add(kind, chatty)
    system = ToolSystem([forecast], hooks=hooks)
    failing_call = call("a", arguments="{}") if kind is HookKind.ON_ERROR else call("a")

    history = list(HISTORY)

    with pytest.raises(HookMessageError) as raised:
        system.run_round_sync([failing_call], CONTEXT, messages=history)

    assert str(raised.value) == (
        f"hook handler {chatty.__qualname__!r} may not add a message in {kind.value!r} (it "
        f"would break the order of tool messages); hooks that may add messages: {MAY_ADD}"
    )
    assert (raised.value.hook, raised.value.handler) == (kind.value, chatty.__qualname__)
    assert history == list(HISTORY)
    assert len(spy.calls) == (1 if kind is HookKind.AFTER_EACH_TOOL else 0)


def test_a_refused_message_is_not_added_even_when_the_handler_carries_on() -> None:
    seen: list[tuple[Message, ...]] = []

    def stubborn(context: HookContext) -> None:
        with pytest.raises(HookMessageError):
            context.add_message(Message.user("injected"))
        seen.append(context.messages)

    hooks = Hooks()
    hooks.add(HookKind.AFTER_EACH_TOOL, stubborn)
    forecast, _ = spy_tool("sync")

    outcome = ToolSystem([forecast], hooks=hooks).run_round_sync(
        [call("a")], CONTEXT, messages=HISTORY
    )

    assert [m.role for m in outcome.messages] == ["tool"]
    assert seen == [(*HISTORY, outcome.messages[0])]


def test_tool_hooks_fire_in_lifecycle_order_with_what_they_should_see(flavour: Flavour) -> None:
    forecast, spy = spy_tool(flavour)
    log: list[str] = []
    hooks = Hooks()

    @hooks.on(HookKind.BEFORE_TOOLS)
    def before_tools(context: HookContext) -> None:
        log.append(f"before_tools {len(context.messages)}")

    @hooks.on(HookKind.BEFORE_EACH_TOOL)
    async def before_each(context: HookContext) -> None:
        assert context.pending_tool is not None
        log.append(f"before_each {context.pending_tool.id} ran={len(spy.calls)}")

    @hooks.on(HookKind.AFTER_EACH_TOOL)
    def after_each(context: HookContext) -> None:
        assert context.result is not None
        assert context.messages[-1].tool_call_id == context.result.call_id
        log.append(f"after_each {context.result.call_id} {context.result.status}")

    @hooks.on("on_error")
    def on_error(context: HookContext) -> None:
        assert context.result is not None
        # after the call's tool message is recorded, before after_each_tool (the seed's order)
        assert context.messages[-1].tool_call_id == context.result.call_id
        assert context.error is not None
        assert context.error.type == "UnknownToolError"
        log.append(f"on_error {context.result.call_id}")

    @hooks.on(HookKind.AFTER_TOOLS)
    def after_tools(context: HookContext) -> None:
        log.append(f"after_tools {len(context.messages)}")

    ToolSystem([forecast], hooks=hooks).run_round_sync(
        [call("a"), call("b", "nope")], CONTEXT, messages=HISTORY
    )

    assert log == [
        "before_tools 2",
        "before_each a ran=0",
        "after_each a success",
        "before_each b ran=1",
        "on_error b",
        "after_each b not_found",
        "after_tools 4",
    ]


def test_round_hooks_add_messages_after_the_tool_messages(flavour: Flavour) -> None:
    forecast, _ = spy_tool(flavour)
    hooks = Hooks()
    hooks.add(HookKind.BEFORE_TOOLS, lambda c: c.add_message(Message.system("before")))
    hooks.add(HookKind.AFTER_TOOLS, lambda c: c.add_message(Message.system("after")))

    outcome = ToolSystem([forecast], hooks=hooks).run_round_sync(
        [call("a"), call("b")], CONTEXT, messages=HISTORY
    )

    assert [(m.role, m.tool_call_id or m.content) for m in outcome.messages] == [
        ("tool", "a"),
        ("tool", "b"),
        ("system", "before"),
        ("system", "after"),
    ]
    assert outcome.tool_messages == outcome.messages[:2]


def test_a_failing_handler_is_named_and_its_exception_chained() -> None:
    forecast, spy = spy_tool("sync")
    hooks = Hooks()

    @hooks.on(HookKind.BEFORE_EACH_TOOL)
    def veto(context: HookContext) -> None:
        raise PermissionError("tool use is paused")

    with pytest.raises(HookFailedError) as raised:
        ToolSystem([forecast], hooks=hooks).run_round_sync([call("a")], CONTEXT)

    assert str(raised.value) == (
        f"hook handler {veto.__qualname__!r} failed in 'before_each_tool': "
        "PermissionError: tool use is paused"
    )
    assert isinstance(raised.value.__cause__, PermissionError)
    assert spy.calls == []


def test_a_hook_context_for_the_agent_allows_messages_where_the_table_says_so() -> None:
    context = HookContext(HookKind.AFTER_LLM, "run-1", HISTORY)

    context.add_message(Message.system("remember the user's units"))

    assert context.added == (Message.system("remember the user's units"),)
    assert context.messages == (*HISTORY, Message.system("remember the user's units"))


def test_hooks_know_which_kinds_have_handlers() -> None:
    hooks = Hooks()
    assert HookKind.AFTER_LLM not in hooks

    hooks.add("after_llm", print)

    assert HookKind.AFTER_LLM in hooks
    assert hooks.handlers(HookKind.AFTER_LLM) == (print,)
    assert "after_llm" not in hooks  # only HookKind members are looked up
