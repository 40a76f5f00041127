"""The demo story: both machines of one run, driven by hand through every run state.

Until the Agent drives the machines itself, this shows them doing what lifecycle.md says:
each line is one emitted `Event`; the refused step shows the error an application gets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from agentfsm.errors import IllegalTransitionError
from agentfsm.fsm import AnyMachine, Emitter, RunData, loop_machine, run_machine
from agentfsm.states import Event
from agentfsm.states.json import JSONValue


def transcript_line(event: Event) -> str:
    """One event as a line of the transcript."""
    arrow = "↺" if event.source == event.target else "→"
    data = "  " + ", ".join(f"{k}={v!r}" for k, v in event.data.items()) if event.data else ""
    return (
        f"{event.seq:>3}  {event.machine.value:<4} {event.event:<15} "
        f"{event.source} {arrow} {event.target}{data}"
    )


def run_story(out: TextIO, clock: Callable[[], float] | None = None) -> RunData:
    """Drive one run through its lifecycle, writing the transcript to ``out``."""
    data = RunData("demo-run", max_iterations=3)
    emitter = Emitter(data.run_id, [lambda e: print(transcript_line(e), file=out)])
    if clock is not None:
        emitter.clock = clock
    run = run_machine(data, emitter)

    def say(text: str) -> None:
        print(f"\n# {text}", file=out)

    def step(machine: AnyMachine, event: str, **args: JSONValue) -> None:
        machine.send(event, **args)

    def new_loop() -> AnyMachine:
        return loop_machine(data, emitter)

    say("turn 1: a tool round, then a call that needs approval; paused while it waits")
    step(run, "start")
    step(run, "submit", text="What's the weather in Paris and Rome?")
    loop = new_loop()
    step(loop, "model_replied", tool_calls=2)
    step(loop, "tools_finished")
    step(loop, "model_replied", tool_calls=1, needing_action=1)
    step(run, "need_action", calls=["call_3"])
    step(run, "pause")
    step(run, "resume")
    step(run, "resolve_action", decisions={"call_3": "approve"})
    step(loop, "resolved", decisions={"call_3": "approve"})
    step(loop, "tools_finished")
    step(loop, "model_replied", tool_calls=0)
    step(run, "complete")

    say("a refused event changes nothing and says what is allowed")
    try:
        run.send("provide_input", text="too early")
    except IllegalTransitionError as error:
        print(f"  IllegalTransitionError: {error}", file=out)

    say("turn 2: the agent asks the user; turn 3 is cancelled while waiting for approval")
    step(run, "submit", text="Book me a table.")
    loop = new_loop()
    step(loop, "model_replied", tool_calls=1, asking_user=1)
    step(run, "need_input", question="For how many people?", calls=["call_7"])
    step(run, "provide_input", text="Four")
    step(loop, "resolved", decisions={"call_7": "Four"})
    step(loop, "tools_finished")
    step(loop, "model_replied", tool_calls=0)
    step(run, "complete")
    step(run, "submit", text="And order flowers.")
    loop = new_loop()
    step(loop, "model_replied", tool_calls=1, needing_action=1)
    step(run, "need_action", calls=["call_9"])
    step(run, "cancel")
    step(loop, "abort", reason="cancelled")
    step(run, "shutdown")
    print(
        f"\nrun {data.run_id!r}: state={data.state}, turns={data.turn}, "
        f"last reason={data.reason}, events={emitter.seq}",
        file=out,
    )
    return data
