"""Typed answers in a turn: the TurnLoop's ``validating`` step (docs/contract.md §2).

A run with an output type (`agentfsm.agent.output.OutputSpec`) sends an answer (a reply
without tool calls, or a lone ``final_answer`` call) to ``validating`` instead of
``answered``. There it is parsed and checked: a valid one is ``output_valid`` (then the run
completes, the output on its outcome); an invalid one is ``output_invalid`` with its errors,
back to ``thinking`` with them while the budget's guard holds, else ``rejected``, and the
turn fails with reason ``output_invalid``. Every attempt is in the log, and replays.

A run without an output type never enters ``validating`` and pays nothing for it.
"""

from __future__ import annotations

from agentfsm.agent.output import ACCEPTED, FINAL_ANSWER, OutputSpec
from agentfsm.agent.record import RunRecord
from agentfsm.states.json import JSONObject
from agentfsm.states.messages import Message, ToolCall
from agentfsm.states.names import LoopState, MachineName, RunState
from agentfsm.tools.results import ErrorDetails

OUTPUT_INVALID_ERROR = "OutputInvalid"
"""The error type on the outcome of a turn failed with reason ``output_invalid``."""


def final_call(reply: Message) -> ToolCall | None:
    """The reply's ``final_answer`` call, when it is the reply's only call."""
    calls = reply.tool_calls
    return calls[0] if len(calls) == 1 and calls[0].name == FINAL_ANSWER else None


class TypedAnswers(RunRecord):
    """The ``validating`` step, and the typed output of a run's last answered turn."""

    __slots__ = ("_answer_by_tool", "_output", "_output_spec", "_problems", "_response_format")

    _output_spec: OutputSpec | None
    """The run's output type; None for an untyped run."""
    _answer_by_tool: bool
    """The model answers through the ``final_answer`` tool (it has no structured output)."""
    _response_format: JSONObject | None
    """Passed to a model with structured output; None otherwise."""
    _output: object
    """The output of the last turn that completed with a valid answer (None: not known)."""
    _problems: tuple[str, ...]
    """What was wrong with the last invalid answer."""

    def _typed(self, spec: OutputSpec | None, structured: bool) -> None:
        """Set the run's output type (before `_fresh`)."""
        self._output_spec = spec
        self._answer_by_tool = spec is not None and not structured
        self._response_format = spec.response_format() if spec and structured else None
        self._output = None
        self._problems = ()

    def _fresh(self) -> None:
        super()._fresh()
        if self._output_spec is not None:
            self._data.output_retries = self._output_spec.retries

    def _answer_calls(self, calls: tuple[ToolCall, ...]) -> int:
        """The number of ``calls`` for the tool round: none when they are the answer."""
        if self._answer_by_tool and len(calls) == 1 and calls[0].name == FINAL_ANSWER:
            return 0
        return len(calls)

    async def _validate(self) -> None:
        """Validate the answer the loop is ``validating``, and move the loop on."""
        spec, loop = self._output_spec, self._loop
        if spec is None or loop is None:  # a run restored without its output type
            raise TypeError(
                "this run validates its answers against an output type: construct the "
                "Agent with the output_type it was started with"
            )
        reply = next(m for m in reversed(self._messages) if m.role == "assistant")
        call = final_call(reply) if self._answer_by_tool else None
        output, problems = spec.parse(reply.content if call is None else call.arguments)
        if not problems:
            output, problems = await spec.check(output)
        if call is not None:  # the call is answered at once (I7)
            text = spec.feedback(problems, tool=True, called=True) if problems else ACCEPTED
            self._round = ()
            self._append((Message.tool(call.id, text, name=FINAL_ANSWER),))
            self._flush_deferred()
        if problems:
            self._problems = problems
            loop.send("output_invalid", errors=list(problems))
            if call is None and loop.state == LoopState.THINKING:
                feedback = spec.feedback(problems, tool=self._answer_by_tool, called=False)
                self._append((Message.user(feedback),))
            return
        self._output = output
        loop.send("output_valid", output=spec.dump(output))

    def _rejection(self) -> ErrorDetails:
        """The error of a turn whose answer was rejected."""
        problems = "; ".join(self._problems) or "see the output_invalid events"
        return ErrorDetails(
            OUTPUT_INVALID_ERROR,
            f"the answer did not validate against the output type after "
            f"{self._data.invalid_outputs} attempt(s): {problems}",
        )

    def _typed_output(self) -> object:
        """The last answered turn's output, when the run is completed with one."""
        spec = self._output_spec
        if spec is None or self._data.state != RunState.COMPLETED:
            return None
        if self._data.loop_state != LoopState.ANSWERED:
            return None
        if self._output is None and self.store is not None:  # a restored run
            for event in reversed(self.store.events(self._data.run_id)):
                if event.machine == MachineName.LOOP and event.event == "output_valid":
                    self._output = spec.load(event.data.get("output"))
                    break
        return self._output

    def _answer_text(self) -> str | None:
        """The text of a typed answer: the reply's content, or its ``final_answer`` call's."""
        reply = next((m for m in reversed(self._messages) if m.role == "assistant"), None)
        if reply is None:
            return None
        call = final_call(reply)
        return call.arguments if call is not None else reply.content
