"""``agentfsm demo``: one run through every state, in two processes, drawn as it goes.

On the embedded defaults — the scripted model, a SQLite store in a fresh folder — the story
runs a tool round, asks the user a question, waits for an approval, pauses there, and is
resumed by a *second process* (``python -m agentfsm._demo resume FOLDER``); then a turn is
cancelled, another one answered, and the run shut down. Every transition and message is
printed as it happens; the machines, the live state at the pause and the run's path are
written as SVG (or DOT, without Graphviz) into the folder, whose path is printed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from agentfsm._runs_cli import event_line
from agentfsm.agent.core import Agent
from agentfsm.agent.deltas import Delta, StreamItem
from agentfsm.diagrams import combined_diagram, loop_diagram, render, run_diagram
from agentfsm.errors import DiagramRenderError, IllegalTransitionError
from agentfsm.llm.base import DeltaKind, FinishReason, Model, ModelResponse
from agentfsm.llm.resolve import resolve_model
from agentfsm.llm.scripted import ScriptedModel
from agentfsm.states import Event, Message, ToolCall
from agentfsm.states.json import JSONObject
from agentfsm.states.names import MachineName, RecordKind
from agentfsm.stores.sqlite import SQLiteStore
from agentfsm.tools import ToolPolicy, tool
from agentfsm.tools.registry import AnyTool

RUN_ID = "demo-run"
STORE = "runs.db"
SYSTEM_PROMPT = "You are a travel assistant. Use the tools; ask before booking."


# -- the agent: tools and a scripted model that answers from the conversation ---------------


@tool(idempotent=True)
def weather(city: str) -> str:
    """Today's weather in a city."""
    return {"Paris": "sunny, 21°C", "Rome": "cloudy, 18°C"}.get(city, "mild, 15°C")


@tool(policy=ToolPolicy.REQUIRE_APPROVAL)
def book_hotel(city: str, guests: int) -> str:
    """Book a hotel room (needs the user's approval: it charges a card)."""
    return f"hotel booked in {city} for {guests} guests, confirmation H-{len(city) * guests}"


@tool(policy=ToolPolicy.REQUIRE_APPROVAL)
def book_taxi(city: str) -> str:
    """Book a taxi (needs approval)."""
    return f"taxi booked in {city}"


TOOLS: tuple[AnyTool, ...] = (weather, book_hotel, book_taxi)


def _calls(*calls: tuple[str, JSONObject], turn: int) -> ModelResponse:
    return ModelResponse(
        tool_calls=tuple(
            ToolCall(id=f"t{turn}-{name}-{i}", name=name, arguments=json.dumps(arguments))
            for i, (name, arguments) in enumerate(calls, start=1)
        ),
        finish_reason=FinishReason.TOOL_CALLS,
        model="scripted:travel",
    )


def _text(content: str) -> ModelResponse:
    return ModelResponse(content=content, model="scripted:travel")


def travel_reply(messages: Sequence[Message], tools: Sequence[JSONObject]) -> ModelResponse:
    """The demo's model: what a travel assistant would say next, from the conversation alone.

    It keeps no state of its own, so the process that resumes the run gets the answers an
    uninterrupted run would have got.
    """
    users = [m for m in messages if m.role == "user"]
    turn, request = len(users), (users[-1].content or "") if users else ""
    since = messages[max(i for i, m in enumerate(messages) if m.role == "user") + 1 :]
    results = {m.name: m.content or "" for m in since if m.role == "tool"}
    cities = re.findall(r"\b(Paris|Rome|Lisbon)\b", request) or ["Rome"]
    if "weather" in request.lower():
        if "weather" in results:
            found = [m.content for m in since if m.role == "tool"]
            return _text("Here is the weather: " + "; ".join(map(str, found)) + ".")
        return _calls(*(("weather", {"city": city}) for city in cities), turn=turn)
    if "hotel" in request.lower():
        if "book_hotel" in results:
            return _text(f"Done: {results['book_hotel']}.")
        if "ask_user" in results:
            guests = int((re.findall(r"\d+", results["ask_user"]) or ["2"])[0])
            return _calls(("book_hotel", {"city": cities[0], "guests": guests}), turn=turn)
        return _calls(("ask_user", {"question": "For how many guests?"}), turn=turn)
    if "taxi" in request.lower():
        return _calls(("book_taxi", {"city": cities[0]}), turn=turn)
    return _text("You're welcome. Have a good trip!")


def demo_model(spec: str | None) -> Model:
    """The scripted travel model, or the model ``spec`` names (e.g. ``openai:gpt-4o-mini``)."""
    if spec is None:
        # Its answers are streamed in pieces of 8 characters, as a real model's would be.
        return ScriptedModel(name="scripted:travel", fallback=travel_reply, chunk_size=8)
    return resolve_model(spec)


