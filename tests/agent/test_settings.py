"""Model settings in a run: the Agent's, a turn's override, the log, restore and replay."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentfsm import Agent, MemoryStore, ScriptedModel, replay, tool
from agentfsm.errors import ModelSettingsError
from agentfsm.llm import ModelResponse
from agentfsm.llm.settings import ModelSettings
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message

RUN_ID = "r"


@tool
def look(city: str) -> str:
    """Look a city up."""
    return f"{city}: fine"


@tool(policy="require_approval")
def buy(item: str) -> str:
    """Buy something (needs approval)."""
    return f"bought {item}"


def asked(model: ScriptedModel) -> list[JSONObject | None]:
    return [None if r.settings is None else r.settings.to_json() for r in model.requests]


def test_the_agents_settings_and_a_turns_override_reach_the_model_and_the_log() -> None:
    store = MemoryStore()
    model = ScriptedModel().tool_call("look", city="Oslo").text("Fine.").text("Again.")
    agent = Agent(model, [look], settings={"temperature": 0.3}, store=store, run_id=RUN_ID)
    agent.start("Oslo?", settings={"tool_choice": "look", "max_tokens": 50})
    agent.submit("And now?")
    assert asked(model) == [
        {"temperature": 0.3, "max_tokens": 50, "tool_choice": "look"},
        # A forcing tool_choice holds for the turn's first call only.
        {"temperature": 0.3, "max_tokens": 50},
        # The next turn starts from the Agent's settings: the override is gone.
        {"temperature": 0.3},
    ]
    calls = [entry for entry in agent.trace if entry.kind == "llm_call"]
    assert [entry.settings for entry in calls] == asked(model)
    events = store.events(RUN_ID)
    replied = [e.data.get("settings") for e in events if e.event == "model_replied"]
    assert replied == asked(model)
    submits = [e.data.get("settings") for e in events if e.event == "submit"]
    assert submits == [{"max_tokens": 50, "tool_choice": "look"}, None]


def test_a_run_without_settings_records_none() -> None:
    model = ScriptedModel().text("Hi.")
    agent = Agent(model)
    agent.start("Hello")
    assert asked(model) == [None]
    assert "settings" not in agent.trace[-1].model_dump(exclude_unset=True)


@pytest.mark.parametrize(
    ("where", "given", "says"),
    [
        ("agent", {"temperature": 7}, "from 0 to 2"),
        ("agent", {"tool_choice": "book"}, "names no offered tool"),
        ("turn", {"tool_choice": "book"}, "names no offered tool"),
        ("turn", {"top_p": -1}, "from 0 to 1"),
        ("start", {"seed": "x"}, "whole number"),
    ],
)
def test_bad_settings_are_refused_before_anything_changes(
    where: str, given: dict[str, object], says: str
) -> None:
    store = MemoryStore()
    if where == "agent":
        with pytest.raises(ModelSettingsError, match=says):
            Agent(ScriptedModel(), [look], settings=given)
        return
    agent = Agent(ScriptedModel().text("x"), [look], store=store, run_id=RUN_ID)
    if where == "start":
        with pytest.raises(ModelSettingsError, match=says):
            agent.start("hi", settings=given)
        assert agent.state == "created"
        return
    agent.start()
    before = len(store.events(RUN_ID))
    with pytest.raises(ModelSettingsError, match=says):
        agent.submit("hi", settings=given)
    assert agent.state == "ready"
    assert len(store.events(RUN_ID)) == before


class NoSettingsModel:
    """A Model whose complete() takes no settings."""

    name = "plain"

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[JSONObject], *, on_retry: object = None
    ) -> ModelResponse:
        return ModelResponse(content="ok")


def test_settings_for_a_model_that_takes_none_are_an_error_not_dropped() -> None:
    with pytest.raises(ModelSettingsError, match="takes no settings"):
        Agent(NoSettingsModel(), settings={"temperature": 0.1})
    agent = Agent(NoSettingsModel())
    agent.start()
    with pytest.raises(ModelSettingsError, match="takes no settings"):
        agent.submit("hi", settings={"temperature": 0.1})
    assert agent.submit("hi").reply == "ok"


def test_an_input_that_arrives_while_busy_takes_no_settings() -> None:
    refused: list[Exception] = []

    @tool
    async def chat(agent_ref: str) -> str:
        """Submit from inside the turn."""
        try:
            await agent.asubmit("more", settings={"temperature": 0.1})
        except ModelSettingsError as error:
            refused.append(error)
        return "ok"

    model = ScriptedModel().tool_call("chat", agent_ref="x").text("Done.").text("Later.")
    agent = Agent(model, [chat], input_policy="queue")
    agent.start("go")
    assert refused
    assert "busy" in str(refused[0])


def test_a_run_restored_mid_turn_goes_on_with_its_turns_override() -> None:
    store = MemoryStore()
    first = ScriptedModel().tool_call("buy", item="tea")
    agent = Agent(first, [buy], settings={"temperature": 0.5}, store=store, run_id=RUN_ID)
    agent.start("Tea", settings={"seed": 42, "extra_headers": {"X-Key": "s3cr3t"}})
    assert agent.state == "requires_action"
    second = ScriptedModel().text("Bought.")
    restored = Agent(second, [buy], settings={"temperature": 0.5}, store=store, run_id=RUN_ID)
    restored.start()
    restored.resolve_action({call.id: "approve" for call in restored.pending})
    # The turn's override came back from the log; its header values never were in it.
    assert asked(second) == [{"temperature": 0.5, "seed": 42}]
    assert "s3cr3t" not in str(store.events(RUN_ID))
    assert "s3cr3t" not in str(store.load(RUN_ID))


TURN_SETTINGS = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={
            "temperature": st.sampled_from([0.0, 0.5, 1.5]),
            "max_tokens": st.integers(1, 500),
            "seed": st.integers(0, 9),
            "stop": st.sampled_from(["END", ("a", "b")]),
        },
    ),
)


@settings(max_examples=25, deadline=None)
@given(
    base=TURN_SETTINGS,
    turns=st.lists(st.tuples(TURN_SETTINGS, st.booleans()), min_size=1, max_size=5),
)
def test_a_turns_override_never_leaks_and_replay_reproduces_the_log(
    base: dict[str, object] | None, turns: list[tuple[dict[str, object] | None, bool]]
) -> None:
    store = MemoryStore()
    model = ScriptedModel(fallback=lambda messages, tools: ModelResponse(content="ok"))
    for _, with_tool in turns:
        if with_tool:
            model.tool_call("look", city="Oslo")
        model.text("ok")
    agent = Agent(model, [look], settings=base, store=store, run_id=RUN_ID)
    agent.start()
    expected: list[JSONObject | None] = []
    agents = ModelSettings.of(base) or ModelSettings()
    for override, with_tool in turns:
        agent.submit("go", settings=override)
        merged = agents.merged(ModelSettings.of(override)).to_json() or None
        expected += [merged] * (2 if with_tool else 1)
    assert asked(model) == expected
    stored = store.load(RUN_ID)
    assert stored is not None
    log = store.events(RUN_ID)
    rebuilt = replay(log, expected=stored)
    assert rebuilt.model_dump(exclude={"trace", "version"}) == stored.model_dump(
        exclude={"trace", "version"}
    )
    assert [e.data.get("settings") for e in log if e.event == "model_replied"] == expected
    assert [entry.settings for entry in stored.trace if entry.kind == "llm_call"] == expected


def test_inspect_shows_what_each_call_asked_for(tmp_path: Path) -> None:
    from agentfsm import SQLiteStore
    from agentfsm._runs_cli import inspect_command

    path = tmp_path / "runs.db"
    with SQLiteStore(path) as store:
        agent = Agent(ScriptedModel().text("ok"), store=store, run_id=RUN_ID, settings={"seed": 7})
        agent.start("hi", settings={"temperature": 0.5})
    out = io.StringIO()
    assert inspect_command(RUN_ID, str(path), 10, out) == 0
    shown = out.getvalue()
    submit = next(line for line in shown.splitlines() if " submit " in line)
    replied = next(line for line in shown.splitlines() if " model_replied " in line)
    assert 'settings={"temperature": 0.5}' in submit  # the turn's override
    assert 'settings={"temperature": 0.5' in replied  # the call's (merged; shown cut short)
