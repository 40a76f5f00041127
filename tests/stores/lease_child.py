"""The first process of the lease test: drives a run on a SQLite file until it is killed.

Its tool body says it is working (a marker file), then blocks for good: the run stays busy,
its lease renewed by the renewing thread, until the test kills the process with SIGKILL.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from agentfsm import Agent, ScriptedModel, SQLiteStore, tool
from agentfsm.stores import LeasePolicy


def drive(path: Path, run_id: str, marker: Path) -> None:
    @tool
    def book(city: str) -> str:
        """Book a hotel (not idempotent)."""
        marker.write_text("working")
        while True:  # until killed
            time.sleep(0.05)

    with SQLiteStore(path) as store:
        the_agent = Agent(
            ScriptedModel().tool_call("book", city="Rome").text("booked"),
            [book],
            store=store,
            run_id=run_id,
            lease=LeasePolicy(duration=2.0, renew_every=0.1, owner="first-process"),
        )
        the_agent.start()
        the_agent.submit("Book Rome")
    print("not killed", file=sys.stderr)
    sys.exit(3)


if __name__ == "__main__":
    drive(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))