def demo_agent(folder: Path, store: SQLiteStore, model: str | None, out: TextIO) -> Agent:
    """The demo's agent on the folder's store, restored if the store has the run."""
    agent = Agent(
        demo_model(model),
        TOOLS,
        system_prompt=SYSTEM_PROMPT,
        store=store,
        run_id=RUN_ID,
        max_iterations=4,
        ask_user=True,  # the travel agent asks how many guests
    )
    agent.add_listener(Transcript(out), deltas=True)  # the answers as they stream, too
    return agent


# -- the transcript ---------------------------------------------------------------------------


def transcript_line(event: Event) -> str:
    """One transition as a line of the transcript (its reply is shown as a message line)."""
    shown = {k: v for k, v in event.data.items() if k != "message"}
    return event_line(event.model_copy(update={"data": shown}))


def message_line(message: Message) -> str:
    """One message as a line of the transcript."""
    if message.tool_calls:
        asked = ", ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
        return f"        💬 assistant asks for: {asked}"
    who = f"tool {message.name}" if message.role == "tool" else message.role
    return f"        💬 {who}: {message.content}"


class Transcript:
    """A listener printing transitions and the messages they carry, as they happen.

    Given deltas, it prints a reply's text as it streams, on a ``✍`` line of its own.
    """

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.streaming = False

    def _delta(self, delta: Delta) -> None:
        if delta.kind == DeltaKind.RESET and self.streaming:
            print(" ⟲ cut off; retried", file=self.out, flush=True)
            self.streaming = False
        elif delta.kind == DeltaKind.TEXT:
            if not self.streaming:
                self.out.write("        ✍  assistant (streaming): ")
                self.streaming = True
            self.out.write(delta.text)
            self.out.flush()

    def __call__(self, item: StreamItem) -> None:
        if isinstance(item, Delta):
            self._delta(item)
            return
        if not isinstance(item, Event):
            return
        streamed, self.streaming = self.streaming, False
        if streamed:
            print(file=self.out)
        if item.machine == MachineName.CONVERSATION:
            kind = item.event
            if kind == RecordKind.TOOL_STARTED:
                print(f"        ⚙  {item.data['name']} starts (saved first)", file=self.out)
            elif kind in (RecordKind.MESSAGE, RecordKind.TOOL_RESULT):
                message = Message.model_validate(item.data["message"])
                print(message_line(message), file=self.out)
            return
        print(transcript_line(item), file=self.out)
        if item.event == "model_replied" and "message" in item.data:
            reply = Message.model_validate(item.data["message"])
            if reply.tool_calls or not streamed:  # a streamed answer was printed already
                print(message_line(reply), file=self.out)
        elif item.event == "submit" and item.source != item.target:
            print(message_line(Message.user(str(item.data.get("text")))), file=self.out)


def say(out: TextIO, text: str) -> None:
    """A heading of the story."""
    print(f"\n── {text}", file=out)


# -- diagrams ---------------------------------------------------------------------------------


def draw(folder: Path, name: str, source: str, out: TextIO) -> Path:
    """Write ``source`` as ``folder/name.svg``, or as ``.dot`` when Graphviz is missing."""
    target = folder / f"{name}.svg"
    try:
        target.write_bytes(render(source, "svg", str(target)))
    except DiagramRenderError as error:
        target = folder / f"{name}.dot"
        target.write_text(source, encoding="utf-8")
        print(f"   {error}; wrote {target.name} (DOT text) instead", file=out)
    return target


# -- the story --------------------------------------------------------------------------------


def first_process(folder: Path, model: str | None, out: TextIO) -> None:
    """Turns 1 and 2 up to the pause, in this process."""
    with SQLiteStore(folder / STORE) as store:
        agent = demo_agent(folder, store, model, out)
        say(out, "turn 1: a tool round (two weather calls), then the answer")
        agent.start("What's the weather in Paris and Rome?")  # start, then submit

        say(out, "a refused step changes nothing and says what is allowed")
        try:
            agent.provide_input("too early")
        except IllegalTransitionError as error:
            print(f"   IllegalTransitionError: {error}", file=out)

        say(out, "turn 2: the agent asks the user a question, then wants an approval")
        outcome = agent.submit("Book me a hotel in Rome")
        if outcome.state == "input_required":
            print(f"   ❓ {outcome.question}", file=out)
            outcome = agent.provide_input("2 guests")
        if outcome.state == "requires_action":
            calls = ", ".join(f"{c.name}({c.arguments})" for c in outcome.pending)
            print(f"   ✋ waiting for approval of {calls}", file=out)
        say(out, "the operator pauses the run while it waits (say, for a deploy)")
        agent.pause()
        live = draw(folder, "live-at-pause", combined_diagram(agent), out)
        print(f"   drew the live state: {live.name}", file=out)
        agent.close()


