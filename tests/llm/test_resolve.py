"""resolve_model: the short specs an application may give instead of a model."""

from __future__ import annotations

import pytest

from agentfsm.errors import ModelConfigError
from agentfsm.llm import DEMO_SPEC, OpenAIModel, ScriptedModel, resolve_model


def test_the_demo_spec_is_the_scripted_demo() -> None:
    model = resolve_model(DEMO_SPEC)

    assert isinstance(model, ScriptedModel)
    assert model.name == DEMO_SPEC == "scripted:demo"


def test_an_openai_spec_is_an_openai_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "from-the-environment")

    model = resolve_model("openai:gpt-4o-mini")

    assert isinstance(model, OpenAIModel)
    assert model.name == "gpt-4o-mini"


def test_an_openai_spec_without_a_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY"):
        resolve_model("openai:gpt-4o-mini")


def test_a_model_is_returned_as_it_is() -> None:
    model = ScriptedModel(["hi"])

    assert resolve_model(model) is model


@pytest.mark.parametrize(
    "spec",
    ["", "scripted", "scripted:other", "openai:", "openai: ", "anthropic:", "mistral:x", "gpt-4o"],
)
def test_an_unknown_spec_says_which_specs_there_are(spec: str) -> None:
    with pytest.raises(ModelConfigError) as caught:
        resolve_model(spec)

    assert caught.value.spec == spec
    assert "'scripted:demo', 'openai:<model id>'" in str(caught.value)


def test_the_anthropic_key_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ModelConfigError, match="ANTHROPIC_API_KEY"):
        resolve_model("anthropic:claude-sonnet-4-5")
