"""``agentfsm verify``: the verifier on the command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from agentfsm.fsm.lifecycle import RunLifecycle
from agentfsm.fsm.turnloop import TurnLoop
from agentfsm.verify.verifier import load_class, verify


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``verify`` subcommand's options on its parser."""
    parser.add_argument(
        "--run",
        metavar="MODULE:CLASS",
        help="the RunLifecycle class to verify (default: agentfsm's own)",
    )
    parser.add_argument(
        "--loop",
        metavar="MODULE:CLASS",
        help="the TurnLoop class to verify (default: agentfsm's own)",
    )
    parser.add_argument(
        "--max-iterations",
        type=int,
        default=3,
        metavar="N",
        help="explore runs with every max_iterations from 1 to N (default: 3)",
    )
    parser.add_argument(
        "--counterexample-dot",
        type=Path,
        metavar="FILE",
        help="write the first counterexample as Graphviz DOT to FILE (and an SVG beside it when "
        "the dot program is installed); further ones to FILE's name with the property",
    )


def run_verify(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``agentfsm verify`` with parsed ``args``; returns the exit code.

    Returns:
        0 when every property holds, 1 when one fails, 2 when the options are wrong (a
        class that cannot be loaded, a bound below 1); those errors go to stderr.
    """
    try:
        run = load_class(args.run) if args.run else RunLifecycle
        loop = load_class(args.loop) if args.loop else TurnLoop
    except (ImportError, ValueError) as error:
        print(f"agentfsm verify: {error}", file=sys.stderr)
        return 2
    if args.max_iterations < 1:
        print("agentfsm verify: --max-iterations must be at least 1", file=sys.stderr)
        return 2
    report = verify(run, loop, max_iterations=args.max_iterations)
    print(report, file=out)
    if args.counterexample_dot is not None:
        written = report.write_dot(args.counterexample_dot)
        for path in written:
            print(f"counterexample diagram written to {path}", file=out)
        if not written:
            print(f"no counterexample: nothing written to {args.counterexample_dot}", file=out)
    return 0 if report.ok else 1