def second_process(folder: Path, model: str | None, out: TextIO) -> None:
    """Everything after the pause, in a new process restored from the store."""
    with SQLiteStore(folder / STORE) as store:
        agent = demo_agent(folder, store, model, out)
        print(
            f"   process {os.getpid()} restored {agent.run_id!r} from {folder / STORE}: "
            f"state={agent.state}, turn={agent.turn}, "
            f"pending={[c.name for c in agent.pending]}",
            file=out,
        )
        agent.start()  # claims the run; nothing is re-entered
        outcome = agent.resume()
        if outcome.state == "requires_action":
            say(out, "the user approves; the booking runs, once")
            outcome = agent.resolve_action({c.id: "approve" for c in outcome.pending})
        print(f"   → {outcome.state}: {outcome.reply}", file=out)

        say(out, "turn 3: another approval, but the user cancels instead")
        outcome = agent.submit("And a taxi in Rome, please")
        if outcome.state in ("requires_action", "input_required"):
            agent.cancel()

        say(out, "turn 4: a plain answer")
        agent.submit("Thanks!")

        say(out, "shutdown: the run is closed for good")
        agent.shutdown()


def resume_in_new_process(folder: Path, model: str | None, out: TextIO) -> None:
    """Run `second_process` in a fresh Python process, its transcript joining ours."""
    command = [sys.executable, "-m", "agentfsm._demo", "resume", str(folder)]
    if model is not None:
        command += ["--model", model]
    out.flush()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    out.write(done.stdout)
    if done.returncode != 0:
        raise RuntimeError(f"the resuming process failed:\n{done.stderr.strip()}")


def fresh_folder(base: Path | None) -> Path:
    """A new folder for the demo's store and diagrams."""
    parent = base if base is not None else Path.cwd()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    folder = parent / f"agentfsm-demo-{stamp}"
    n = 1
    while folder.exists():
        n += 1
        folder = parent / f"agentfsm-demo-{stamp}-{n}"
    folder.mkdir(parents=True)
    return folder


def run_story(out: TextIO, folder: Path, model: str | None = None) -> Path:
    """Run the whole demo into ``folder`` (which should be empty); return the folder."""
    print(f"agentfsm demo — run {RUN_ID!r}, store {folder / STORE}", file=out)
    print(f"   process {os.getpid()} starts the run", file=out)
    if model is not None:
        print(f"model: {model}", file=out)
    first_process(folder, model, out)
    say(out, "a second process takes the paused run up from the store")
    resume_in_new_process(folder, model, out)

    with SQLiteStore(folder / STORE) as store:
        events = store.events(RUN_ID)
        stored = store.load(RUN_ID)
    assert stored is not None
    say(out, "diagrams")
    drawn = [
        draw(folder, "run-lifecycle", run_diagram(), out),
        draw(folder, "turn-loop", loop_diagram(), out),
        draw(folder, "combined", combined_diagram(), out),
        next(folder.glob("live-at-pause.*")),
        draw(folder, "run-path", combined_diagram(stored, events), out),
    ]
    for path in drawn:
        if path.exists():
            print(f"   {path.name}", file=out)
    visited = sorted({e.target for e in events if e.machine == MachineName.RUN} | {"created"})
    transitions = sum(e.machine != MachineName.CONVERSATION for e in events)
    print(
        f"\nrun {RUN_ID!r}: {stored.state} after {stored.turn} turns, {transitions} "
        f"transitions, {len(stored.messages)} messages; states visited: {', '.join(visited)}",
        file=out,
    )
    print(f"diagrams and the store are in {folder}", file=out)
    where = shlex.quote(str(folder / STORE))
    print(f"watch it live: {shlex.quote(command_name())} ui --store {where}", file=out)
    return folder


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agentfsm._demo resume FOLDER [--model SPEC]``: the second process."""
    args = list(sys.argv[1:] if argv is None else argv)
    model = None
    if "--model" in args:
        at = args.index("--model")
        model = args[at + 1]
        del args[at : at + 2]
    if len(args) != 2 or args[0] != "resume":
        print("usage: python -m agentfsm._demo resume FOLDER [--model SPEC]", file=sys.stderr)
        return 2
    second_process(Path(args[1]), model, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())


def command_name() -> str:
    """How to type the ``agentfsm`` command here: its name, or its path when PATH has no such.

    ``make demo`` runs ``.venv/bin/agentfsm`` without activating the venv, so a printed
    ``agentfsm ui …`` would not be found; the path it was started by is.
    """
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is None or script.name != "agentfsm":
        return "agentfsm"
    found = shutil.which("agentfsm")
    if found is not None and Path(found).resolve() == script.resolve():
        return "agentfsm"
    return str(script)
