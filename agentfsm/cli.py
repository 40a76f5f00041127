"""The ``agentfsm`` command line: ``agentfsm demo``, ``table`` and ``verify``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from agentfsm._demo import markdown_table, run_story
from agentfsm.states import TABLES, MachineName
from agentfsm.verify.command import add_arguments, run_verify


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentfsm", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("demo", help="walk one run through its lifecycle and print it")
    table = commands.add_parser("table", help="print a machine's transitions as Markdown")
    table.add_argument("machine", choices=[name.value for name in MachineName])
    add_arguments(
        commands.add_parser(
            "verify", help="explore both machines exhaustively and check their invariants"
        )
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    args = _parser().parse_args(argv)
    if args.command == "verify":
        return run_verify(args, sys.stdout)
    if args.command == "table":
        print(markdown_table(TABLES[MachineName(args.machine)]))
        return 0
    print("agentfsm demo: one run, both machines, every transition as an event\n")
    print("seq  machine event          transition")
    run_story(sys.stdout)
    print("\nRunLifecycle transitions (lifecycle.md §1):\n")
    print(markdown_table(TABLES[MachineName.RUN]))
    print("\nTurnLoop transitions (lifecycle.md §2):\n")
    print(markdown_table(TABLES[MachineName.LOOP]))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
