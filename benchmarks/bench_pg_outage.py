"""Seconds a `PostgresStore` call takes to fail while the server is down, and to succeed after.

The server (`TemporaryPostgres`, its own) is stopped as a crash would stop it
(``pg_ctl stop -m immediate``) for ``OUTAGE`` seconds, then started again on the same
socket. Measured with the store's defaults: a ``load`` and a ``save`` during the outage, an
``Agent.submit`` during it, the first ``load`` once the server is back, and how long after
the first save that follows the restart a ``watch`` begun before the crash yields its event.

Run: ``.venv/bin/python benchmarks/bench_pg_outage.py [OUTAGE]`` (90 s by default, as the
issue's report; any length shows the same).
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentfsm import Agent, ScriptedModel
from agentfsm.stores.postgres import PostgresStore
from agentfsm.testing.postgres_server import TemporaryPostgres
from agentfsm.testing.store_conformance import make_events, make_snapshot


def timed(call: Callable[[], object]) -> str:
    """How long ``call`` took, and how it ended."""
    start = time.monotonic()
    try:
        call()
    except Exception as exc:
        return f"{time.monotonic() - start:6.2f} s, {type(exc).__name__}"
    return f"{time.monotonic() - start:6.2f} s, ok"


def main(outage: float) -> None:
    """Print the measurements of one outage of ``outage`` seconds."""
    with TemporaryPostgres() as server, PostgresStore(server.new_database()) as store:
        store.save(make_snapshot("r1", 2, 1), make_events("r1", 1, 2), expected_version=None)
        agent = Agent(ScriptedModel().text("Hi.").text("Again."), store=store, run_id="a")
        agent.start()
        agent.submit("Hello")
        seen: queue.Queue[float] = queue.Queue()

        def watch() -> None:
            for event in store.watch("r1", after_seq=2, timeout=outage + 60):
                seen.put(time.monotonic())
                if event.seq == 3:
                    return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        time.sleep(0.5)
        server.crash()
        crashed = time.monotonic()
        print(f"load during the outage     {timed(lambda: store.load('r1'))}")
        save = make_snapshot("r1", 3, 2), make_events("r1", 3, 1)
        print(f"save during the outage     {timed(lambda: store.save(*save, expected_version=1))}")
        print(f"Agent.submit during it     {timed(lambda: agent.submit('Again'))}")
        time.sleep(max(0.0, outage - (time.monotonic() - crashed)))
        server.restart()
        print(f"first load after restart   {timed(lambda: store.load('r1'))}")
        saved = time.monotonic()
        store.save(*save, expected_version=1)
        try:
            print(f"watch yields the next event {seen.get(timeout=30) - saved:5.2f} s after it")
        except queue.Empty:
            print("watch yields nothing within 30 s (it died)")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 90.0)
