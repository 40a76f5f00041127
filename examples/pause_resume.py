# file: examples/pause_resume.py
"""Pause a run in one process and resume it in another, through a SQLite file.

python examples/pause_resume.py start runs.db    # runs until the approval, pauses
python examples/pause_resume.py resume runs.db   # another process: resumes, approves
"""

import sys

from agentfsm import Agent, SQLiteStore, ToolPolicy, tool
from agentfsm.errors import IllegalTransitionError, RunNotFoundError, SnapshotConflictError

RUN_ID = "trip-42"


@tool(policy=ToolPolicy.REQUIRE_APPROVAL)
def book_hotel(city: str) -> str:
    """Book a hotel (needs the user's approval)."""
    return f"booked a hotel in {city}"


# "scripted:demo" answers from the conversation, so it needs no network and no key. The same
# model and tools in every process; the run itself comes from the store.
MODEL, TOOLS = "scripted:demo", [book_hotel]


def start(path: str) -> int:
    """Run until the approval, then pause."""
    with SQLiteStore(path) as store:
        agent = Agent(MODEL, TOOLS, store=store, run_id=RUN_ID)
        outcome = agent.start("Book me a hotel in Lisbon")  # start and submit, one save
        print(outcome.state, [call.name for call in outcome.pending])  # requires_action
        agent.pause()  # e.g. the service is being redeployed
        print(agent.state)  # paused
    return 0


def resume(path: str) -> int:
    """Take the paused run up, resume it and approve; 1 if that is not for this process."""
    with SQLiteStore(path) as store:
        try:
            # restore: the stored run, taken up (and claimed: a second resumer conflicts)
            agent = Agent.restore(MODEL, TOOLS, store=store, run_id=RUN_ID)
            waiting = agent.resume()  # back to requires_action
            done = agent.resolve_action({call.id: "approve" for call in waiting.pending})
        except RunNotFoundError:
            print(f"no run {RUN_ID!r} in {path}: run 'start' first", file=sys.stderr)
            return 1
        except SnapshotConflictError:
            # Another process took the run up or decided first; nothing was done here.
            now = store.load(RUN_ID)
            state = now.state if now is not None else "gone"
            print(f"another process got to run {RUN_ID!r} first; it is {state}", file=sys.stderr)
            return 1
        except IllegalTransitionError as error:  # e.g. resumed and finished already
            print(error, file=sys.stderr)
            return 1
        print(done.state, done.reply)
    return 0


if __name__ == "__main__":
    sys.exit({"start": start, "resume": resume}[sys.argv[1]](sys.argv[2]))
