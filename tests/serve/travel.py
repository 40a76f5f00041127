"""The demo's travel agent, as a factory for the live view and as a process driving a run.

``python -m tests.serve.travel STORE RUN_ID TEXT`` (STORE: a path or any store URL): starts
the run and submits TEXT (the model asks how many guests: input_required), prints the
state, then answers with the next line of stdin (the model books a hotel, which needs
approval: requires_action) and prints the state it reached.
"""

from __future__ import annotations

import sys

from agentfsm import Agent, RunStore, open_store
from agentfsm._demo import SYSTEM_PROMPT, TOOLS, demo_model


def travel_agent(run_id: str, store: RunStore) -> Agent:
    """The demo's agent for ``run_id`` in ``store`` (restored when the store has it)."""
    return Agent(
        demo_model(None),
        TOOLS,
        system_prompt=SYSTEM_PROMPT,
        run_id=run_id,
        store=store,
        max_iterations=4,
        ask_user=True,  # the demo's model asks how many guests
    )


def main(store_path: str, run_id: str, text: str) -> None:
    with open_store(store_path) as store:
        agent = travel_agent(run_id, store)
        agent.start()
        print(agent.submit(text).state, flush=True)
        answer = sys.stdin.readline().strip()
        print(agent.provide_input(answer).state, flush=True)
        agent.close()


if __name__ == "__main__":
    main(*sys.argv[1:4])
