# file: examples/pause_resume.py
"""Pause a run in one process and resume it in another, through a SQLite file.

python examples/pause_resume.py start runs.db    # runs until the approval, pauses
python examples/pause_resume.py resume runs.db   # another process: resumes, approves
"""

import sys

from agentfsm import Agent, SQLiteStore, ToolPolicy, tool

RUN_ID = "trip-42"


@tool(policy=ToolPolicy.REQUIRE_APPROVAL)
def book_hotel(city: str) -> str:
    """Book a hotel (needs the user's approval)."""
    return f"booked a hotel in {city}"


def travel_agent(store: SQLiteStore) -> Agent:
    """The same model and tools in every process; the run itself comes from the store."""
    # "scripted:demo" answers from the conversation, so it needs no network and no key.
    return Agent("scripted:demo", [book_hotel], store=store, run_id=RUN_ID)


def start(path: str) -> None:
    """Run until the approval, then pause."""
    with SQLiteStore(path) as store:
        agent = travel_agent(store)
        outcome = agent.start("Book me a hotel in Lisbon")  # start and submit, one save
        print(outcome.state, [call.name for call in outcome.pending])  # requires_action
        agent.pause()  # e.g. the service is being redeployed
        print(agent.state)  # paused


def resume(path: str) -> None:
    """Take the paused run up, resume it and approve."""
    with SQLiteStore(path) as store:
        agent = travel_agent(store)  # restored: paused, the approval still pending
        agent.start()  # takes the run up (and claims it: a second resumer would conflict)
        waiting = agent.resume()  # back to requires_action
        done = agent.resolve_action({call.id: "approve" for call in waiting.pending})
        print(done.state, done.reply)


if __name__ == "__main__":
    {"start": start, "resume": resume}[sys.argv[1]](sys.argv[2])
