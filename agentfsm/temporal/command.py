"""``agentfsm worker``: run a Temporal worker for an agent until SIGTERM or SIGINT.

It says what it serves where once it polls its task queue. The first SIGTERM or SIGINT
(Ctrl-C) stops it taking tasks; the activities in flight get ``--grace`` seconds to finish
and are then cut (a cut tool call ends "outcome unknown" for the model, and the run goes
on on another worker); then it exits 0, with no traceback. A second signal exits at once.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import threading
from collections.abc import Callable, Coroutine
from datetime import timedelta
from typing import TextIO

from agentfsm import _checks as checks
from agentfsm.temporal.payloads import DEFAULT_AGENT, DEFAULT_GRACE


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return int(text)


def add_worker_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``worker`` subcommand to the command line."""
    worker = commands.add_parser(
        "worker",
        help="run a Temporal worker for an agent's runs (needs the temporal extra)",
    )
    worker.add_argument(
        "--temporal", required=True, metavar="HOST:PORT", help="the Temporal frontend"
    )
    worker.add_argument("--task-queue", required=True, metavar="QUEUE")
    worker.add_argument(
        "--agent",
        required=True,
        metavar="MODULE:FACTORY",
        help="a function () -> Agent; the current directory is importable",
    )
    worker.add_argument(
        "--store",
        required=True,
        metavar="STORE",
        help="where the runs are stored: a SQLite file, sqlite:///PATH or postgresql://…",
    )
    worker.add_argument("--namespace", default="default", help="default: default")
    worker.add_argument(
        "--name", default=DEFAULT_AGENT, help=f"the agent's name (default: {DEFAULT_AGENT})"
    )
    worker.add_argument(
        "--grace",
        type=checks.seconds_option,
        default=DEFAULT_GRACE,
        metavar="SECONDS",
        help="on SIGTERM or Ctrl-C, how long the activities in flight get to finish before "
        f"they are cut (default: {DEFAULT_GRACE:g})",
    )
    worker.add_argument(
        "--max-cached-workflows",
        type=_count,
        default=1000,
        metavar="N",
        help="how many runs' workflows stay in memory between their tasks (default: 1000)",
    )
    worker.add_argument(
        "--sticky-queue-timeout",
        type=checks.seconds_option,
        default=10.0,
        metavar="SECONDS",
        help="how long a run's next task waits for this worker before any worker of the "
        "queue may take it (default: 10)",
    )


def _on_signals(stop: asyncio.Event, err: TextIO) -> None:
    """SIGTERM and SIGINT set ``stop``; a second one exits at once."""
    loop = asyncio.get_running_loop()

    def handle(sig: signal.Signals) -> None:
        if stop.is_set():
            print(f"agentfsm worker: {sig.name} again: exiting now", file=err, flush=True)
            os._exit(1)
        print(f"agentfsm worker: {sig.name}: stopping…", file=err, flush=True)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, handle, sig)


async def _work(args: argparse.Namespace, ready: Callable[[], None], err: TextIO) -> None:
    from agentfsm.temporal.worker import run_worker  # (temporalio: only when a worker runs)

    stop = asyncio.Event()
    _on_signals(stop, err)
    await run_worker(
        args.temporal,
        task_queue=args.task_queue,
        agent=args.agent,
        store=args.store,
        namespace=args.namespace,
        name=args.name,
        grace=args.grace,
        until=stop.wait(),
        on_ready=ready,
        max_cached_workflows=args.max_cached_workflows,
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=args.sticky_queue_timeout),
    )


def worker_command(args: argparse.Namespace, err: TextIO, out: TextIO | None = None) -> int:
    """Run the worker ``args`` describe; returns the exit code (0 once stopped)."""
    out = out if out is not None else sys.stdout
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())

    def ready() -> None:
        print(
            f"agentfsm worker: running agent {args.name!r} ({args.agent}) on task queue "
            f"{args.task_queue!r} of {args.temporal} (namespace {args.namespace!r}); runs "
            "stored in the store given; Ctrl-C or SIGTERM stops it",
            file=out,
            flush=True,
        )

    try:
        _run(_work(args, ready, err))
    except KeyboardInterrupt:  # (before the handlers were installed)
        return 0
    except (ValueError, TypeError, ImportError, RuntimeError) as error:
        print(f"agentfsm worker: error: {error}", file=err)
        return 1
    print("agentfsm worker: stopped", file=out, flush=True)
    _leave_stuck_threads(err)
    return 0


def _run(main: Coroutine[object, object, None]) -> None:
    """``asyncio.run(main)``, but without waiting for the loop's threads at the end.

    `asyncio.run` joins its default executor's threads, where a synchronous tool body cut
    at shutdown may still be running; `_leave_stuck_threads` deals with those.
    """
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(main)
    finally:
        left = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in left:
            task.cancel()
        if left:
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()  # (its executor shut down without waiting)


def _leave_stuck_threads(err: TextIO) -> None:
    """Exit now if a tool body cut at shutdown still runs in a thread.

    A synchronous body cannot be interrupted: Python would wait for it at exit (a 2-minute
    body, 2 minutes). Its call already ended "outcome unknown"; the process exits 0.
    """
    stuck = [
        thread
        for thread in threading.enumerate()
        if thread is not threading.main_thread() and thread.is_alive() and not thread.daemon
    ]
    if stuck:
        print(
            f"agentfsm worker: left {len(stuck)} tool bod{'y' if len(stuck) == 1 else 'ies'} "
            "still running in threads (cut at shutdown: their calls ended 'outcome unknown')",
            file=err,
            flush=True,
        )
        sys.stdout.flush()
        os._exit(0)
