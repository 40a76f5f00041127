"""``agentfsm verify``: the verifier on the command line.

Exit codes: 0 every property holds (warnings aside, unless ``--strict``); 1 a property
failed, or with ``--strict`` a warning property found something; 2 the options are wrong
(a class that cannot be loaded or compiled, a bound below 1); 3 the verifier itself
crashed (a bug in agentfsm: the traceback goes to stderr). A guard or effect that raises
is not a crash: it fails the ``exceptions`` property, with its path.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from agentfsm.errors import MachineDefinitionError
from agentfsm.fsm.lifecycle import RunLifecycle
from agentfsm.fsm.turnloop import TurnLoop
from agentfsm.verify.verifier import load_class, verify

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CRASHED = 0, 1, 2, 3
"""The exit codes of ``agentfsm verify``."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``verify`` subcommand's options on its parser."""
    parser.add_argument(
        "--run",
        metavar="MODULE:CLASS",
        help="the RunLifecycle class to verify (default: agentfsm's own); the current "
        "directory is importable",
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
        "--strict",
        action="store_true",
        help="fail (exit 1) when a warning property (varied, agent-coverage) finds something",
    )
    parser.add_argument(
        "--fail-fast",
        action="store_true",
        help="stop exploring at the first failure of a property checked step by step; "
        "the properties not decided by then are unknown",
    )
    parser.add_argument(
        "--counterexample-dot",
        type=Path,
        metavar="FILE",
        help="write the first counterexample as Graphviz DOT to FILE (and an SVG beside it when "
        "the dot program is installed); further ones to FILE's name with the property",
    )


@contextmanager
def _current_directory_importable() -> Iterator[None]:
    """Put the current directory first on ``sys.path`` (as ``python -m`` does), then back."""
    here = os.getcwd()
    added = here not in sys.path
    if added:
        sys.path.insert(0, here)
    try:
        yield
    finally:
        if added and here in sys.path:
            sys.path.remove(here)


def run_verify(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``agentfsm verify`` with parsed ``args``; returns the exit code (`EXIT_OK` …)."""
    try:
        with _current_directory_importable():
            run = load_class(args.run) if args.run else RunLifecycle
            loop = load_class(args.loop) if args.loop else TurnLoop
    except (ImportError, ValueError) as error:
        print(f"agentfsm verify: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.max_iterations < 1:
        print("agentfsm verify: --max-iterations must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    try:
        report = verify(
            run,
            loop,
            max_iterations=args.max_iterations,
            strict=args.strict,
            fail_fast=args.fail_fast,
        )
    except MachineDefinitionError as error:
        print(f"agentfsm verify: cannot verify these classes: {error}", file=sys.stderr)
        return EXIT_USAGE
    except Exception:  # a bug of the verifier's own: say so apart from a failed property
        print("agentfsm verify: the verifier crashed (a bug in agentfsm):", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        return EXIT_CRASHED
    print(report, file=out)
    if args.counterexample_dot is not None:
        written = report.write_dot(args.counterexample_dot)
        for path in written:
            print(f"counterexample diagram written to {path}", file=out)
        if not written:
            print(f"no counterexample: nothing written to {args.counterexample_dot}", file=out)
    return EXIT_OK if report.ok else EXIT_FAILED
