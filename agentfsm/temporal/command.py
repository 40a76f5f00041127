"""``agentfsm worker``: run a Temporal worker for an agent until interrupted."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import TextIO

from agentfsm.temporal.payloads import DEFAULT_AGENT


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


def worker_command(args: argparse.Namespace, err: TextIO) -> int:
    """Run the worker ``args`` describe; returns the exit code (0 when interrupted)."""
    from agentfsm.temporal.worker import run_worker  # (temporalio: only when a worker runs)

    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        asyncio.run(
            run_worker(
                args.temporal,
                task_queue=args.task_queue,
                agent=args.agent,
                store=args.store,
                namespace=args.namespace,
                name=args.name,
            )
        )
    except KeyboardInterrupt:
        return 0
    except (ValueError, TypeError, ImportError, RuntimeError) as error:
        print(f"agentfsm worker: error: {error}", file=err)
        return 1
    return 0  # pragma: no cover - the worker runs until interrupted
