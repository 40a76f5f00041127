"""Issue 17, part 4: the Agent judges the finish reason of every model's response."""

from __future__ import annotations

import pytest

from agentfsm import Agent, ScriptedModel
from agentfsm.errors import ModelResponseError
from agentfsm.llm import FinishReason, ModelResponse, check_finish
from agentfsm.states import Message


@pytest.mark.parametrize(
    ("finish", "words"),
    [
        (FinishReason.LENGTH, "cut off at the token limit"),
        (FinishReason.CONTENT_FILTER, "withheld the output"),
    ],
)
def test_a_cut_off_or_filtered_reply_from_any_model_fails_the_call(
    finish: FinishReason, words: str
) -> None:
    reply = ModelResponse(content="The answer is", finish_reason=finish)
    agent = Agent(ScriptedModel().respond(reply), system_prompt="Be brief.")
    told = []
    agent.on("on_error")(lambda context: told.append(context.error))
    agent.start()

    outcome = agent.submit("What is the answer?")

    assert (outcome.state, outcome.reason, outcome.reply) == ("failed", "error", None)
    assert outcome.error is not None
    assert (outcome.error.type, outcome.error.retryable) == ("ModelResponseError", False)
    assert words in outcome.error.message
    assert told == [outcome.error]
    # the cut-off text never became an answer in the history
    assert agent.messages == (Message.system("Be brief."), Message.user("What is the answer?"))
    assert [entry.kind for entry in agent.trace] == ["user_input"]


@pytest.mark.parametrize("finish", [FinishReason.STOP, FinishReason.TOOL_CALLS])
def test_an_answer_or_tool_calls_pass(finish: FinishReason) -> None:
    check_finish(ModelResponse(content="ok", finish_reason=finish), "m")


def test_check_finish_names_the_model_and_the_reason() -> None:
    cut = ModelResponse(content="…", finish_reason=FinishReason.LENGTH)
    with pytest.raises(ModelResponseError) as refused:
        check_finish(cut, "my-model", attempts=2)
    assert (refused.value.model, refused.value.reason, refused.value.attempts) == (
        "my-model",
        "length",
        2,
    )
    assert str(refused.value).startswith("model 'my-model' returned an unusable response")
