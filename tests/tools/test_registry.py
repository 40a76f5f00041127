from __future__ import annotations

import gc
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from agentfsm.errors import DuplicateToolError, UnknownToolError
from agentfsm.tools import Tool, ToolRegistry
from agentfsm.tools import registry as registry_module

AnyTool = Tool[..., Any]


def clock() -> str:
    """The time."""
    return "noon"


def echo(text: str) -> str:
    """Repeat the text."""
    return text


def test_a_registry_registers_and_looks_up_tools() -> None:
    registry = ToolRegistry([clock])
    declared = registry.register(Tool(echo))

    assert registry.get("echo") is declared
    assert registry.find("missing") is None
    assert registry.names == ("clock", "echo")
    assert [t.name for t in registry] == ["clock", "echo"]
    assert ("echo" in registry, "missing" in registry, len(registry)) == (True, False, 2)
    assert repr(registry) == "ToolRegistry(['clock', 'echo'])"


def test_a_duplicate_name_is_refused_and_the_registry_is_unchanged() -> None:
    registry = ToolRegistry([clock, echo])

    with pytest.raises(DuplicateToolError) as raised:
        registry.register(Tool(echo, name="clock"))

    assert str(raised.value) == (
        "a tool named 'clock' is already registered; give the new one another name (with "
        "@tool(name=...)); registered: 'clock', 'echo'"
    )
    assert raised.value.tool_name == "clock"
    assert registry.get("clock").function is clock


def test_looking_up_an_unknown_name_lists_the_registered_ones() -> None:
    with pytest.raises(UnknownToolError) as raised:
        ToolRegistry([clock, echo]).get("ecko")

    assert str(raised.value) == (
        "no tool named 'ecko' is registered; available tools: 'clock', 'echo'"
    )
    assert (raised.value.tool_name, raised.value.call_id) == ("ecko", None)


def test_only_enabled_tools_are_offered_in_the_openai_form() -> None:
    registry = ToolRegistry([clock, echo])

    assert registry.openai_tools(enabled={"echo"}) == [
        {
            "type": "function",
            "function": {
                "name": "echo",
                "description": "Repeat the text.",
                "parameters": {
                    "additionalProperties": False,
                    "properties": {"text": {"title": "Text", "type": "string"}},
                    "required": ["text"],
                    "type": "object",
                },
            },
        }
    ]
    assert [t["function"]["name"] for t in registry.openai_tools()] == ["clock", "echo"]  # type: ignore[index, call-overload]
    assert registry.openai_tools(enabled=()) == []


def test_enabling_an_unregistered_tool_is_refused() -> None:
    with pytest.raises(UnknownToolError, match="no tool named 'time' is registered"):
        ToolRegistry([clock]).openai_tools(enabled={"clock", "time"})


def test_changing_an_offered_schema_changes_nothing() -> None:
    registry = ToolRegistry([echo])
    offered = registry.openai_tools()
    offered[0]["function"]["parameters"]["required"] = []  # type: ignore[index, call-overload]

    assert registry.get("echo").parameters["required"] == ["text"]


def test_a_tool_is_offered_once_for_every_registry_and_rebuilt_when_it_changes() -> None:
    shared = Tool(echo)
    first, second = ToolRegistry([shared]), ToolRegistry([shared])

    offered = first.openai_tools()[0]

    assert second.openai_tools()[0] is offered  # one schema copy for every run offering it
    assert offered == shared.to_openai()
    shared.description = "Say it back, louder."
    assert ToolRegistry([shared]).openai_tools()[0]["function"]["description"] == (  # type: ignore[index, call-overload]
        "Say it back, louder."
    )


def test_registries_built_from_the_same_tools_share_them_but_not_their_registrations() -> None:
    first, second = ToolRegistry([clock, echo]), ToolRegistry([clock, echo])

    assert first.get("echo") is second.get("echo")  # a plain function is declared once
    added = first.register(Tool(echo, name="shout"))

    assert first.names == ("clock", "echo", "shout")
    assert list(second.names) == ["clock", "echo"]  # what one registers, only it has
    assert second.find("shout") is None
    assert [t["function"]["name"] for t in second.openai_tools()] == ["clock", "echo"]  # type: ignore[index, call-overload]
    assert second.register(added) is added  # the same registration: alike again
    assert second.names == first.names
    with pytest.raises(DuplicateToolError):
        second.register(Tool(clock))
    assert list(second.names) == ["clock", "echo", "shout"]  # a refusal changes nothing


def test_a_registry_built_alike_after_the_others_are_gone_declares_its_tools_again() -> None:
    first = ToolRegistry([clock])
    declared = first.get("clock")
    del first

    assert ToolRegistry([clock]).get("clock") is not declared  # nothing outlives its registries


def test_a_tool_replaced_in_one_registry_stays_in_the_others() -> None:
    first, second = ToolRegistry([clock, echo]), ToolRegistry([clock, echo])
    original = second.get("echo")

    first._replace(Tool(echo, description="A fault."))
    first.register(Tool(echo, name="shout"))

    assert first.get("echo").description == "A fault."  # kept across a registration
    assert second.get("echo") is original
    assert ToolRegistry([clock, echo]).get("echo") is original


