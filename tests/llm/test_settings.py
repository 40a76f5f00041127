"""ModelSettings: checked when made, merged field by field, recorded as JSON, sent on the wire."""

from __future__ import annotations

import pytest

from agentfsm.errors import ModelSettingsError
from agentfsm.llm._openai_convert import chat_settings
from agentfsm.llm.settings import ModelSettings, check_tool_choice


@pytest.mark.parametrize(
    ("given", "field", "says"),
    [
        ({"temperature": 7}, "temperature", "from 0 to 2"),
        ({"temperature": "hot"}, "temperature", "from 0 to 2"),
        ({"top_p": 1.5}, "top_p", "from 0 to 1"),
        ({"max_tokens": 0}, "max_tokens", "at least 1"),
        ({"stop": []}, "stop", "1 to 4"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop", "1 to 4"),
        ({"tool_choice": "not a name!"}, "tool_choice", "offered tool"),
        ({"reasoning_effort": "max"}, "reasoning_effort", "'minimal'"),
        ({"temprature": 0.1}, "temprature", "known: temperature"),
        ({"parallel_tool_calls": "yes"}, "parallel_tool_calls", "True or False"),
    ],
    ids=lambda value: str(value),
)
def test_settings_refuse_bad_values_naming_the_field(
    given: dict[str, object], field: str, says: str
) -> None:
    with pytest.raises(ModelSettingsError, match=says) as caught:
        ModelSettings.of(given)
    assert caught.value.field == field
    assert isinstance(caught.value, ValueError)
    with pytest.raises(ModelSettingsError, match=says) as built:
        ModelSettings(**given)  # type: ignore[arg-type]  # (made directly: the same error)
    assert built.value.field == field


def test_settings_refuse_what_is_no_mapping() -> None:
    with pytest.raises(TypeError, match="mapping of its fields"):
        ModelSettings.of(0.2)  # type: ignore[arg-type]


def test_a_turn_override_replaces_only_the_fields_it_sets() -> None:
    base = ModelSettings.of({"temperature": 0.2, "max_tokens": 500, "stop": ["END"]})
    turn = ModelSettings.of({"temperature": 0.0, "tool_choice": "required"})
    assert base is not None
    assert turn is not None
    assert base.merged(turn).to_json() == {
        "temperature": 0.0,
        "max_tokens": 500,
        "stop": ["END"],
        "tool_choice": "required",
    }
    assert base.merged(None) is base


def test_recorded_settings_name_headers_but_never_their_values() -> None:
    made = ModelSettings.of({"extra_headers": {"X-Secret": "s3cr3t"}, "seed": 1})
    assert made is not None
    assert made.to_json() == {"seed": 1, "extra_header_names": ["X-Secret"]}
    assert "s3cr3t" not in str(made.to_json())


@pytest.mark.parametrize(
    ("choice", "offered", "ok"),
    [
        ("auto", set(), True),
        ("none", set(), True),
        ("required", {"look"}, True),
        ("required", set(), False),
        ("look", {"look"}, True),
        ("book", {"look"}, False),
    ],
)
def test_tool_choice_must_name_an_offered_tool(choice: str, offered: set[str], ok: bool) -> None:
    settings = ModelSettings.of({"tool_choice": choice})
    if ok:
        check_tool_choice(settings, offered)
    else:
        with pytest.raises(ModelSettingsError, match="tool_choice"):
            check_tool_choice(settings, offered)


def test_chat_completions_gets_each_setting_under_its_api_name() -> None:
    settings = ModelSettings.of(
        {
            "temperature": 0.1,
            "top_p": 0.9,
            "max_tokens": 64,
            "stop": "END",
            "seed": 7,
            "tool_choice": "look",
            "parallel_tool_calls": False,
            "reasoning_effort": "low",
            "extra_headers": {"X-Team": "a"},
            "extra_body": {"user": "u1"},
        }
    )
    assert chat_settings(settings, with_tools=True) == {
        "temperature": 0.1,
        "top_p": 0.9,
        "seed": 7,
        "reasoning_effort": "low",
        "extra_headers": {"X-Team": "a"},
        "extra_body": {"user": "u1"},
        "max_completion_tokens": 64,
        "stop": ["END"],
        "tool_choice": {"type": "function", "function": {"name": "look"}},
        "parallel_tool_calls": False,
    }
    # With no tool offered, the API refuses tool_choice and parallel_tool_calls: not sent.
    assert "tool_choice" not in chat_settings(settings, with_tools=False)
    assert "parallel_tool_calls" not in chat_settings(settings, with_tools=False)
