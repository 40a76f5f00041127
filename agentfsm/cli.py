"""The ``agentfsm`` command line: ``agentfsm demo``, ``table``, ``verify`` and ``diagram``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from agentfsm._demo import run_story
from agentfsm.diagrams import FORMATS, View, markdown_table, save_diagram
from agentfsm.errors import DiagramRenderError
from agentfsm.states import TABLES, MachineName
from agentfsm.verify.command import add_arguments, run_verify

_VIEWS: dict[str, View] = {"run": "run", "loop": "loop", "combined": "combined"}


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
    diagram = commands.add_parser(
        "diagram",
        help="draw the machines; the output file's suffix chooses the format",
        description=f"Draw the machines to a file; its suffix chooses the format: "
        f"{', '.join(FORMATS)} (.svg and .png need Graphviz's 'dot').",
    )
    diagram.add_argument("view", nargs="?", default="combined", choices=list(_VIEWS))
    diagram.add_argument("-o", "--output", required=True, metavar="FILE", help="file to write")
    return parser


def _diagram(view: str, output: str) -> int:
    try:
        written = save_diagram(output, _VIEWS[view])
    except (DiagramRenderError, OSError) as error:
        print(f"agentfsm diagram: error: {error}", file=sys.stderr)
        return 1
    print(f"wrote {written}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    args = _parser().parse_args(argv)
    if args.command == "verify":
        return run_verify(args, sys.stdout)
    if args.command == "diagram":
        return _diagram(args.view, args.output)
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
