"""The ``agentfsm`` command line.

``demo``, ``table``, ``verify``, ``diagram`` (of the machines, or of a stored run's path),
``runs`` (the runs of a store) and ``inspect`` (where one stored run is).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from agentfsm._demo import fresh_folder, run_story
from agentfsm._runs_cli import (
    DEFAULT_EVENTS,
    inspect_command,
    run_diagram_command,
    runs_command,
)
from agentfsm.diagrams import FORMATS, View, markdown_table, save_diagram
from agentfsm.errors import AgentFSMError, DiagramRenderError
from agentfsm.states import TABLES, MachineName
from agentfsm.stores.sqlite import DEFAULT_PATH
from agentfsm.verify.command import add_arguments, run_verify

_VIEWS: dict[str, View] = {"run": "run", "loop": "loop", "combined": "combined"}
_STORE_HELP = (
    "the run store to read: a SQLite file, sqlite:///PATH or postgresql://… "
    f"(default: {DEFAULT_PATH}); it is never created"
)


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value


def _add_store_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    runs = commands.add_parser("runs", help="list the runs of a store")
    runs.add_argument("--store", metavar="STORE", help=_STORE_HELP)
    inspect = commands.add_parser(
        "inspect",
        help="show where a stored run is: states, turn, pending calls, last events",
    )
    inspect.add_argument("run_id", metavar="RUN_ID")
    inspect.add_argument("--store", metavar="STORE", help=_STORE_HELP)
    inspect.add_argument(
        "--events",
        type=_non_negative,
        default=DEFAULT_EVENTS,
        metavar="N",
        help=f"how many of the last events to list (default: {DEFAULT_EVENTS})",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentfsm",
        description="Demo, verify and draw agentfsm's lifecycle machines; list and inspect "
        "the runs of a store.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="run one agent through every state, pausing in one process and resuming in "
        "another; print the transcript and write the diagrams",
    )
    demo.add_argument(
        "--dir",
        metavar="DIR",
        help="where to make the demo's fresh folder (store and SVGs); default: here",
    )
    demo.add_argument(
        "--model",
        metavar="SPEC",
        help="a real model instead of the scripted one, e.g. openai:gpt-4o-mini (it needs "
        "OPENAI_API_KEY; OPENAI_BASE_URL chooses an OpenAI-compatible server)",
    )
    table = commands.add_parser("table", help="print a machine's transitions as Markdown")
    table.add_argument("machine", choices=[name.value for name in TABLES])
    add_arguments(
        commands.add_parser(
            "verify", help="explore both machines exhaustively and check their invariants"
        )
    )
    diagram = commands.add_parser(
        "diagram",
        help="draw the machines; the output file's suffix chooses the format",
        description=f"Draw the machines to a file; its suffix chooses the format: "
        f"{', '.join(FORMATS)} (.svg and .png need Graphviz's 'dot'). With --run, draw "
        "a stored run: its current states highlighted, the edges its event log took "
        "weighted by count; without -o its DOT goes to stdout.",
    )
    diagram.add_argument("view", nargs="?", default="combined", choices=list(_VIEWS))
    diagram.add_argument(
        "-o", "--output", metavar="FILE", help="file to write (required without --run)"
    )
    diagram.add_argument("--run", metavar="RUN_ID", help="draw this stored run's path")
    diagram.add_argument("--store", metavar="STORE", help=_STORE_HELP + " (with --run)")
    _add_store_commands(commands)
    return parser


def _diagram(view: str, output: str) -> int:
    try:
        written = save_diagram(output, _VIEWS[view])
    except (DiagramRenderError, OSError) as error:
        print(f"agentfsm diagram: error: {error}", file=sys.stderr)
        return 1
    print(f"wrote {written}")
    return 0


def _diagram_command(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.run is not None:
        return run_diagram_command(
            args.run, args.store, _VIEWS[args.view], args.output, sys.stdout
        )
    if args.store is not None:
        parser.error("diagram: --store needs --run RUN_ID")
    if args.output is None:
        parser.error("diagram: the following arguments are required: -o/--output")
    return _diagram(args.view, args.output)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader went away (``agentfsm table run | head``): stop quietly, as cat does,
        # and keep Python from complaining again when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _main(argv: Sequence[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "verify":
        return run_verify(args, sys.stdout)
    if args.command == "diagram":
        return _diagram_command(parser, args)
    if args.command == "runs":
        return runs_command(args.store, sys.stdout)
    if args.command == "inspect":
        return inspect_command(args.run_id, args.store, args.events, sys.stdout)
    if args.command == "table":
        print(markdown_table(TABLES[MachineName(args.machine)]))
        return 0
    return _demo_command(args.dir, args.model)


def _demo_command(base: str | None, model: str | None) -> int:
    if model is None and os.environ.get("OPENAI_API_KEY"):
        print("(OPENAI_API_KEY is set: add --model openai:gpt-4o-mini to use a real model)\n")
    try:
        folder = fresh_folder(Path(base) if base is not None else None)
        run_story(sys.stdout, folder, model)
    except (AgentFSMError, OSError, RuntimeError) as error:
        print(f"agentfsm demo: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