def test_the_newest_tables_of_tools_outlive_their_registries_and_are_shared() -> None:
    tools: list[AnyTool] = [Tool(clock), Tool(echo)]
    first = ToolRegistry(tools)
    offered = first.offered_tools()
    table = first._table
    del first
    gc.collect()

    again = ToolRegistry(tools)  # (an Agent per run: the last run's registry is gone)

    assert again._table is table
    assert again.offered_tools() is offered  # declared, checked and offered once
    assert registry_module._kept[tuple(map(id, tools))] is table


def test_a_changed_list_of_tools_gets_a_table_of_its_own() -> None:
    tools: list[AnyTool] = [Tool(clock)]
    first = ToolRegistry(tools)
    tools.append(Tool(echo))

    second = ToolRegistry(tools)

    assert first.names == ("clock",)
    assert second.names == ("clock", "echo")
    assert [t["function"]["name"] for t in second.openai_tools()] == ["clock", "echo"]  # type: ignore[index, call-overload]
    tools.reverse()
    assert ToolRegistry(tools).names == ("echo", "clock")


def test_only_the_newest_tables_are_kept_and_never_those_of_plain_functions() -> None:
    lists = [[Tool(clock, name=f"clock_{n}")] for n in range(registry_module.KEPT_TABLES + 3)]
    for tools in lists:
        ToolRegistry(tools)
    ToolRegistry([clock])  # (a plain function: declared, not kept)

    kept = registry_module._kept
    assert len(kept) == registry_module.KEPT_TABLES
    assert tuple(map(id, lists[-1])) in kept
    assert tuple(map(id, lists[0])) not in kept
    assert all(isinstance(item, Tool) for table in kept.values() for item in table.items)


def test_registries_built_alike_in_many_threads_share_one_table() -> None:
    tools: list[AnyTool] = [Tool(clock), Tool(echo)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        tables = list(pool.map(lambda _: ToolRegistry(tools)._table, range(64)))

    assert len({id(table) for table in tables}) == 1
    assert len(registry_module._kept) <= registry_module.KEPT_TABLES


def test_the_unchecked_registry_of_checked_tools_is_the_checked_one() -> None:
    tools: list[AnyTool] = [Tool(clock), Tool(echo)]

    assert ToolRegistry._of(tools)._table is ToolRegistry(tools)._table
    with pytest.raises(DuplicateToolError):
        ToolRegistry._of([Tool(clock), Tool(clock)])


def test_a_renamed_tool_is_offered_under_its_new_name_and_an_unchanged_one_is_shared() -> None:
    shared, other = Tool(echo), Tool(clock)
    tools: list[Tool[..., object]] = [shared, other]
    offered = ToolRegistry(tools).offered_tools()
    assert ToolRegistry(tools).offered_tools() is offered  # nothing changed: shared
    assert ToolRegistry(tools).offered_tools(enabled={"clock"})[0] is offered[1]

    shared.name = "shout"
    renamed = ToolRegistry(tools).offered_tools()

    assert [t["function"]["name"] for t in renamed] == ["shout", "clock"]  # type: ignore[index, call-overload]
    assert renamed[1] is offered[1]  # (the unchanged tool's schema is still its one copy)
    assert ToolRegistry(tools).offered_tools() is renamed
    shared.name = "echo"
    assert [t["function"]["name"] for t in ToolRegistry(tools).offered_tools()] == [  # type: ignore[index, call-overload]
        "echo",
        "clock",
    ]


def test_registries_built_in_several_threads_while_a_tool_changes_offer_it_as_it_is() -> None:
    shared = Tool(echo)
    tools: list[Tool[..., object]] = [shared, Tool(clock)]
    errors: list[BaseException] = []

    def build() -> None:
        try:
            for _ in range(200):
                ToolRegistry(tools).offered_tools()
        except BaseException as error:  # (reported by the test's own thread)
            errors.append(error)

    threads = [threading.Thread(target=build) for _ in range(4)]
    for thread in threads:
        thread.start()
    for text in ("Louder.", "Softer.", "Repeat the text."):
        shared.description = text
    for thread in threads:
        thread.join()

    assert errors == []
    assert ToolRegistry(tools).offered_tools()[0] == shared.to_openai()


class _Special(Tool[..., object]):
    """A subclass of Tool, as `AgentTool` is."""


def test_the_tools_of_a_class_are_found_once_per_table_and_again_after_a_registration() -> None:
    plain, special = Tool(echo), _Special(clock)
    first, second = ToolRegistry([plain, special]), ToolRegistry([plain, special])

    found = first._of_kind(_Special)
    assert found == (special,)
    assert second._of_kind(_Special) is found  # (registries alike: found once)
    assert first._of_kind(Tool) == (plain, special)

    added = first.register(_Special(echo, name="shout"))
    assert first._of_kind(_Special) == (special, added)
    assert second._of_kind(_Special) == (special,)  # (what one registers, only it has)
